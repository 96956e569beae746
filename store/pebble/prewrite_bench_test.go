package pebble

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
)

// benchVersions opens a Pebble engine whose memtable holds keys keys of
// versions committed versions each, and returns it with the key of index
// i and a timestamp above every version.
func benchVersions(b *testing.B, keys, versions int) (e *Engine, key func(i int) []byte, ts uint64) {
	e, err := Open(filepath.Join(b.TempDir(), "db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	key = func(i int) []byte { return fmt.Appendf(nil, "t\x80\x00\x00\x00\x00\x00\x00\x01_r%08d", i) }
	ts = 10
	for v := range versions {
		for start := 0; start < keys; start += 1000 {
			req := &mvcc.PrewriteRequest{StartTS: ts}
			for i := start; i < min(start+1000, keys); i++ {
				req.Mutations = append(req.Mutations, kv.Mutation{Op: kv.OpPut, Key: key(i),
					Value: fmt.Appendf(nil, "value-of-a-typical-row-%d-............................", v)})
			}
			commitOnePhase(b, e, req, ts+1)
			ts += 2
		}
	}
	return e, key, ts
}

// BenchmarkPrewrite1PC measures a storage node's 1PC prewrite (try_one_pc)
// of keys a pessimistic transaction did not lock (the index entries of a
// write_only transaction), on a Pebble engine whose memtable holds 10000
// keys of 8 versions each. The batch is not applied, so every op finds
// the same state.
//
//	go test -run '^$' -bench Prewrite1PC -count 10 ./store/pebble/
func BenchmarkPrewrite1PC(b *testing.B) {
	const keys = 10000
	e, key, ts := benchVersions(b, keys, 8)
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var batch mvcc.Batch
			req := &mvcc.PrewriteRequest{StartTS: ts, ForUpdateTS: ts, Pessimistic: make([]bool, n), LockTTL: 3000,
				TryOnePC: true, Mutations: make([]kv.Mutation, n)}
			b.ResetTimer()
			cpu0 := cpuTime()
			for op := 0; op < b.N; op++ {
				for j := range req.Mutations {
					req.Mutations[j] = kv.Mutation{Op: kv.OpPut, Key: key((op*7919 + j*4999) % keys), Value: []byte("value-of-an-updated-row")}
				}
				req.Primary = req.Mutations[0].Key
				batch.Reset()
				res, err := mvcc.Prewrite(e, &batch, req, ts)
				if err != nil || res.OnePCCommitTS == 0 {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
