package mvcc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// latestWorld is a one-phase store with a latest-version cache, its clock,
// and the read timestamps in use (so that GC keeps what they read).
type latestWorld struct {
	eng   *MemEngine
	s     *Store
	clock atomic.Uint64

	mu     sync.Mutex
	active map[uint64]int
}

func newLatestWorld(t *testing.T, limit int64) *latestWorld {
	w := &latestWorld{eng: NewMemEngine(), active: map[uint64]int{}}
	var err error
	w.s, err = NewStore(w.eng, RealClock{}, Options{OnePhaseOnly: true, LatestCacheSize: limit})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *latestWorld) next() (uint64, error) { return w.clock.Add(1), nil }

// readTS issues a read timestamp that GC keeps readable until done.
func (w *latestWorld) readTS() (ts uint64, done func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ts = w.clock.Add(1)
	w.active[ts]++
	return ts, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.active[ts]--; w.active[ts] == 0 {
			delete(w.active, ts)
		}
	}
}

func (w *latestWorld) safePoint() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	sp := w.clock.Load()
	for ts := range w.active {
		sp = min(sp, ts-1)
	}
	return sp
}

func (w *latestWorld) commit(ms []kv.Mutation) error {
	startTS, _ := w.next()
	_, err := w.s.OnePhaseCommit(context.Background(), &PrewriteRequest{Mutations: ms, StartTS: startTS}, w.next, 0)
	return err
}

// scanBoth scans [start, end) at ts through the store (the cache when it
// covers the range) and straight from the engine, and says how they differ.
func (w *latestWorld) scanBoth(start, end []byte, ts uint64, reverse bool) (cached bool, diff string) {
	ctx := context.Background()
	sc, err := w.s.Scan(ctx, start, end, ts, reverse)
	if err != nil {
		return false, err.Error()
	}
	cached = sc.slots != nil
	got := drain(sc)
	plain, err := NewScanner(w.eng, start, end, ts, reverse, false)
	if err != nil {
		return cached, err.Error()
	}
	want := drain(plain)
	if got != want {
		return cached, fmt.Sprintf("scan [%q, %q) at %d reverse=%t (cached %t):\n got %s\nwant %s", start, end, ts, reverse, cached, got, want)
	}
	return cached, ""
}

func drain(sc *Scanner) string {
	var b strings.Builder
	for ; sc.Valid(); sc.Next() {
		fmt.Fprintf(&b, "%q=%q ", sc.Key(), trimValue(sc.Value()))
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(&b, "error %v", err)
	}
	sc.Close()
	return b.String()
}

func trimValue(v []byte) string {
	if len(v) > 20 {
		return fmt.Sprintf("%s...(%d bytes)", v[:20], len(v))
	}
	return string(v)
}

// latestKey is a key of the test's keyspace: "t", a chunk byte and a key
// byte, so chunks have the prefix "t"+chunk. A few keys of chunk 2 have
// another length, which makes the chunk unfit to cache while they exist.
func latestKey(rng *rand.Rand) []byte {
	k := []byte{'t', byte(rng.IntN(3)), byte(rng.IntN(24))}
	if k[1] == 2 {
		switch rng.IntN(200) {
		case 0:
			return k[:2]
		case 1:
			return append(k, 'x')
		}
	}
	return k
}

func latestValue(rng *rand.Rand, n int) []byte {
	if rng.IntN(10) == 0 {
		return bytes.Repeat([]byte{'L'}, MaxShortValue+1+rng.IntN(10)) // in CFDefault
	}
	return fmt.Appendf(nil, "v%d", n)
}

// TestLatestCacheMatchesEngine runs writers, GC, cache loads, drops and
// evictions concurrently with readers, and checks that every scan and get
// through the cache sees exactly what a plain read of the engine at the
// same timestamp sees.
func TestLatestCacheMatchesEngine(t *testing.T) {
	w := newLatestWorld(t, 12<<10) // small: chunks get evicted
	deadline := time.Now().Add(2 * time.Second)
	if testing.Short() {
		deadline = time.Now().Add(300 * time.Millisecond)
	}
	var (
		wg        sync.WaitGroup
		failed    atomic.Bool
		cachedOps atomic.Int64
		reads     atomic.Int64
		commits   atomic.Int64
		fail      = func(format string, args ...any) {
			if failed.CompareAndSwap(false, true) {
				t.Errorf(format, args...)
			}
		}
	)
	run := func(fn func(rng *rand.Rand)) {
		wg.Add(1)
		seed := rand.Uint64()
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for time.Now().Before(deadline) && !failed.Load() {
				fn(rng)
			}
		}()
	}
	for range 3 { // writers
		run(func(rng *rand.Rand) {
			var ms []kv.Mutation
			for range 1 + rng.IntN(3) {
				m := kv.Mutation{Op: kv.OpPut, Key: latestKey(rng)}
				switch rng.IntN(10) {
				case 0, 1:
					m.Op = kv.OpDelete
				case 2:
					m.Op = kv.OpLock // leaves a lock record
				default:
					m.Value = latestValue(rng, int(commits.Load()))
				}
				ms = append(ms, m)
			}
			err := w.commit(ms)
			if err != nil && !errors.Is(err, kv.ErrWriteConflict) {
				fail("commit: %v", err)
			}
			commits.Add(1)
		})
	}
	for range 2 { // readers
		run(func(rng *rand.Rand) {
			ts, done := w.readTS()
			defer done()
			c := byte(rng.IntN(3))
			lo, hi := byte(rng.IntN(24)), byte(rng.IntN(24))
			start, end := []byte{'t', c, min(lo, hi)}, []byte{'t', c, max(lo, hi) + 1}
			if rng.IntN(4) == 0 { // across two chunks
				end = []byte{'t', min(c+1, 2), hi}
			}
			cached, diff := w.scanBoth(start, end, ts, rng.IntN(3) == 0)
			if diff != "" {
				fail("%s", diff)
			}
			reads.Add(1)
			if cached {
				cachedOps.Add(1)
			}
			key := latestKey(rng)
			got, gerr := w.s.Get(context.Background(), key, ts)
			want, werr := Get(w.eng, key, ts, false)
			if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) {
				fail("get %q at %d: got %q, %v; want %q, %v", key, ts, trimValue(got), gerr, trimValue(want), werr)
			}
		})
	}
	run(func(rng *rand.Rand) { // GC
		if _, err := w.s.GC(w.safePoint()); err != nil {
			fail("gc: %v", err)
		}
		time.Sleep(time.Millisecond)
	})
	run(func(rng *rand.Rand) { // the cache's own churn
		switch rng.IntN(100) {
		case 0:
			w.s.cache.clear()
		default:
			w.s.cache.load(w.eng, []byte{'t', byte(rng.IntN(3))})
		}
		time.Sleep(time.Millisecond)
	})
	wg.Wait()
	st, _ := w.s.LatestCacheStats()
	t.Logf("%d commits, %d scans, %d of them through the cache; cache %+v", commits.Load(), reads.Load(), cachedOps.Load(), st)
	if !failed.Load() && cachedOps.Load() == 0 {
		t.Error("no read went through the cache")
	}
}

// TestLatestCacheLifecycle checks when a chunk gets cached and dropped.
// TestLatestCacheColdWithoutVersions: scans of keys with one version each
// (a table loaded and only read since) step over nothing, so they heat no
// chunk, however often they run. Counting every key as crowded once made
// oltp_read_only over 4 x 100k rows load and evict chunks without end,
// a third of the server's CPU, under the cache's one mutex.
func TestLatestCacheColdWithoutVersions(t *testing.T) {
	w := newLatestWorld(t, 1<<20)
	var ms []kv.Mutation
	for k := range 200 {
		ms = append(ms, kv.Mutation{Op: kv.OpPut, Key: []byte{'a', byte(k)}, Value: []byte("v")})
	}
	if err := w.commit(ms); err != nil {
		t.Fatal(err)
	}
	for i := range 4 * heatToLoad {
		ts, done := w.readTS()
		cached, diff := w.scanBoth([]byte{'a', 0}, []byte{'a', 200}, ts, false)
		done()
		if diff != "" {
			t.Fatal(diff)
		}
		if cached {
			t.Fatalf("scan %d went through the cache: single-version keys heated the chunk", i)
		}
	}
	if st, _ := w.s.LatestCacheStats(); st.Loads != 0 {
		t.Fatalf("chunks loaded by scans of single-version keys: %+v", st)
	}
}

func TestLatestCacheLifecycle(t *testing.T) {
	w := newLatestWorld(t, 1<<20)
	put := func(key []byte, v string) {
		t.Helper()
		if err := w.commit([]kv.Mutation{{Op: kv.OpPut, Key: key, Value: []byte(v)}}); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(start, end []byte) (cached bool) {
		t.Helper()
		ts, done := w.readTS()
		defer done()
		cached, diff := w.scanBoth(start, end, ts, false)
		if diff != "" {
			t.Fatal(diff)
		}
		return cached
	}
	// Ten versions of each key of chunk "a": scans are crowded.
	for v := range 10 {
		for k := range 8 {
			put([]byte{'a', byte(k)}, fmt.Sprint(v))
		}
	}
	start, end := []byte{'a', 0}, []byte{'a', 8}
	for i := range heatToLoad {
		if scan(start, end) {
			t.Fatalf("scan %d went through the cache before the chunk was hot", i)
		}
	}
	if !scan(start, end) {
		t.Fatal("a hot chunk was not cached")
	}
	if st, ok := w.s.LatestCacheStats(); !ok || st.Chunks != 1 || st.Loads != 1 || st.Bytes <= 0 || st.Evictions != 0 {
		t.Fatalf("stats after one load: %+v, %t", st, ok)
	}
	// A commit after loading is seen.
	put([]byte{'a', 3}, "new")
	put([]byte{'a', 9}, "added")
	if !scan(start, []byte{'a', 10}) {
		t.Fatal("the chunk left the cache after writes")
	}
	// A key of another length in the chunk drops it.
	put([]byte{'a', 3, 0}, "long")
	if scan(start, end) {
		t.Fatal("a chunk holding a longer key is still cached")
	}
	// Once found unfit, a chunk is not loaded again.
	for range 10 {
		for k := range 8 {
			put([]byte{'a', byte(k)}, "again")
		}
	}
	for range 2 * heatToLoad {
		if scan(start, end) {
			t.Fatal("an unfit chunk was cached")
		}
	}
	// Point reads heat a chunk too, without versions.
	put([]byte{'c', 1}, "c1")
	for range 4000 {
		ts, done := w.readTS()
		v, err := w.s.Get(context.Background(), []byte{'c', 1}, ts)
		done()
		if err != nil || string(v) != "c1" {
			t.Fatalf("get c1: %q, %v", v, err)
		}
	}
	if sl, ok := w.s.cache.get([]byte{'c', 1}); !ok || sl == nil {
		t.Fatal("a chunk read 4,000 times in a row was not cached")
	}

	// Dropping the range drops a cached chunk.
	for range 10 {
		for k := range 8 {
			put([]byte{'b', byte(k)}, "b")
		}
	}
	w.s.cache.load(w.eng, []byte{'b'})
	if !scan([]byte{'b', 0}, []byte{'b', 8}) {
		t.Fatal("chunk b was not cached")
	}
	if err := w.s.DeleteRange([]byte{'b'}, []byte{'c'}); err != nil {
		t.Fatal(err)
	}
	if scan([]byte{'b', 0}, []byte{'b', 8}) {
		t.Fatal("chunk b is still cached after its range was dropped")
	}
}

// TestLatestCacheEviction checks that the cache stays under its limit by
// evicting the chunks read least recently.
func TestLatestCacheEviction(t *testing.T) {
	// Each chunk below counts 8 x (2 x 2 + 100 + 96) = 1,600 bytes: two fit.
	w := newLatestWorld(t, 3500)
	for _, c := range []byte("abc") {
		var ms []kv.Mutation
		for k := range 8 {
			ms = append(ms, kv.Mutation{Op: kv.OpPut, Key: []byte{c, byte(k)}, Value: bytes.Repeat([]byte{c}, 100)})
		}
		if err := w.commit(ms); err != nil {
			t.Fatal(err)
		}
	}
	cached := func() (out string) {
		for _, c := range []byte("abc") {
			if _, ok := w.s.cache.get([]byte{c, 0}); ok {
				out += string(c)
			}
		}
		return out
	}
	w.s.cache.load(w.eng, []byte{'a'})
	w.s.cache.load(w.eng, []byte{'b'})
	if got := cached(); got != "ab" { // reads a, then b
		t.Fatalf("cached %q, want ab", got)
	}
	if _, ok := w.s.cache.get([]byte{'a', 1}); !ok { // a is now the newer read
		t.Fatal("a left the cache")
	}
	w.s.cache.load(w.eng, []byte{'c'})
	if got := cached(); got != "ac" {
		t.Fatalf("after loading c, cached %q, want ac (b was read least recently)", got)
	}
	st, _ := w.s.LatestCacheStats()
	if st.Chunks != 2 || st.Bytes != 3200 || st.Loads != 3 || st.Evictions != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

// TestLatestCacheBigBatch checks that a batch bigger than bigBatch drops
// the cached chunks it writes to (and only those), and that reads then
// see its writes.
func TestLatestCacheBigBatch(t *testing.T) {
	w := newLatestWorld(t, 1<<20)
	for _, p := range []byte{'a', 'b'} {
		if err := w.commit([]kv.Mutation{{Op: kv.OpPut, Key: []byte{p, 1}, Value: []byte("old")}}); err != nil {
			t.Fatal(err)
		}
		w.s.cache.load(w.eng, []byte{p})
	}
	if st, _ := w.s.LatestCacheStats(); st.Chunks != 2 {
		t.Fatalf("%d chunks cached, want 2", st.Chunks)
	}
	// Keys of chunk a, and many more outside any chunk: each key gives
	// the batch a default and a write record.
	ms := []kv.Mutation{{Op: kv.OpPut, Key: []byte{'a', 1}, Value: []byte("new")}}
	for i := range bigBatch {
		ms = append(ms, kv.Mutation{Op: kv.OpPut, Key: fmt.Appendf(nil, "z%06d", i), Value: []byte("v")})
	}
	if err := w.commit(ms); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.s.cache.get([]byte{'a', 1}); ok {
		t.Error("chunk a, written by the big batch, is still cached")
	}
	if _, ok := w.s.cache.get([]byte{'b', 1}); !ok {
		t.Error("chunk b, which the big batch did not write, was dropped")
	}
	ts, done := w.readTS()
	defer done()
	v, err := w.s.Get(context.Background(), []byte{'a', 1}, ts)
	if err != nil || string(v) != "new" {
		t.Fatalf("get a1: %q, %v; want new", v, err)
	}
}

// TestLatestCacheLoadCost checks that loading a chunk into a cache of
// thousands, and evicting one for room, costs about the same as into a
// cache of a few: neither copies nor sorts every chunk. They did, under
// the cache's one mutex, and with loads and evictions taking turns that
// was a third of the server's CPU (docs/perf-read.md).
func TestLatestCacheLoadCost(t *testing.T) {
	const chunks = 4096
	// Each chunk holds one key: 2 x 4 + 1 + 96 = 105 bytes.
	w := newLatestWorld(t, chunks*105)
	key := func(c int) []byte { return []byte{'p', byte(c >> 8), byte(c), 0} }
	var ms []kv.Mutation
	for c := range chunks + 1 {
		ms = append(ms, kv.Mutation{Op: kv.OpPut, Key: key(c), Value: []byte("v")})
	}
	if err := w.commit(ms); err != nil {
		t.Fatal(err)
	}
	for c := range chunks - 1 {
		w.s.cache.load(w.eng, key(c)[:3])
	}
	if st, _ := w.s.LatestCacheStats(); st.Chunks != chunks-1 || st.Evictions != 0 {
		t.Fatalf("after loading: %+v", st)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w.s.cache.load(w.eng, key(chunks - 1)[:3]) // fills the cache
	w.s.cache.load(w.eng, key(chunks)[:3])     // evicts one
	runtime.ReadMemStats(&after)
	if st, _ := w.s.LatestCacheStats(); st.Chunks != chunks || st.Evictions != 1 || st.Bytes != chunks*105 {
		t.Fatalf("after evicting: %+v", st)
	}
	// A map of 4,096 chunks alone is ~200 KB.
	if n := after.TotalAlloc - before.TotalAlloc; n > 32<<10 {
		t.Errorf("two loads into a cache of %d chunks allocated %d bytes", chunks, n)
	}
}

// BenchmarkLatestCacheScan scans 100 keys at a time, from parallel
// goroutines, over 512 chunks of 256 keys written three times each (so every
// scan is crowded), as oltp_read_write's range scans read rows its updates
// wrote: with a cache that holds every chunk ("fits"), and with one that
// holds about half of them, so that chunks are loaded and evicted in turn
// ("churn", oltp_read_only after writes in docs/perf-read.md).
func BenchmarkLatestCacheScan(b *testing.B) {
	const chunks, perChunk, scanKeys = 512, 256, 100
	chunkBytes := int64(perChunk * (2*4 + 190 + slotOverhead))
	key := func(i int) []byte {
		return []byte{'r', byte(i / perChunk >> 8), byte(i / perChunk), byte(i % perChunk)}
	}
	for _, bc := range []struct {
		name  string
		limit int64
	}{{"fits", 2 * chunks * chunkBytes}, {"churn", chunks * chunkBytes / 2}} {
		w := newLatestWorld(&testing.T{}, bc.limit)
		value := bytes.Repeat([]byte{'v'}, 190)
		for c := range chunks { // in key order: MemEngine inserts into a slice
			for range 3 {
				var ms []kv.Mutation
				for k := range perChunk {
					ms = append(ms, kv.Mutation{Op: kv.OpPut, Key: key(c*perChunk + k), Value: value})
				}
				if err := w.commit(ms); err != nil {
					b.Fatal(err)
				}
			}
		}
		ts := w.clock.Add(1)
		ctx := context.Background()
		scan := func(i int) {
			sc, err := w.s.Scan(ctx, key(i), key(i+scanKeys), ts, false)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for ; sc.Valid(); sc.Next() {
				n += len(sc.Value())
			}
			if err := sc.Err(); err != nil || n != scanKeys*190 {
				b.Fatalf("scan: %d bytes, %v", n, err)
			}
			sc.Close()
		}
		for c := range chunks - 1 { // heat every chunk
			for range heatToLoad + 1 {
				scan(c * perChunk)
			}
		}
		b.Run(bc.name, func(b *testing.B) {
			st0, _ := w.s.LatestCacheStats()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
				for pb.Next() {
					scan(rng.IntN(chunks*perChunk - scanKeys))
				}
			})
			// The process's CPU time: a busy machine disturbs it less.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			st, _ := w.s.LatestCacheStats()
			b.ReportMetric(float64(st.Loads-st0.Loads)/float64(b.N), "loads/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
