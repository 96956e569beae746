package storenode

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/txnkv"
)

// TestPessimisticLockInMemoryNoHandoff: a pessimistic lock that the
// region's leader keeps in memory is decided and answered on the goroutine
// that serves the request, not handed to another one to be answered once
// proposed (there is no Raft proposal to pipeline); with in-memory locks
// off, each lock is proposed and handed off as before. Both answer the
// same: the lock returns the row's value and the transaction commits.
func TestPessimisticLockInMemoryNoHandoff(t *testing.T) {
	for _, inMemory := range []bool{true, false} {
		cli, status := startLockTestNode(t, inMemory)
		ctx := context.Background()
		k := []byte("t\x80\x00\x00\x00\x00\x00\x00\x01_r00000001")
		// A first write, retried while the region's first leader comes up.
		for {
			txn, err := cli.Begin()
			if err != nil {
				t.Fatal(err)
			}
			_ = txn.Set(k, []byte("0"))
			if err := txn.Commit(ctx); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		before := nodeStatus(t, status)
		for i := range 5 {
			txn, err := cli.Begin()
			if err != nil {
				t.Fatal(err)
			}
			txn.SetPessimistic(true)
			txn.SetEnable1PC(true)
			lctx := kv.NewLockCtx(txn.StartTS(), kv.LockAlwaysWait, time.Now())
			lctx.InitReturnValues(1)
			if err := txn.LockKeys(ctx, lctx, k); err != nil {
				t.Fatal(err)
			}
			v, ok := lctx.GetValueNotLocked(k)
			if want := []byte{byte('0' + i)}; !ok || string(v) != string(want) {
				t.Fatalf("in-memory=%v: lock %d returned %q (%v), want %q", inMemory, i, v, ok, want)
			}
			if err := txn.Set(k, []byte{byte('0' + i + 1)}); err != nil {
				t.Fatal(err)
			}
			if err := txn.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		st := nodeStatus(t, status)
		writes := st["in_memory_lock_writes"] - before["in_memory_lock_writes"]
		handoffs := st["pessimistic_lock_handoffs"] - before["pessimistic_lock_handoffs"]
		switch {
		case inMemory && (writes < 5 || handoffs != 0):
			t.Errorf("in memory: %v lock writes kept in memory (want >= 5), %v handed off (want 0)", writes, handoffs)
		case !inMemory && (writes != 0 || handoffs < 5):
			t.Errorf("not in memory: %v lock writes kept in memory (want 0), %v handed off (want >= 5)", writes, handoffs)
		}
	}
}

// startLockTestNode starts a one-member PD and one storage node in this
// process, with pessimistic locks in memory or not, and returns a
// client-go client of it and the node's status address.
func startLockTestNode(t *testing.T, inMemory bool) (*txnkv.Client, string) {
	cli, cfg, _ := startNodeWithClient(t, func(c *Config) { c.Txn.InMemory = inMemory })
	return cli, cfg.Server.StatusAddr
}

// nodeStatus is the node's /status, its numbers.
func nodeStatus(t *testing.T, addr string) map[string]float64 {
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for k, v := range raw {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out
}
