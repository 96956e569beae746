package local

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// Benchmarks run on one store preloaded with benchKeys keys shaped like
// row keys, each with 1 to 3 committed versions. Run them with
//
//	go test -run '^$' -bench . -benchtime 2s ./store/local/
//
// The "goroutines" sub-benchmarks run that many goroutines at once. Those
// that run through parallel also report the process's CPU time per
// operation (cpu-ns/op).

const (
	benchKeys     = 1_000_000
	benchValueLen = 120
)

var (
	benchOnce  sync.Once
	benchStore *Store
	benchDir   string
	benchErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchStore != nil {
		benchStore.Close()
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchKey is a row-key-like key: "t", table id 42, "_r", handle i.
func benchKey(i int) []byte {
	k := make([]byte, 0, 19)
	k = append(k, 't')
	k = binary.BigEndian.AppendUint64(k, 42)
	k = append(k, '_', 'r')
	return binary.BigEndian.AppendUint64(k, uint64(i))
}

func benchValue(i, version int) []byte {
	v := make([]byte, benchValueLen)
	for j := range v {
		v[j] = byte('a' + (i+j+version)%26)
	}
	return v
}

// loadedStore returns the shared preloaded store.
func loadedStore(b *testing.B) *Store {
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "basalt-bench-")
		if benchErr != nil {
			return
		}
		// The block cache holds the whole preloaded data set, as a
		// production cache holds the working set.
		benchStore, benchErr = Open(filepath.Join(benchDir, "data"), Options{NoSync: true, BlockCacheSize: 1 << 30})
		if benchErr != nil {
			return
		}
		start := time.Now()
		// Version 0 of every key, version 1 of two keys in three, version 2
		// of one in three: up to three versions each.
		for version, keep := range []func(int) bool{
			func(int) bool { return true },
			func(i int) bool { return i%3 != 0 },
			func(i int) bool { return i%3 == 2 },
		} {
			for lo := 0; lo < benchKeys && benchErr == nil; lo += 10_000 {
				txn, err := benchStore.Begin(kv.TxnOptions{Mode: kv.Optimistic})
				if err != nil {
					benchErr = err
					return
				}
				for i := lo; i < lo+10_000; i++ {
					if keep(i) {
						txn.Set(benchKey(i), benchValue(i, version))
					}
				}
				benchErr = txn.Commit(context.Background())
			}
		}
		// Settle the LSM as a store that has run for a while would be, and
		// warm the cache with a full scan.
		if benchErr = benchStore.db.DB().Compact(context.Background(), []byte{0}, []byte{0xff}, true); benchErr != nil {
			return
		}
		it, err := benchStore.db.DB().NewIter(nil)
		if err != nil {
			benchErr = err
			return
		}
		for it.First(); it.Valid(); it.Next() {
		}
		if benchErr = it.Close(); benchErr != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "preloaded %d keys (1-3 versions each), compacted and cached in %v\n", benchKeys, time.Since(start).Round(time.Millisecond))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchStore
}

// parallel runs body in g goroutines sharing b.N iterations.
func parallel(b *testing.B, g int, body func(rng *rand.Rand) error) {
	var n atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	b.ResetTimer()
	cpuDone := reportCPU(b)
	for w := range g {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for n.Add(1) <= int64(b.N) {
				if err := body(rng); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	cpuDone()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkPointGet(b *testing.B) {
	s := loadedStore(b)
	ctx := context.Background()
	for _, g := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			snap := s.Snapshot(mustTS(b, s))
			lat := make([]int64, 0, min(b.N, 1<<20))
			var mu sync.Mutex
			parallel(b, g, func(rng *rand.Rand) error {
				t0 := time.Now()
				_, err := snap.Get(ctx, benchKey(rng.IntN(benchKeys)))
				d := time.Since(t0)
				if g == 1 && len(lat) < cap(lat) {
					mu.Lock()
					lat = append(lat, int64(d))
					mu.Unlock()
				}
				return err
			})
			if len(lat) > 0 {
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
			}
		})
	}
}

// BenchmarkPointGetAbsent reads keys that are not there, between present
// ones (a present key with a byte appended), as an insert's existence
// check does: no table's key range rules them out.
func BenchmarkPointGetAbsent(b *testing.B) {
	s := loadedStore(b)
	ctx := context.Background()
	for _, g := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			snap := s.Snapshot(mustTS(b, s))
			parallel(b, g, func(rng *rand.Rand) error {
				_, err := snap.Get(ctx, append(benchKey(rng.IntN(benchKeys)), 0))
				if errors.Is(err, kv.ErrNotFound) {
					return nil
				}
				if err == nil {
					err = errors.New("an absent key was found")
				}
				return err
			})
		})
	}
}

func BenchmarkBatchGet10(b *testing.B) {
	s := loadedStore(b)
	ctx := context.Background()
	for _, g := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			snap := s.Snapshot(mustTS(b, s))
			parallel(b, g, func(rng *rand.Rand) error {
				keys := make([][]byte, 10)
				for i := range keys {
					keys[i] = benchKey(rng.IntN(benchKeys))
				}
				m, err := snap.BatchGet(ctx, keys)
				if err == nil && len(m) == 0 {
					err = errors.New("batch get found nothing")
				}
				return err
			})
		})
	}
}

func BenchmarkScan100(b *testing.B) {
	s := loadedStore(b)
	for _, g := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			snap := s.Snapshot(mustTS(b, s))
			parallel(b, g, func(rng *rand.Rand) error {
				start := rng.IntN(benchKeys - 100)
				it, err := snap.Iter(benchKey(start), benchKey(start+100))
				if err != nil {
					return err
				}
				defer it.Close()
				n := 0
				for ; it.Valid(); n++ {
					if err := it.Next(); err != nil {
						return err
					}
				}
				if n != 100 {
					return fmt.Errorf("scan of 100 keys saw %d", n)
				}
				return nil
			})
		})
	}
}

func BenchmarkCommit(b *testing.B) {
	s := loadedStore(b)
	ctx := context.Background()
	for _, sync := range []bool{true, false} {
		for _, keys := range []int{1, 4} {
			for _, g := range []int{1, 16} {
				name := fmt.Sprintf("keys=%d/sync=%t/goroutines=%d", keys, sync, g)
				b.Run(name, func(b *testing.B) {
					s.mvcc.Sync = sync
					defer func() { s.mvcc.Sync = false }()
					var conflicts atomic.Int64
					parallel(b, g, func(rng *rand.Rand) error {
						txn, err := s.Begin(kv.TxnOptions{})
						if err != nil {
							return err
						}
						for range keys {
							i := rng.IntN(benchKeys)
							if err := txn.Set(benchKey(i), benchValue(i, 3)); err != nil {
								return err
							}
						}
						err = txn.Commit(ctx)
						if errors.Is(err, kv.ErrWriteConflict) {
							conflicts.Add(1)
							return nil
						}
						return err
					})
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
					if c := conflicts.Load(); c > 0 {
						b.ReportMetric(float64(c), "conflicts")
					}
				})
			}
		}
	}
}

// BenchmarkFsync measures one 4 KiB write and fdatasync on this disk: the
// cost that group commit shares among concurrent commits.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := f.WriteAt(buf, int64(i%256)*4096); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanVersions scans 100 keys of a table whose keys have the
// given number of committed versions each, as the hot rows of an OLTP
// table have between GC passes: every key (all), or one key in a hundred
// with the rest at one version (hot), in the memtable or, compacted, in
// sstables.
func BenchmarkScanVersions(b *testing.B) {
	type shape struct {
		versions int
		hotOnly  bool // one key in a hundred has the versions
		hotRun   bool // the first 200 keys have them, and scans start there
		compact  bool
	}
	var shapes []shape
	for _, v := range []int{1, 3, 6, 20} {
		shapes = append(shapes, shape{versions: v})
	}
	for _, compact := range []bool{false, true} {
		shapes = append(shapes, shape{versions: 50, hotOnly: true, compact: compact})
	}
	for _, compact := range []bool{false, true} {
		shapes = append(shapes, shape{versions: 150, hotRun: true, compact: compact})
	}
	for _, sh := range shapes {
		name := fmt.Sprintf("all/versions=%d", sh.versions)
		if sh.hotOnly {
			name = fmt.Sprintf("hot/versions=%d/compacted=%t", sh.versions, sh.compact)
		}
		if sh.hotRun {
			name = fmt.Sprintf("hotrun/versions=%d/compacted=%t", sh.versions, sh.compact)
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			s, err := Open(filepath.Join(dir, "data"), Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const keys = 10_000
			for v := range sh.versions {
				txn, err := s.Begin(kv.TxnOptions{Mode: kv.Optimistic})
				if err != nil {
					b.Fatal(err)
				}
				for i := range keys {
					if v == 0 || !sh.hotOnly && !sh.hotRun || sh.hotOnly && i%100 == 0 || sh.hotRun && i < 200 {
						txn.Set(benchKey(i), benchValue(i, v))
					}
				}
				if err := txn.Commit(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			if sh.compact {
				if err := s.db.DB().Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
					b.Fatal(err)
				}
			}
			snap := s.Snapshot(mustTS(b, s))
			rng := rand.New(rand.NewPCG(1, 2))
			defer reportCPU(b)()
			b.ResetTimer()
			for range b.N {
				start := rng.IntN(keys - 100)
				if sh.hotRun {
					start = rng.IntN(100)
				}
				it, err := snap.Iter(benchKey(start), benchKey(start+100))
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for ; it.Valid(); n++ {
					if err := it.Next(); err != nil {
						b.Fatal(err)
					}
				}
				it.Close()
				if n != 100 {
					b.Fatalf("scan of 100 keys saw %d", n)
				}
			}
		})
	}
}

// reportCPU starts measuring the process's CPU time; the returned func
// reports it per operation as "cpu-ns/op", which a shared, busy machine
// disturbs less than the wall time.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBeginCommit is the store's own per-transaction work under
// concurrency, without fsync: Begin and Rollback ("begin"), Begin, one
// Set and Commit ("write"), or Begin, one Get and Rollback ("read"), in
// RunParallel's goroutines (-cpu sets how many Ps run them; the
// goroutines are 4 per P, as a server's connections outnumber its cores).
// It measures the store's locks (the open-transaction registry, the
// oracle), not Pebble's reads. It reports the process's CPU time per
// transaction too (cpu-ns/op: spinning and parking on a contended lock
// cost CPU), which other processes on a shared machine disturb less than
// wall time.
func BenchmarkBeginCommit(b *testing.B) {
	s, err := Open(b.TempDir(), Options{NoSync: true, GCInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const keys = 1 << 16
	val := make([]byte, 100)
	b.Run("begin", func(b *testing.B) {
		defer reportCPU(b)()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				t, err := s.Begin(kv.TxnOptions{})
				if err != nil {
					b.Error(err)
					return
				}
				if err := t.Rollback(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("write", func(b *testing.B) {
		defer reportCPU(b)()
		var seq atomic.Uint64
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				t, err := s.Begin(kv.TxnOptions{Mode: kv.Optimistic})
				if err != nil {
					b.Error(err)
					return
				}
				i := int(seq.Add(1) % keys)
				if err := t.Set(benchKey(i), val); err != nil {
					b.Error(err)
					return
				}
				if err := t.Commit(ctx); err != nil && !errors.Is(err, kv.ErrWriteConflict) {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("read", func(b *testing.B) {
		defer reportCPU(b)()
		var seq atomic.Uint64
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				t, err := s.Begin(kv.TxnOptions{})
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := t.Get(ctx, benchKey(int(seq.Add(1)%keys))); err != nil && !errors.Is(err, kv.ErrNotFound) {
					b.Error(err)
					return
				}
				if err := t.Rollback(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkUpdateLSM is the store's whole cost of uniform single-row
// updates, Pebble's background work included: 16 goroutines each read a
// random row of 400,000 (sysbench's row size) and write its next version,
// one optimistic transaction per update, WAL not synced; after the last
// update the memtable is flushed and the benchmark waits until no
// compaction has run for a second, so that cpu-ns/op counts the flushes
// and compactions the updates caused, and not only those that happened to
// fall inside the run. One sub-benchmark per memtable size
// (rocksdb.defaultcf.write-buffer-size). Each loads and compacts its own
// store first (~10 s), so give it a fixed count:
//
//	go test -run '^$' -bench UpdateLSM -benchtime 300000x ./store/local/
//
// It also reports the bytes written to tables (flushes and compactions)
// per byte of WAL (table-w/wal) and the flushes.
func BenchmarkUpdateLSM(b *testing.B) {
	const rows, valueLen, goroutines = 400_000, 190, 16
	ctx := context.Background()
	for _, mem := range []uint64{16 << 20, 32 << 20} {
		b.Run(fmt.Sprintf("memtable=%dMiB", mem>>20), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{NoSync: true, MemTableSize: mem, GCInterval: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for lo := 0; lo < rows; lo += 10_000 {
				txn, err := s.Begin(kv.TxnOptions{Mode: kv.Optimistic})
				if err != nil {
					b.Fatal(err)
				}
				for i := lo; i < lo+10_000; i++ {
					txn.Set(benchKey(i), slices.Repeat(benchValue(i, 0), 2)[:valueLen])
				}
				if err := txn.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.db.DB().Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
				b.Fatal(err)
			}
			m0 := s.Metrics()
			var n atomic.Int64
			var wg sync.WaitGroup
			var firstErr atomic.Value
			b.ResetTimer()
			start := cpuTime()
			for w := range goroutines {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					value := make([]byte, valueLen)
					for n.Add(1) <= int64(b.N) {
						if err := updateRow(ctx, s, benchKey(rng.IntN(rows)), value, rng); err != nil {
							firstErr.CompareAndSwap(nil, err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err, _ := firstErr.Load().(error); err != nil {
				b.Fatal(err)
			}
			if err := s.db.DB().Flush(); err != nil {
				b.Fatal(err)
			}
			for quiet := 0; quiet < 10; {
				time.Sleep(100 * time.Millisecond)
				if m := s.Metrics(); m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
					quiet++
				} else {
					quiet = 0
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
			m := s.Metrics()
			var tables int64
			for l := range m.Levels {
				tables += int64(m.Levels[l].TableBytesFlushed+m.Levels[l].TableBytesCompacted) -
					int64(m0.Levels[l].TableBytesFlushed+m0.Levels[l].TableBytesCompacted)
			}
			b.ReportMetric(float64(tables)/float64(m.WAL.BytesIn-m0.WAL.BytesIn), "table-w/wal")
			b.ReportMetric(float64(m.Flush.Count-m0.Flush.Count), "flushes")
		})
	}
}

// updateRow reads key and writes a new value of it in one transaction; a
// write conflict with another goroutine's update is no error.
func updateRow(ctx context.Context, s *Store, key, value []byte, rng *rand.Rand) error {
	txn, err := s.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return err
	}
	if _, err := txn.Get(ctx, key); err != nil {
		txn.Rollback()
		return err
	}
	for i := range value {
		value[i] = byte('a' + rng.IntN(26))
	}
	if err := txn.Set(key, value); err != nil {
		txn.Rollback()
		return err
	}
	if err := txn.Commit(ctx); err != nil && !errors.Is(err, kv.ErrWriteConflict) {
		return err
	}
	return nil
}
