package local

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/basalt-db/basalt/store/mvcc"
)

// lockTable holds the lock column family in memory. The embedded store
// commits in one phase, so the only locks it ever writes are pessimistic
// ones, and those die with their transaction, which dies with the process:
// on disk they would cost a WAL write to take and a tombstone to release,
// and every lock check would be a seek through the memtable and the
// sstables. Here a check is a map lookup.
//
// The keys are spread over lockShards shards by hash, each a map under its
// own lock, so that transactions locking and releasing different keys
// rarely meet. A batch (apply) holds batchMu shared for its whole run and
// each shard's lock only for its own change, so that batches of different
// transactions wait for each other only on the same shard, and only for
// a map operation; an iterator holds batchMu exclusively, so it sees all
// of a batch or none of it; a point read (get) holds one shard. (A batch
// used to lock every shard it touched for all its changes: write_only's
// commits release some ten locks, over most of the 16 shards, and that
// was most of the server's mutex wait once the latches were sharded.)
//
// Point operations are what transactions do; range operations (iterators,
// range deletes) serve only DDL and tests, and cost a pass over the table.
type lockTable struct {
	seed maphash.Seed
	// batchMu is held shared by apply, exclusively by iter.
	batchMu sync.RWMutex
	shards  [lockShards]lockShard
}

const lockShards = 16

// lockShard is one shard, padded to a cache line of its own.
type lockShard struct {
	mu    sync.RWMutex
	locks map[string][]byte
	_     [64 - 24 - 8]byte
}

func newLockTable() *lockTable {
	t := &lockTable{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].locks = make(map[string][]byte)
	}
	return t
}

func (t *lockTable) shard(key []byte) int {
	return int(maphash.Bytes(t.seed, key) % lockShards)
}

// get returns a copy of key's lock record.
func (t *lockTable) get(key []byte) ([]byte, bool) {
	sh := &t.shards[t.shard(key)]
	sh.mu.RLock()
	v, ok := sh.locks[string(key)]
	sh.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return slices.Clone(v), true
}

// apply makes the changes of the batch's CFLock entries in order,
// atomically for iterators; it skips the other entries. The values are
// copied and the shards found before it takes any lock.
func (t *lockTable) apply(ents []mvcc.BatchEntry) {
	type change struct {
		shard int // -1: a range delete, which spans every shard
		ent   *mvcc.BatchEntry
		value []byte
	}
	var small [8]change // a commit's batch rarely has more lock changes
	changes := small[:0]
	for i := range ents {
		w := &ents[i]
		switch {
		case w.CF != mvcc.CFLock:
		case w.End != nil:
			changes = append(changes, change{shard: -1, ent: w})
		default:
			c := change{shard: t.shard(w.Key), ent: w}
			if !w.Delete {
				c.value = slices.Clone(w.Value)
			}
			changes = append(changes, c)
		}
	}
	if len(changes) == 0 {
		return
	}
	t.batchMu.RLock()
	defer t.batchMu.RUnlock()
	for _, c := range changes {
		w := c.ent
		if c.shard < 0 {
			for i := range t.shards {
				sh := &t.shards[i]
				sh.mu.Lock()
				for k := range sh.locks {
					if k >= string(w.Key) && k < string(w.End) {
						delete(sh.locks, k)
					}
				}
				sh.mu.Unlock()
			}
			continue
		}
		sh := &t.shards[c.shard]
		sh.mu.Lock()
		if w.Delete {
			delete(sh.locks, string(w.Key))
		} else {
			sh.locks[string(w.Key)] = c.value
		}
		sh.mu.Unlock()
	}
}

// iter returns an iterator over a copy of the records in [lower, upper);
// a nil upper bound is open.
func (t *lockTable) iter(lower, upper []byte) *lockIter {
	var kvs []lockKV
	t.batchMu.Lock() // no batch is half applied
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.RLock()
		for k, v := range sh.locks {
			if k >= string(lower) && (upper == nil || k < string(upper)) {
				kvs = append(kvs, lockKV{[]byte(k), v})
			}
		}
		sh.mu.RUnlock()
	}
	t.batchMu.Unlock()
	slices.SortFunc(kvs, func(a, b lockKV) int { return bytes.Compare(a.key, b.key) })
	return &lockIter{kvs: kvs, pos: -1}
}

type lockKV struct{ key, value []byte }

// lockIter walks a sorted copy of part of the table. Values are shared
// with the table, which never modifies a stored slice in place.
type lockIter struct {
	kvs []lockKV
	pos int
}

func (it *lockIter) Valid() bool { return it.pos >= 0 && it.pos < len(it.kvs) }
func (it *lockIter) First() bool { it.pos = 0; return it.Valid() }
func (it *lockIter) Last() bool  { it.pos = len(it.kvs) - 1; return it.Valid() }
func (it *lockIter) Next() bool  { it.pos++; return it.Valid() }
func (it *lockIter) Prev() bool  { it.pos--; return it.Valid() }

func (it *lockIter) SeekGE(key []byte) bool {
	it.pos, _ = slices.BinarySearchFunc(it.kvs, key, func(kv lockKV, k []byte) int { return bytes.Compare(kv.key, k) })
	return it.Valid()
}

func (it *lockIter) SeekLT(key []byte) bool {
	i, _ := slices.BinarySearchFunc(it.kvs, key, func(kv lockKV, k []byte) int { return bytes.Compare(kv.key, k) })
	it.pos = i - 1
	return it.Valid()
}

func (it *lockIter) Key() []byte   { return it.kvs[it.pos].key }
func (it *lockIter) Value() []byte { return it.kvs[it.pos].value }
func (it *lockIter) Close() error  { return nil }
