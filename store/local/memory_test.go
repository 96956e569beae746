package local

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// TestLatestCacheBudget checks that Options.LatestCacheSize bounds the
// latest-version cache under load: writers keep giving the rows of 64
// chunks new versions while readers scan them, so that chunks turn hot
// and are loaded, and the cache must evict to stay within its budget
// (here room for about three of the chunks). A full cache admits only a
// chunk hotter than the one it would evict, so after a second of reads
// spread over 60 chunks the last 4, never read before, take all the
// reads and writes: they must go in, in place of the others.
func TestLatestCacheBudget(t *testing.T) {
	const (
		budget   = 256 << 10
		chunks   = 64
		valueLen = 200
	)
	s, err := Open(t.TempDir(), Options{NoSync: true, LatestCacheSize: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Row-like keys: 'r', the chunk, the row; a chunk is its 256 rows.
	key := func(c, r int) []byte { return []byte{'r', byte(c), byte(r)} }
	value := make([]byte, valueLen)
	for c := range chunks {
		txn, _ := s.Begin(kv.TxnOptions{})
		for r := range 256 {
			txn.Set(key(c, r), value)
		}
		if err := txn.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	var (
		hot      atomic.Bool // reads and writes go to the last 4 chunks only
		stop     atomic.Bool
		maxBytes atomic.Int64
		wg       sync.WaitGroup
		failed   atomic.Value
	)
	fail := func(err error) { failed.CompareAndSwap(nil, err); stop.Store(true) }
	pick := func(rng *rand.Rand) int {
		if hot.Load() {
			return chunks - 4 + rng.IntN(4)
		}
		return rng.IntN(chunks - 4)
	}
	for w := range 4 {
		wg.Add(1)
		go func() { // writer: new versions of 16 rows of a random chunk
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for !stop.Load() {
				txn, err := s.Begin(kv.TxnOptions{})
				if err != nil {
					fail(err)
					return
				}
				c, r := pick(rng), rng.IntN(240)
				for i := range 16 {
					txn.Set(key(c, r+i), value)
				}
				if err := txn.Commit(context.Background()); err != nil && !errors.Is(err, kv.ErrWriteConflict) {
					fail(err)
					return
				}
			}
		}()
		wg.Add(1)
		go func() { // reader: scans of 16 rows of a random chunk
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for !stop.Load() {
				ts, err := s.CurrentTS()
				if err != nil {
					fail(err)
					return
				}
				c, r := pick(rng), rng.IntN(240)
				it, err := s.Snapshot(ts).Iter(key(c, r), key(c, r+16))
				if err != nil {
					fail(err)
					return
				}
				for it.Valid() {
					if err := it.Next(); err != nil {
						fail(err)
						break
					}
				}
				it.Close()
			}
		}()
	}
	start := time.Now()
	deadline := start.Add(3 * time.Second)
	for time.Now().Before(deadline) && !stop.Load() {
		if time.Since(start) > time.Second {
			hot.Store(true)
		}
		st := s.LatestCacheStats()
		if st.Bytes > maxBytes.Load() {
			maxBytes.Store(st.Bytes)
		}
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	st := s.LatestCacheStats()
	t.Logf("stats %+v, at most %d bytes", st, maxBytes.Load())
	if st.Loads < 4 || st.Evictions == 0 {
		t.Fatalf("loads %d, evictions %d: the load did not fill the cache past its budget", st.Loads, st.Evictions)
	}
	// Each chunk counts 256 x (2 x 3 + 200 + 96) = 77,312 bytes. A chunk
	// is registered when its load starts and counted against the budget
	// when it ends, so loads in flight (one per reader) may pass it.
	if limit := int64(budget + 4*77_312); maxBytes.Load() > limit {
		t.Errorf("the cache held %d bytes, budget %d (+%d for the loads in flight)", maxBytes.Load(), budget, limit-budget)
	}
	if st.Bytes > budget {
		t.Errorf("the cache holds %d bytes at rest, budget %d", st.Bytes, budget)
	}
}
