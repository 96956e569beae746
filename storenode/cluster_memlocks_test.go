package storenode_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/testkit"
	tikverr "github.com/tikv/client-go/v2/error"
	tikvkv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/txnkv/transaction"
)

// TestClusterInMemoryLocks runs client-go's pessimistic transactions on 1
// PD and 3 stores (real processes) whose leaders keep pessimistic locks
// in memory (pessimistic-txn.in-memory, the default): a conflicting lock
// waits for them, a leader transfer with locks held keeps them (they are
// proposed through raft first), and a leader killed holding them loses
// them: the transaction then fails to commit, cleanly, and nothing
// committed is lost.
func TestClusterInMemoryLocks(t *testing.T) {
	c, cli := startCluster(t, "", "fatal")
	ctx := context.Background()
	k := func(s string) []byte { return []byte("ml/" + s) }
	commit := func(kvs ...string) {
		txn, err := cli.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(kvs); i += 2 {
			_ = txn.Set(k(kvs[i]), []byte(kvs[i+1]))
		}
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	get := func(key string) string {
		txn, err := cli.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer txn.Rollback()
		v, err := txn.Get(ctx, k(key))
		if tikverr.IsErrNotFound(err) {
			return "<none>"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(v.Value)
	}
	begin := func() *transaction.KVTxn {
		txn, err := cli.Begin()
		if err != nil {
			t.Fatal(err)
		}
		txn.SetPessimistic(true)
		return txn
	}
	lock := func(txn *transaction.KVTxn, wait time.Duration, keys ...string) error {
		ts, err := cli.CurrentTimestamp("global")
		if err != nil {
			return err
		}
		var ks [][]byte
		for _, s := range keys {
			ks = append(ks, k(s))
		}
		return txn.LockKeys(ctx, tikvkv.NewLockCtx(ts, wait.Milliseconds(), time.Now()), ks...)
	}
	commit("a", "0", "b", "0", "c", "0", "d", "0")

	// A lock taken in memory holds another transaction off until the
	// first commits; the second then sees a write conflict at its old
	// for_update_ts, and locks at a new one.
	before := memLockWrites(t, c)
	t1, t2 := begin(), begin()
	if err := lock(t1, time.Second, "a"); err != nil {
		t.Fatal(err)
	}
	if after := memLockWrites(t, c); after == before {
		t.Fatalf("no lock was kept in memory (%d writes before and after)", after)
	}
	waited := make(chan error, 1)
	go func() { waited <- lock(t2, 5*time.Second, "a") }()
	select {
	case err := <-waited:
		t.Fatalf("a second lock on a locked key: %v before the holder committed", err)
	case <-time.After(300 * time.Millisecond):
	}
	_ = t1.Set(k("a"), []byte("1"))
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var wc *tikverr.ErrWriteConflict
	if err := <-waited; !errors.As(err, &wc) {
		t.Fatalf("the waiter, once the holder committed: %v, want a write conflict", err)
	}
	if err := lock(t2, time.Second, "a"); err != nil {
		t.Fatal(err)
	}
	_ = t2.Set(k("a"), []byte("2"))
	if err := t2.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// A leader transfer with locks held: the transaction commits on the
	// new leader.
	t3 := begin()
	if err := lock(t3, time.Second, "b", "c"); err != nil {
		t.Fatal(err)
	}
	region, leader := regionLeader(t, c, k("b"))
	moveLeader(t, c, region, leader)
	_ = t3.Set(k("b"), []byte("3"))
	_ = t3.Set(k("c"), []byte("3"))
	if err := t3.Commit(ctx); err != nil {
		t.Fatalf("commit after the leader moved with its locks: %v\n%s", err, c.Logs())
	}

	// The leader killed holding a lock in memory: the commit fails, and
	// leaves nothing behind; what was committed before is all there.
	t4 := begin()
	if err := lock(t4, time.Second, "d"); err != nil {
		t.Fatal(err)
	}
	_, leader = regionLeader(t, c, k("d"))
	name := storeWithID(t, c, leader)
	c.Kill(name)
	_ = t4.Set(k("d"), []byte("4"))
	err := t4.Commit(ctx)
	if err == nil {
		t.Fatal("a transaction whose in-memory lock died with its leader committed")
	}
	t.Logf("commit after the leader died: %v", err)
	for key, want := range map[string]string{"a": "2", "b": "3", "c": "3", "d": "0"} {
		if got := get(key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	// The key is free again.
	t5 := begin()
	if err := lock(t5, 5*time.Second, "d"); err != nil {
		t.Fatal(err)
	}
	_ = t5.Set(k("d"), []byte("5"))
	if err := t5.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c.StartStore(name)
	waitReplicated(t, c, 3, 1)
	if got := get("d"); got != "5" {
		t.Errorf("d = %s, want 5", got)
	}
}

// statusPage is a store's /status.
type statusPage struct {
	StoreID            uint64 `json:"store_id"`
	InMemoryLockWrites uint64 `json:"in_memory_lock_writes"`
}

func statusOf(t *testing.T, c *testkit.Cluster, name string) (statusPage, bool) {
	resp, err := http.Get("http://" + c.StatusAddr(name) + "/status")
	if err != nil {
		return statusPage{}, false
	}
	defer resp.Body.Close()
	var st statusPage
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st, true
}

// memLockWrites sums the stores' lock writes kept in memory.
func memLockWrites(t *testing.T, c *testkit.Cluster) uint64 {
	var n uint64
	for i := 1; i <= 3; i++ {
		if st, ok := statusOf(t, c, fmt.Sprintf("store%d", i)); ok {
			n += st.InMemoryLockWrites
		}
	}
	return n
}

// storeWithID is the process name of the store with PD's ID id.
func storeWithID(t *testing.T, c *testkit.Cluster, id uint64) string {
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("store%d", i)
		if st, ok := statusOf(t, c, name); ok && st.StoreID == id {
			return name
		}
	}
	t.Fatalf("no store has ID %d", id)
	return ""
}

// regionLeader returns the region holding key (the one with the greatest
// start key at or below it) and its leader's store, as PD sees them.
func regionLeader(t *testing.T, c *testkit.Cluster, key []byte) (pdRegion, uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var found *pdRegion
		rs := pdRegions(t, c.PD)
		enc := hex.EncodeToString(codec.EncodeBytes(nil, key))
		for i := range rs {
			if rs[i].StartKey <= enc && (found == nil || rs[i].StartKey > found.StartKey) {
				found = &rs[i]
			}
		}
		if found != nil && found.Leader != nil {
			return *found, found.Leader.StoreID
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no leader for %q", key)
	return pdRegion{}, 0
}

// moveLeader asks PD to move the region's leader off store from, and
// waits until PD sees it elsewhere.
func moveLeader(t *testing.T, c *testkit.Cluster, r pdRegion, from uint64) {
	t.Helper()
	var to uint64
	for _, p := range r.Peers {
		if p.StoreID != from {
			to = p.StoreID
			break
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, now := range pdRegions(t, c.PD) {
			if now.ID == r.ID && now.Leader != nil && now.Leader.StoreID == to {
				return
			}
		}
		body := fmt.Sprintf(`{"name": "transfer-leader", "region_id": %d, "to_store_id": %d}`, r.ID, to)
		if resp, err := http.Post("http://"+c.PD+"/pd/api/v1/operators", "application/json", strings.NewReader(body)); err == nil {
			resp.Body.Close()
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("the leader of region %d did not move to store %d", r.ID, to)
}
