package tikv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/tikv"
	"github.com/basalt-db/basalt/testkit"
)

// TestStoresUnavailable (BASALT_CHAOS=1: it takes 100 s): with every
// store of the cluster killed, reads and an optimistic commit (an
// autocommit INSERT's) fail with kv.ErrRegionUnavailable or
// kv.ErrStoreTimeout (TiDB's 9005, 9002) once client-go's backoff budgets
// are spent: 20 s of sleeps for a read and 40 s for a prewrite, times the
// backoff weight (TiDB's tidb_backoff_weight, 2 by default, as TiDB's),
// plus the first attempts' time. Measured here: reads 50 s and the commit
// 90 s with weight 2; with weight 1, about half. Two storages on the same
// dead cluster, one of each weight, run at once.
func TestStoresUnavailable(t *testing.T) {
	if os.Getenv("BASALT_CHAOS") == "" {
		t.Skip("a fault test of 100 s: BASALT_CHAOS=1 go test -run TestStoresUnavailable ./store/tikv")
	}
	lvl := "fatal"
	if v := os.Getenv("BASALT_TIKV_LOG"); v != "" {
		lvl = v
	}
	if err := tikv.SetLogLevel(lvl); err != nil {
		t.Fatal(err)
	}
	c := testkit.StartCluster(t, 3, "[raftstore]\npd-heartbeat-tick-interval = \"1s\"\npd-store-heartbeat-tick-interval = \"1s\"\n")
	st, err := tikv.Open(c.PDs)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	light, err := tikv.Open(c.PDs)
	if err != nil {
		t.Fatal(err)
	}
	defer light.Close()
	light.SetBackoffWeight(1)
	ctx := context.Background()
	keys := [][]byte{[]byte("a1"), []byte("b2"), []byte("c3")}
	txn, err := st.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := txn.Set(k, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"store1", "store2", "store3"} {
		c.Kill(s)
	}
	ts, err := st.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	ops := func(st *tikv.Storage) map[string]func(ctx context.Context) error {
		return map[string]func(ctx context.Context) error{
			"Get": func(ctx context.Context) error {
				_, err := st.Snapshot(ts).Get(ctx, keys[0])
				return err
			},
			"BatchGet": func(ctx context.Context) error {
				_, err := st.Snapshot(ts).BatchGet(ctx, keys)
				return err
			},
			"Iter": func(ctx context.Context) error {
				it, err := st.Snapshot(ts).Iter([]byte("a"), []byte("z"))
				if err != nil {
					return err
				}
				defer it.Close()
				for it.Valid() {
					if err := it.Next(); err != nil {
						return err
					}
				}
				return nil
			},
			"Commit": func(ctx context.Context) error {
				txn, err := st.Begin(kv.TxnOptions{Mode: kv.Optimistic, LockWait: time.Second})
				if err != nil {
					return err
				}
				if err := txn.Set([]byte("d4"), []byte("d4")); err != nil {
					return err
				}
				return txn.Commit(ctx)
			},
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for weight, st := range map[int]*tikv.Storage{2: st, 1: light} {
		for name, op := range ops(st) {
			bound := readBound
			if name == "Commit" {
				bound = commitBound
			}
			bound = bound * time.Duration(weight) / 2
			bound += attemptsBound
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
				defer cancel()
				start := time.Now()
				err := op(ctx)
				took := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				t.Logf("weight %d: %s: %v after %v", weight, name, err, took.Round(100*time.Millisecond))
				if !errors.Is(err, kv.ErrRegionUnavailable) && !errors.Is(err, kv.ErrStoreTimeout) || took > bound {
					t.Errorf("weight %d: %s with every store down: %v after %v, want region unavailable or store timeout within %v",
						weight, name, fmt.Sprint(err), took, bound)
				}
			})
		}
	}
	wg.Wait()
}

// How long a read or a commit on regions no store serves may take to
// fail, at weight 2: client-go's budgets of sleeps (scaled by the weight),
// and the time of the first attempts and of the last one.
const (
	readBound     = 40 * time.Second
	commitBound   = 80 * time.Second
	attemptsBound = 15 * time.Second
)
