package mvcc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitReadRangeKeysBetween checks that a range read waits for a
// commit in flight only if one of the commit's keys lies in its range,
// not when the range merely falls between two of them.
func TestWaitReadRangeKeysBetween(t *testing.T) {
	l := NewLatches()
	g, err := l.Acquire(context.Background(), 10, [][]byte{[]byte("t1_i5"), []byte("t4_r9")})
	if err != nil {
		t.Fatal(err)
	}
	l.MarkCommitting(g)
	wait := func(start, end string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var e []byte
		if end != "" {
			e = []byte(end)
		}
		return l.WaitReadRange(ctx, []byte(start), e, 20)
	}
	for _, c := range []struct {
		start, end string
		waits      bool
	}{
		{"t2_r1", "t2_r9", false}, // between the two keys
		{"t1_i6", "t4_r9", false}, // ends at the last key, excluded
		{"t0", "t1_i5", false},    // ends at the first key, excluded
		{"t4_r9", "", true},       // holds the last key
		{"t1_i5", "t1_i6", true},
		{"t4_r0", "", true},
		{"", "", true},
		{"t3", "t5", true},
	} {
		err := wait(c.start, c.end)
		if got := errors.Is(err, context.DeadlineExceeded); got != c.waits {
			t.Errorf("[%q, %q): waited %t, want %t (err %v)", c.start, c.end, got, c.waits, err)
		}
	}
	l.Release(g)
	if err := wait("", ""); err != nil {
		t.Errorf("after release: %v", err)
	}
}

// TestLatchesConcurrent runs key commands, range latches, point reads and
// range reads on a few keys at once, with a counter as the oracle, and
// checks the two promises of Latches: no two commands hold a key at once
// (key against key and key against range), and a read at ts that has
// waited sees every commit with a commit ts at or below ts (the commit
// applies between its ts and its release, after a yield, as a WAL sync).
// It fails if a command takes its shards one at a time without checking
// the range latches under them, or if a range read skips a shard that
// lists a committing guard.
func TestLatchesConcurrent(t *testing.T) {
	const nkeys, writers, readers = 48, 6, 4
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	key := func(i int) string { return fmt.Sprintf("k%02d", i) }
	l := NewLatches()
	var oracle atomic.Uint64
	var owner [nkeys]atomic.Int64    // the writer holding the key, 0: none
	var applied [nkeys]atomic.Uint64 // the newest commit ts applied
	var histMu sync.Mutex
	hist := make([][]uint64, nkeys) // commit ts of every commit, ascending
	type seen struct {
		key    int
		ts, at uint64
	}
	ctx := context.Background()
	commit := func(id int64, g *Guard, keys []int) {
		for _, k := range keys {
			if !owner[k].CompareAndSwap(0, id) {
				t.Errorf("%s held by %d and %d at once", key(k), owner[k].Load(), id)
			}
		}
		l.MarkCommitting(g)
		cts := oracle.Add(1)
		histMu.Lock()
		for _, k := range keys {
			hist[k] = append(hist[k], cts)
		}
		histMu.Unlock()
		runtime.Gosched()
		for _, k := range keys {
			applied[k].Store(cts)
			owner[k].Store(0)
		}
		l.Release(g)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			id := int64(w + 1)
			for range rounds {
				if w == 0 && rng.IntN(8) == 0 {
					lo := rng.IntN(nkeys - 8)
					g, err := l.AcquireRange(ctx, []byte(key(lo)), []byte(key(lo+8)))
					if err != nil {
						t.Error(err)
						return
					}
					l.setStart(g, oracle.Add(1))
					keys := make([]int, 8)
					for i := range keys {
						keys[i] = lo + i
					}
					commit(id, g, keys)
					continue
				}
				keys := make([]int, 1+rng.IntN(4))
				bkeys := make([][]byte, len(keys))
				for i := range keys {
					keys[i] = rng.IntN(nkeys)
					bkeys[i] = []byte(key(keys[i]))
				}
				slices.Sort(keys)
				keys = slices.Compact(keys)
				g, err := l.Acquire(ctx, oracle.Add(1), bkeys)
				if err != nil {
					t.Error(err)
					return
				}
				commit(id, g, keys)
			}
		})
	}
	reads := make([][]seen, readers)
	for r := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			for range rounds * 2 {
				ts := oracle.Add(1)
				if rng.IntN(2) == 0 {
					k := rng.IntN(nkeys)
					if err := l.WaitRead(ctx, []byte(key(k)), ts); err != nil {
						t.Error(err)
						return
					}
					reads[r] = append(reads[r], seen{k, ts, applied[k].Load()})
					continue
				}
				lo := rng.IntN(nkeys - 6)
				if err := l.WaitReadRange(ctx, []byte(key(lo)), []byte(key(lo+6)), ts); err != nil {
					t.Error(err)
					return
				}
				for k := lo; k < lo+6; k++ {
					reads[r] = append(reads[r], seen{k, ts, applied[k].Load()})
				}
			}
		})
	}
	wg.Wait()
	missed := 0
	for _, rs := range reads {
		for _, s := range rs {
			// A commit of the key with s.at < cts <= s.ts was not applied
			// when the read looked, yet lands below its ts.
			h := hist[s.key]
			i, _ := slices.BinarySearch(h, s.at+1)
			if i < len(h) && h[i] <= s.ts {
				if missed++; missed <= 5 {
					t.Errorf("read of %s at %d saw commit %d, missed %d", key(s.key), s.ts, s.at, h[i])
				}
			}
		}
	}
	if missed > 0 {
		t.Errorf("%d reads missed a commit below their ts", missed)
	}
}

// TestLatchShardsIndependent: commands and reads of keys in other shards
// go on while one shard's mutex is held.
func TestLatchShardsIndependent(t *testing.T) {
	l := NewLatches()
	a := "a"
	var b string
	for i := 0; ; i++ {
		if b = fmt.Sprintf("b%d", i); latchShardOf(b) != latchShardOf(a) {
			break
		}
	}
	sh := &l.shards[latchShardOf(a)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		g, err := l.Acquire(ctx, 1, [][]byte{[]byte(b)})
		if err != nil {
			done <- err
			return
		}
		l.MarkCommitting(g)
		l.Release(g)
		done <- l.WaitRead(ctx, []byte(b), 2)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a command on another shard's key waited for the held shard")
	}
}

// BenchmarkLatches: what a one-phase commit and a point read do with the
// latches (acquire three keys, mark them committing, release; read one
// key), from every P at once, on keys that rarely meet.
func BenchmarkLatches(b *testing.B) {
	l := NewLatches()
	ctx := context.Background()
	var seq atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seq.Add(1), 0))
		keys := make([][]byte, 3)
		for i := range keys {
			keys[i] = make([]byte, 12)
		}
		read := make([]byte, 12)
		for pb.Next() {
			for _, k := range keys {
				copy(k, fmt.Appendf(k[:0], "t1_r%08d", rng.IntN(1<<20)))
			}
			ts := seq.Add(1)
			g, err := l.Acquire(ctx, ts, keys)
			if err != nil {
				b.Fatal(err)
			}
			l.MarkCommitting(g)
			l.Release(g)
			read = fmt.Appendf(read[:0], "t1_r%08d", rng.IntN(1<<20))
			if err := l.WaitRead(ctx, read, ts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestLatchGuardAllocs: a command of a few keys (a row and its index
// entries) allocates its guard, the guard's channel and one string for
// all its keys, and nothing more, however many keys up to guardInline.
func TestLatchGuardAllocs(t *testing.T) {
	l := NewLatches()
	ctx := context.Background()
	keys := [][]byte{[]byte("t1_r00000007"), []byte("t1_i1_0042_r7"), []byte("t1_i1_0043_r7")}
	allocs := testing.AllocsPerRun(100, func() {
		g, err := l.Acquire(ctx, 10, keys)
		if err != nil {
			t.Fatal(err)
		}
		l.MarkCommitting(g)
		l.Release(g)
	})
	if allocs > 3 {
		t.Errorf("Acquire, MarkCommitting and Release of 3 keys: %.0f allocations, want at most 3", allocs)
	}
	g, err := l.Acquire(ctx, 11, [][]byte{keys[2], keys[0], keys[2], keys[1]})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"t1_i1_0042_r7", "t1_i1_0043_r7", "t1_r00000007"}; !slices.Equal(g.keys, want) {
		t.Errorf("guard keys %q, want sorted and distinct %q", g.keys, want)
	}
	l.Release(g)
}
