package mvcc

import (
	"bytes"
	"slices"
	"sync"
)

// MemEngine is an in-memory Engine for tests: one sorted slice per column
// family under a mutex. Iterators copy the range they cover at creation,
// which gives them a consistent view.
type MemEngine struct {
	mu  sync.RWMutex
	cfs map[CF][]memKV
}

type memKV struct {
	key, value []byte
}

// NewMemEngine returns an empty engine.
func NewMemEngine() *MemEngine {
	return &MemEngine{cfs: make(map[CF][]memKV)}
}

func (e *MemEngine) find(cf CF, key []byte) (int, bool) {
	return slices.BinarySearchFunc(e.cfs[cf], key, func(kv memKV, k []byte) int {
		return bytes.Compare(kv.key, k)
	})
}

// Get implements Reader.
func (e *MemEngine) Get(cf CF, key []byte) ([]byte, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	i, ok := e.find(cf, key)
	if !ok {
		return nil, ErrEngineNotFound
	}
	return slices.Clone(e.cfs[cf][i].value), nil
}

// Write implements Engine.
func (e *MemEngine) Write(b *Batch, _ bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ent := range b.Entries {
		if ent.End != nil {
			lo, _ := e.find(ent.CF, ent.Key)
			hi, _ := e.find(ent.CF, ent.End)
			e.cfs[ent.CF] = slices.Delete(e.cfs[ent.CF], lo, max(lo, hi))
			continue
		}
		kvs := e.cfs[ent.CF]
		i, ok := e.find(ent.CF, ent.Key)
		switch {
		case ent.Delete && ok:
			kvs = slices.Delete(kvs, i, i+1)
		case ent.Delete:
		case ok:
			kvs[i].value = slices.Clone(ent.Value)
		default:
			kvs = slices.Insert(kvs, i, memKV{slices.Clone(ent.Key), slices.Clone(ent.Value)})
		}
		e.cfs[ent.CF] = kvs
	}
	return nil
}

// NewIter implements Reader.
func (e *MemEngine) NewIter(cf CF, lower, upper []byte) (EngineIter, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	lo, _ := e.find(cf, lower)
	hi := len(e.cfs[cf])
	if upper != nil {
		hi, _ = e.find(cf, upper)
	}
	return &memIter{kvs: slices.Clone(e.cfs[cf][lo:max(lo, hi)]), pos: -1}, nil
}

// Dump returns every key and value of cf, for tests.
func (e *MemEngine) Dump(cf CF) (keys, values [][]byte) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, kv := range e.cfs[cf] {
		keys = append(keys, kv.key)
		values = append(values, kv.value)
	}
	return keys, values
}

type memIter struct {
	kvs    []memKV
	pos    int
	closed bool
}

func (it *memIter) Valid() bool { return it.pos >= 0 && it.pos < len(it.kvs) }
func (it *memIter) First() bool { it.pos = 0; return it.Valid() }
func (it *memIter) Last() bool  { it.pos = len(it.kvs) - 1; return it.Valid() }
func (it *memIter) Next() bool  { it.pos++; return it.Valid() }
func (it *memIter) Prev() bool  { it.pos--; return it.Valid() }

func (it *memIter) SeekGE(key []byte) bool {
	it.pos, _ = slices.BinarySearchFunc(it.kvs, key, func(kv memKV, k []byte) int { return bytes.Compare(kv.key, k) })
	return it.Valid()
}

func (it *memIter) SeekLT(key []byte) bool {
	i, _ := slices.BinarySearchFunc(it.kvs, key, func(kv memKV, k []byte) int { return bytes.Compare(kv.key, k) })
	it.pos = i - 1
	return it.Valid()
}

func (it *memIter) Key() []byte   { return it.kvs[it.pos].key }
func (it *memIter) Value() []byte { return it.kvs[it.pos].value }

// Close implements EngineIter. Closing twice panics, as it breaks Pebble,
// which reuses closed iterators.
func (it *memIter) Close() error {
	if it.closed {
		panic("mvcc: engine iterator closed twice")
	}
	it.closed = true
	return nil
}
