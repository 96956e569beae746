package pebble

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestMemoryBudget checks that Options bound the engine's memory outside
// the Go heap: the memtables never pass MemTableStopWritesThreshold x
// MemTableSize (plus the one arena Pebble keeps for reuse), and the block
// cache's blocks and the memtables together stay within BlockCacheSize
// while far more data than that is written and read.
func TestMemoryBudget(t *testing.T) {
	const (
		cacheSize = 4 << 20
		memTable  = 1 << 20
		threshold = 2
		total     = 24 << 20 // bytes of values written, then read
	)
	e, err := Open("db", Options{FS: vfs.NewMem(), BlockCacheSize: cacheSize,
		MemTableSize: memTable, MemTableStopWritesThreshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 1000)
	var maxMem uint64
	written := 0
	for n := 0; written < total; {
		var b mvcc.Batch
		for range 100 {
			for i := range value {
				value[i] = byte(rng.Uint32())
			}
			b.Put(mvcc.CFWrite, fmt.Appendf(nil, "key%08d", n), value)
			n++
			written += len(value)
		}
		if err := e.Write(&b, false); err != nil {
			t.Fatal(err)
		}
		m := e.Metrics()
		maxMem = max(maxMem, m.MemTable.Size+m.MemTable.ZombieSize)
	}
	if limit := uint64((threshold + 1) * memTable); maxMem > limit {
		t.Errorf("memtables reached %d bytes, want at most %d", maxMem, limit)
	}

	it, err := e.NewIter(mvcc.CFWrite, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var read int
	var maxCache int64
	for ok := it.First(); ok; ok = it.Next() {
		read += len(it.Value())
		if read%(1<<20) < len(value) {
			m := e.Metrics()
			maxCache = max(maxCache, m.BlockCache.Size+int64(m.MemTable.Size+m.MemTable.ZombieSize))
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if read != written {
		t.Fatalf("read %d bytes of values, wrote %d", read, written)
	}
	// Each of the cache's shards may hold one block over its share.
	t.Logf("memtables at most %d bytes; block cache and memtables at most %d bytes", maxMem, maxCache)
	if slack := int64(256 << 10); maxCache > cacheSize+slack {
		t.Errorf("block cache and memtables reached %d bytes, want at most %d", maxCache, cacheSize+slack)
	}
	if maxCache < cacheSize/2 {
		t.Errorf("block cache and memtables reached only %d bytes: the read did not fill the cache", maxCache)
	}
}

// TestOpenKeepsComparer: a new database gets Comparer (or Pebble's default
// with LegacyComparer); one that exists always opens with the comparer it
// was created with, whatever Options say, also when its OPTIONS files are
// gone (then the manifest decides), and its data reads back.
func TestOpenKeepsComparer(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		for _, dropOptions := range []bool{false, true} {
			fs := vfs.NewMem()
			e, err := Open("db", Options{FS: fs, LegacyComparer: legacy})
			if err != nil {
				t.Fatal(err)
			}
			var b mvcc.Batch
			b.Put(mvcc.CFWrite, []byte("k"), []byte("v"))
			if err := e.Write(&b, true); err != nil {
				t.Fatal(err)
			}
			if err := e.DB().Flush(); err != nil {
				t.Fatal(err)
			}
			want := e.opts.Comparer.Name
			if got := want == Comparer.Name; got == legacy {
				t.Fatalf("legacy=%t: created with comparer %s", legacy, want)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if dropOptions {
				names, _ := fs.List("db")
				for _, n := range names {
					if strings.HasPrefix(n, "OPTIONS-") {
						if err := fs.Remove(fs.PathJoin("db", n)); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			// Reopened asking for the other comparer.
			if e, err = Open("db", Options{FS: fs, LegacyComparer: !legacy}); err != nil {
				t.Fatalf("legacy=%t dropOptions=%t: %v", legacy, dropOptions, err)
			}
			if got := e.opts.Comparer.Name; got != want || e.prefixSeeks != (got == Comparer.Name) {
				t.Errorf("legacy=%t dropOptions=%t: reopened with %s (prefix seeks %t), created with %s",
					legacy, dropOptions, got, e.prefixSeeks, want)
			}
			if v, err := e.Get(mvcc.CFWrite, []byte("k")); err != nil || string(v) != "v" {
				t.Errorf("legacy=%t dropOptions=%t: Get = %q, %v", legacy, dropOptions, v, err)
			}
			e.Close()
		}
	}
}
