package pebble

import (
	"fmt"
	"math/rand/v2"
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
