package pebble

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
)

// BenchmarkLockValues measures what a storage node does for a pessimistic
// lock that returns its key's value (KvPessimisticLock with return_values,
// as the SQL node's UPDATE asks for it), on a Pebble engine whose
// memtable holds versions keys of versions each: the lock's checks and
// the value read in one pass (one-pass), or the checks, then a Get of the
// value (lock-then-get, how storenode read it before). The lock's batch is
// not applied, so every op finds the same state. keys=1 is the SQL node's
// lock of one row; keys=4 a lock of a few.
//
//	go test -run '^$' -bench LockValues -count 10 ./store/pebble/
func BenchmarkLockValues(b *testing.B) {
	const keys, versions = 10000, 8
	e, err := Open(filepath.Join(b.TempDir(), "db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "t\x80\x00\x00\x00\x00\x00\x00\x01_r%08d", i) }
	ts := uint64(10)
	for v := range versions {
		for start := 0; start < keys; start += 1000 {
			req := &mvcc.PrewriteRequest{StartTS: ts}
			for i := start; i < start+1000; i++ {
				req.Mutations = append(req.Mutations, kv.Mutation{Op: kv.OpPut, Key: key(i),
					Value: fmt.Appendf(nil, "value-of-a-typical-row-%d-............................", v)})
			}
			var batch mvcc.Batch
			if err := mvcc.OnePhaseCommit(e, &batch, req, ts+1); err != nil {
				b.Fatal(err)
			}
			if err := e.Write(&batch, false); err != nil {
				b.Fatal(err)
			}
			ts += 2
		}
	}
	for _, n := range []int{1, 4} {
		for _, mode := range []string{"one-pass", "lock-then-get"} {
			b.Run(fmt.Sprintf("keys=%d/%s", n, mode), func(b *testing.B) {
				b.ReportAllocs()
				var batch mvcc.Batch
				var found int
				ks := make([][]byte, n)
				b.ResetTimer()
				cpu0 := cpuTime()
				for op := 0; op < b.N; op++ {
					for j := range ks {
						ks[j] = key((op*7919 + j*4999) % keys)
					}
					req := &mvcc.PessimisticLockRequest{Keys: ks, Primary: ks[0], StartTS: ts, ForUpdateTS: ts, LockTTL: 3000}
					if mode == "one-pass" {
						req.Value = func(_, v []byte, ok bool) {
							if ok && len(v) > 0 {
								found++
							}
						}
					}
					batch.Reset()
					if _, err := mvcc.AcquirePessimisticLock(e, &batch, req); err != nil {
						b.Fatal(err)
					}
					if mode == "lock-then-get" {
						for _, k := range ks {
							v, err := mvcc.Get(e, k, math.MaxUint64, false)
							if err != nil && !errors.Is(err, kv.ErrNotFound) {
								b.Fatal(err)
							}
							if err == nil && len(v) > 0 {
								found++
							}
						}
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
				if found != b.N*n {
					b.Fatalf("found %d values, want %d", found, b.N*n)
				}
			})
		}
	}
}
