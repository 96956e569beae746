package local

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/store/mvcc"
)

// TestLockTable checks the in-memory lock column family's point and range
// operations against what an ordered store would answer.
func TestLockTable(t *testing.T) {
	lt := newLockTable()
	var b mvcc.Batch
	for _, kv := range []string{"b=1", "d=2", "a=3", "c=4", "e=5", "b=6"} {
		k, v, _ := strings.Cut(kv, "=")
		b.Put(mvcc.CFLock, []byte(k), []byte(v))
	}
	// Entries of other column families are not the table's.
	b.Put(mvcc.CFWrite, []byte("w"), []byte("0"))
	lt.apply(b.Entries)
	dump := func(lower, upper string) string {
		var up []byte
		if upper != "" {
			up = []byte(upper)
		}
		it := lt.iter([]byte(lower), up)
		var out []string
		for ok := it.First(); ok; ok = it.Next() {
			out = append(out, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
		}
		return strings.Join(out, " ")
	}
	if got, want := dump("", ""), "a=3 b=6 c=4 d=2 e=5"; got != want {
		t.Fatalf("all: %q, want %q", got, want)
	}
	if got, want := dump("b", "d"), "b=6 c=4"; got != want {
		t.Fatalf("[b, d): %q, want %q", got, want)
	}
	it := lt.iter([]byte("a"), nil)
	if !it.SeekGE([]byte("bb")) || string(it.Key()) != "c" {
		t.Fatalf("SeekGE(bb) stopped at %q", it.Key())
	}
	if !it.SeekLT([]byte("c")) || string(it.Key()) != "b" {
		t.Fatalf("SeekLT(c) stopped at %q", it.Key())
	}
	if !it.Last() || string(it.Key()) != "e" || !it.Prev() || string(it.Key()) != "d" {
		t.Fatal("Last/Prev")
	}
	// A stored value is a copy: changing the caller's slice changes nothing.
	v := []byte("7")
	b.Reset()
	b.Put(mvcc.CFLock, []byte("f"), v)
	lt.apply(b.Entries)
	v[0] = 'x'
	if got, ok := lt.get([]byte("f")); !ok || string(got) != "7" {
		t.Fatalf("get(f) = %q, %v", got, ok)
	}
	b.Reset()
	b.DelRange(mvcc.CFLock, []byte("b"), []byte("d"))
	b.Del(mvcc.CFLock, []byte("e"))
	lt.apply(b.Entries)
	if got, want := dump("", ""), "a=3 d=2 f=7"; got != want {
		t.Fatalf("after deletes: %q, want %q", got, want)
	}
	if _, ok := lt.get([]byte("c")); ok {
		t.Fatal("c survived its range delete")
	}
}

// A batch's lock changes, over many shards, are seen by an iterator all
// at once or not at all, while other batches change keys of the same
// shards. It fails if apply locks and changes one shard at a time.
func TestLockTableBatchAtomic(t *testing.T) {
	lt := newLockTable()
	const keys = 64
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true)
	for w := range 2 {
		wg.Go(func() {
			var b mvcc.Batch
			for round := 0; !stop.Load(); round++ {
				b.Reset()
				for i := range keys {
					k := []byte(fmt.Sprintf("w%d/%02d", w, i))
					if round%2 == 0 {
						b.Put(mvcc.CFLock, k, []byte(fmt.Sprint(round)))
					} else {
						b.Del(mvcc.CFLock, k)
					}
				}
				lt.apply(b.Entries)
			}
		})
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		for w := range 2 {
			lower := []byte(fmt.Sprintf("w%d/", w))
			it := lt.iter(lower, append(lower[:len(lower)-1:len(lower)-1], '0'))
			n, vals := 0, map[string]bool{}
			for ok := it.First(); ok; ok = it.Next() {
				n++
				vals[string(it.Value())] = true
			}
			if (n != 0 && n != keys) || len(vals) > 1 {
				t.Fatalf("writer %d: an iterator saw %d of a batch's %d keys, values %v", w, n, keys, vals)
			}
		}
	}
}
