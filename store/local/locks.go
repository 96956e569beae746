package local

import (
	"bytes"
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
// Point operations are what transactions do; range operations (iterators,
// range deletes) serve only DDL and tests, and cost a pass over the table.
type lockTable struct {
	mu    sync.RWMutex
	locks map[string][]byte
}

func newLockTable() *lockTable {
	return &lockTable{locks: make(map[string][]byte)}
}

// get returns a copy of key's lock record.
func (t *lockTable) get(key []byte) ([]byte, bool) {
	t.mu.RLock()
	v, ok := t.locks[string(key)]
	t.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return slices.Clone(v), true
}

// apply makes the changes of the batch's CFLock entries in order,
// atomically for readers; it skips the other entries.
func (t *lockTable) apply(ents []mvcc.BatchEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range ents {
		switch {
		case w.CF != mvcc.CFLock:
		case w.End != nil:
			for k := range t.locks {
				if k >= string(w.Key) && k < string(w.End) {
					delete(t.locks, k)
				}
			}
		case w.Delete:
			delete(t.locks, string(w.Key))
		default:
			t.locks[string(w.Key)] = slices.Clone(w.Value)
		}
	}
}

// iter returns an iterator over a copy of the records in [lower, upper);
// a nil upper bound is open.
func (t *lockTable) iter(lower, upper []byte) *lockIter {
	t.mu.RLock()
	var kvs []lockKV
	for k, v := range t.locks {
		if k >= string(lower) && (upper == nil || k < string(upper)) {
			kvs = append(kvs, lockKV{[]byte(k), v})
		}
	}
	t.mu.RUnlock()
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
