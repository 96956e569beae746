package pebble

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
)

// BenchmarkLockValues measures what a storage node does for a pessimistic
// lock that returns its key's value (KvPessimisticLock with return_values,
// as the SQL node's UPDATE asks for it), on a Pebble engine whose
// memtable holds 10000 keys of 8 versions each: the lock's checks and
// the value read in one pass (one-pass), or the checks, then a Get of the
// value (lock-then-get, how storenode read it before). The lock's batch is
// not applied, so every op finds the same state. keys=1 is the SQL node's
// lock of one row; keys=4 a lock of a few.
//
//	go test -run '^$' -bench LockValues -count 10 ./store/pebble/
func BenchmarkLockValues(b *testing.B) {
	const keys = 10000
	e, key, ts := benchVersions(b, keys, 8)
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
