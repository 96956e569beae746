package storenode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/basalt-db/basalt/store/tikv"
	"github.com/basalt-db/basalt/testkit"
	"github.com/tikv/client-go/v2/txnkv"
)

// clusterStoreConfig makes stores report to PD often, so that PD
// replicates and balances within seconds.
const clusterStoreConfig = `
[raftstore]
pd-heartbeat-tick-interval = "200ms"
pd-store-heartbeat-tick-interval = "1s"
`

// pdRegion is a region as PD's HTTP API shows it.
type pdRegion struct {
	ID       uint64 `json:"id"`
	StartKey string `json:"start_key"`
	Peers    []struct {
		ID      uint64 `json:"id"`
		StoreID uint64 `json:"store_id"`
		Role    int    `json:"role"`
	} `json:"peers"`
	Leader *struct {
		StoreID uint64 `json:"store_id"`
	} `json:"leader"`
}

func pdRegions(t testing.TB, pd string) []pdRegion {
	t.Helper()
	resp, err := http.Get("http://" + pd + "/pd/api/v1/regions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Regions []pdRegion `json:"regions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Regions
}

// waitReplicated waits until PD sees at least minRegions regions, every
// one with n voters and a leader.
func waitReplicated(t testing.TB, c *testkit.Cluster, n, minRegions int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last []pdRegion
	for time.Now().Before(deadline) {
		last = pdRegions(t, c.PD)
		ok := len(last) >= minRegions
		for _, r := range last {
			voters := 0
			for _, p := range r.Peers {
				if p.Role == 0 {
					voters++
				}
			}
			ok = ok && voters == n && len(r.Peers) == n && r.Leader != nil
		}
		if ok {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("regions not replicated %d ways: %+v\n%s", n, last, c.Logs())
}

func key(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }

// TestClusterTransactions runs client-go's transactions on 1 PD and 3
// storage nodes, all real processes, across regions that split.
func TestClusterTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of processes")
	}
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	c := testkit.StartCluster(t, 3, clusterStoreConfig)
	waitReplicated(t, c, 3, 1)

	cli, err := txnkv.NewClient([]string{c.PD})
	if err != nil {
		t.Fatalf("client-go: %v\n%s", err, c.Logs())
	}
	defer cli.Close()
	ctx := context.Background()

	// Writes in one transaction, read back in another.
	txn, err := cli.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := txn.Set(key(i), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatalf("commit: %v\n%s", err, c.Logs())
	}
	check := func(want map[int]bool) {
		t.Helper()
		txn, err := cli.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			v, err := txn.Get(ctx, key(i))
			switch {
			case want[i] && (err != nil || string(v.Value) != fmt.Sprint(i)):
				t.Fatalf("get %s: %q %v", key(i), v.Value, err)
			case !want[i] && err == nil:
				t.Fatalf("get %s: %q, want not found", key(i), v.Value)
			}
		}
		it, err := txn.Iter(key(0), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for it.Valid() {
			var i int
			fmt.Sscanf(string(it.Key()), "k%04d", &i)
			got = append(got, i)
			if err := it.Next(); err != nil {
				t.Fatal(err)
			}
		}
		it.Close()
		var exp []int
		for i := range 200 {
			if want[i] {
				exp = append(exp, i)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Fatalf("scan: %v, want %v", got, exp)
		}
		// Bounded: client-go sends an unbounded reverse scan to the first region
		// only (it locates the empty end key there).
		rit, err := txn.IterReverse(key(200), nil)
		if err != nil {
			t.Fatal(err)
		}
		var rgot []int
		for rit.Valid() {
			var i int
			fmt.Sscanf(string(rit.Key()), "k%04d", &i)
			rgot = append(rgot, i)
			if err := rit.Next(); err != nil {
				t.Fatal(err)
			}
		}
		rit.Close()
		sort.Sort(sort.Reverse(sort.IntSlice(exp)))
		if fmt.Sprint(rgot) != fmt.Sprint(exp) {
			t.Fatalf("reverse scan: %v, want %v", rgot, exp)
		}
	}
	all := map[int]bool{}
	for i := range 200 {
		all[i] = true
	}
	check(all)

	// Split into regions every 20 keys; PD learns of them, and the data is
	// still all there, on every region's replicas.
	var splitKeys [][]byte
	for i := 20; i < 200; i += 20 {
		splitKeys = append(splitKeys, key(i))
	}
	if _, err := cli.KVStore.SplitRegions(ctx, splitKeys, false, nil); err != nil {
		t.Fatalf("split: %v\n%s", err, c.Logs())
	}
	waitReplicated(t, c, 3, 10)
	check(all)

	// Deletes and writes across regions in one transaction.
	txn, err = cli.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i += 3 {
		if err := txn.Delete(key(i)); err != nil {
			t.Fatal(err)
		}
		delete(all, i)
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatalf("commit: %v\n%s", err, c.Logs())
	}
	check(all)
}

// TestClusterSplitBySize: a region that grows past region-max-size is
// split by its leader's store into parts of about region-split-size, and
// PD learns of the parts; the data reads back whole.
func TestClusterSplitBySize(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of processes")
	}
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	c := testkit.StartCluster(t, 3, clusterStoreConfig+`split-region-check-tick-interval = "200ms"
[coprocessor]
region-split-size = "32KiB"
region-max-size = "48KiB"
`)
	waitReplicated(t, c, 3, 1)
	cli, err := txnkv.NewClient([]string{c.PD})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	const n = 3000 // about 300 KiB of keys and values
	value := make([]byte, 64)
	for start := 0; start < n; start += 500 {
		txn, err := cli.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for i := start; i < start+500; i++ {
			_ = txn.Set(key(i), value)
		}
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitReplicated(t, c, 3, 5)
	txn, err := cli.Begin()
	if err != nil {
		t.Fatal(err)
	}
	it, err := txn.Iter(key(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	got := 0
	for it.Valid() {
		got++
		if err := it.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if got != n {
		t.Fatalf("read %d keys back, want %d", got, n)
	}
	t.Logf("%d regions", len(pdRegions(t, c.PD)))
}
