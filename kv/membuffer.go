package kv

import (
	"bytes"
	"slices"
	"strings"
)

// Op is what a transaction intends to do with a buffered key.
type Op uint8

const (
	// OpPut writes the value.
	OpPut Op = iota + 1
	// OpDelete deletes the key.
	OpDelete
	// OpInsert writes the value and asserts that the key did not exist: the
	// commit fails with a *KeyExistsError if it does.
	OpInsert
	// OpLock writes nothing but makes the commit conflict with any commit
	// of the key since the transaction started (optimistic SELECT ... FOR
	// UPDATE), or releases a pessimistic lock on a key left unchanged.
	OpLock
)

func (o Op) String() string {
	switch o {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpInsert:
		return "insert"
	case OpLock:
		return "lock"
	}
	return "op?"
}

// Mutation is one buffered write, as a store's commit sees it.
type Mutation struct {
	Op    Op
	Key   []byte
	Value []byte
	// Covered: any other transaction that writes this key also writes or
	// locks another key this one does (a non-unique index entry and its
	// row), so the commit finds their conflict there and need not look
	// for newer commits of this key.
	Covered bool
}

// MemBuffer holds a transaction's writes until commit, sorted by key so that
// the transaction's iterators can merge them with the snapshot.
//
// It is not safe for concurrent use. Keys and values are copied in. An
// iterator taken from the buffer keeps seeing the keys present when it was
// created (later Sets of existing keys are seen; new keys are not).
type MemBuffer struct {
	entries map[string]*memEntry
	// order holds every key in entries. Its first sorted entries are in
	// ascending order; keys added since are appended unsorted, and sorting
	// happens lazily when an iterator needs it.
	order  []string
	sorted int
	size   int

	// undo records, while a savepoint is open, what each Set replaced, so
	// that RollbackTo can restore it. savepoints[i] is the undo length when
	// savepoint i was taken.
	undo       []undoEntry
	savepoints []int
}

type undoEntry struct {
	key     string
	existed bool
	old     memEntry
}

type memEntry struct {
	op      Op
	value   []byte
	covered bool
}

// NewMemBuffer returns an empty buffer.
func NewMemBuffer() *MemBuffer {
	return &MemBuffer{entries: make(map[string]*memEntry)}
}

// Get returns the buffered operation for key.
func (b *MemBuffer) Get(key []byte) (value []byte, op Op, ok bool) {
	e, ok := b.entries[string(key)]
	if !ok {
		return nil, 0, false
	}
	return e.value, e.op, true
}

// Write validates and buffers a transaction's write, as every store's
// Txn.Set, Insert and Delete do: CheckEntry, then for an Insert the check
// that the buffer does not hold the key already (a *KeyExistsError), then
// Set.
func (b *MemBuffer) Write(key, value []byte, op Op) error {
	if err := CheckEntry(key, value, op); err != nil {
		return err
	}
	if op == OpInsert {
		if _, o, ok := b.Get(key); ok && o != OpDelete {
			return &KeyExistsError{Key: append([]byte(nil), key...)}
		}
	}
	b.Set(key, value, op)
	return nil
}

// Set buffers op on key, replacing what the buffer held for it. A Put over
// a buffered Insert stays an Insert: the key still must not have existed
// before the transaction.
func (b *MemBuffer) Set(key, value []byte, op Op) {
	if op == OpDelete {
		value = nil
	}
	if len(b.savepoints) > 0 {
		e, ok := b.entries[string(key)]
		u := undoEntry{key: string(key), existed: ok}
		if ok {
			u.old = *e
		}
		b.undo = append(b.undo, u)
	}
	if e, ok := b.entries[string(key)]; ok {
		b.size += len(value) - len(e.value)
		switch {
		case op == OpPut && e.op == OpInsert:
			// Still must not have existed before the transaction.
			op = OpInsert
		case op == OpInsert && e.op == OpDelete:
			// The transaction deleted the key first (REPLACE, DELETE then
			// INSERT): whatever existed before is gone, so write over it.
			op = OpPut
		}
		e.op, e.covered = op, false
		e.value = append(e.value[:0:0], value...)
		return
	}
	k := string(key)
	b.entries[k] = &memEntry{op: op, value: append([]byte(nil), value...)}
	b.order = append(b.order, k)
	b.size += len(k) + len(value)
}

// Cover marks the buffered key as covered (see Mutation.Covered) until
// its next Set.
func (b *MemBuffer) Cover(key []byte) {
	if e, ok := b.entries[string(key)]; ok {
		e.covered = true
	}
}

// Savepoint marks the buffer's current contents and returns the mark.
func (b *MemBuffer) Savepoint() int {
	b.savepoints = append(b.savepoints, len(b.undo))
	return len(b.savepoints) - 1
}

// RollbackTo restores the contents marked by sp, and closes sp and every
// later savepoint.
func (b *MemBuffer) RollbackTo(sp int) {
	if sp < 0 || sp >= len(b.savepoints) {
		return
	}
	mark := b.savepoints[sp]
	for i := len(b.undo) - 1; i >= mark; i-- {
		u := b.undo[i]
		cur := b.entries[u.key]
		if u.existed {
			b.size += len(u.old.value) - len(cur.value)
			*cur = u.old
			continue
		}
		b.size -= len(u.key) + len(cur.value)
		delete(b.entries, u.key)
		for j := len(b.order) - 1; j >= 0; j-- {
			if b.order[j] == u.key {
				b.order = append(b.order[:j:j], b.order[j+1:]...)
				if j < b.sorted {
					b.sorted--
				}
				break
			}
		}
	}
	b.undo = b.undo[:mark]
	b.savepoints = b.savepoints[:sp]
}

// ReleaseSavepoint closes sp and every later savepoint, keeping the
// contents.
func (b *MemBuffer) ReleaseSavepoint(sp int) {
	if sp < 0 || sp >= len(b.savepoints) {
		return
	}
	b.savepoints = b.savepoints[:sp]
	if len(b.savepoints) == 0 {
		b.undo = b.undo[:0]
	}
}

// Len is the number of buffered keys.
func (b *MemBuffer) Len() int { return len(b.entries) }

// Size is the number of bytes of keys and values buffered.
func (b *MemBuffer) Size() int { return b.size }

// Mutations returns the buffered writes in key order.
func (b *MemBuffer) Mutations() []Mutation {
	b.sort()
	ms := make([]Mutation, 0, len(b.order))
	for _, k := range b.order {
		e := b.entries[k]
		ms = append(ms, Mutation{Op: e.op, Key: []byte(k), Value: e.value, Covered: e.covered})
	}
	return ms
}

// sort brings order into ascending order. It builds a new slice, so that
// iterators holding the old one are not disturbed.
func (b *MemBuffer) sort() {
	if b.sorted == len(b.order) {
		return
	}
	order := slices.Clone(b.order)
	slices.Sort(order)
	b.order, b.sorted = order, len(order)
}

// Iter returns an iterator over buffered keys in [start, end), deletions
// included, ascending (or descending if reverse). Nil bounds are open.
func (b *MemBuffer) Iter(start, end []byte, reverse bool) *MemBufferIter {
	b.sort()
	lo := 0
	if start != nil {
		lo, _ = slices.BinarySearch(b.order, string(start))
	}
	hi := len(b.order)
	if end != nil {
		hi, _ = slices.BinarySearch(b.order, string(end))
	}
	it := &MemBufferIter{buf: b, keys: b.order[lo:max(lo, hi)], reverse: reverse}
	if reverse {
		it.pos = len(it.keys) - 1
	}
	return it
}

// MemBufferIter walks a MemBuffer in key order.
type MemBufferIter struct {
	buf     *MemBuffer
	keys    []string
	pos     int
	reverse bool
}

// Valid reports whether the iterator is positioned at a key.
func (it *MemBufferIter) Valid() bool { return it.pos >= 0 && it.pos < len(it.keys) }

// Key returns the current key.
func (it *MemBufferIter) Key() []byte { return []byte(it.keys[it.pos]) }

// KeyString returns the current key without copying it.
func (it *MemBufferIter) KeyString() string { return it.keys[it.pos] }

// Op returns the operation buffered for the current key.
func (it *MemBufferIter) Op() Op { return it.buf.entries[it.keys[it.pos]].op }

// Value returns the value buffered for the current key.
func (it *MemBufferIter) Value() []byte { return it.buf.entries[it.keys[it.pos]].value }

// Next moves to the next key.
func (it *MemBufferIter) Next() {
	if it.reverse {
		it.pos--
	} else {
		it.pos++
	}
}

// UnionIter merges a transaction's buffered writes over a snapshot iterator:
// a buffered key hides the snapshot's, and buffered deletions hide the key.
type UnionIter struct {
	snap    Iterator
	buf     *MemBufferIter
	reverse bool
	// fromBuf says whether the current key comes from the buffer.
	fromBuf bool
	valid   bool
}

// NewUnionIter returns the merge of buf over snap. Both must walk the same
// range in the same direction.
func NewUnionIter(snap Iterator, buf *MemBufferIter, reverse bool) (*UnionIter, error) {
	it := &UnionIter{snap: snap, buf: buf, reverse: reverse}
	if err := it.settle(); err != nil {
		it.Close()
		return nil, err
	}
	return it, nil
}

// settle positions the iterator at the next visible key at or after the
// current positions of its inputs.
func (it *UnionIter) settle() error {
	for {
		sv, bv := it.snap.Valid(), it.buf.Valid()
		if !sv && !bv {
			it.valid = false
			return nil
		}
		var c int
		switch {
		case !sv:
			c = 1
		case !bv:
			c = -1
		default:
			c = strings.Compare(string(it.snap.Key()), it.buf.KeyString())
			if it.reverse {
				c = -c
			}
		}
		if c < 0 {
			it.fromBuf, it.valid = false, true
			return nil
		}
		if c == 0 {
			// The buffer's entry hides the snapshot's.
			if err := it.snap.Next(); err != nil {
				return err
			}
		}
		if it.buf.Op() != OpDelete {
			it.fromBuf, it.valid = true, true
			return nil
		}
		it.buf.Next()
	}
}

// Valid reports whether the iterator is positioned at a key.
func (it *UnionIter) Valid() bool { return it.valid }

// Key returns the current key.
func (it *UnionIter) Key() []byte {
	if it.fromBuf {
		return it.buf.Key()
	}
	return it.snap.Key()
}

// Value returns the current value.
func (it *UnionIter) Value() []byte {
	if it.fromBuf {
		return it.buf.Value()
	}
	return it.snap.Value()
}

// Next moves to the next visible key.
func (it *UnionIter) Next() error {
	if it.fromBuf {
		it.buf.Next()
	} else if err := it.snap.Next(); err != nil {
		return err
	}
	return it.settle()
}

// Close releases the snapshot iterator.
func (it *UnionIter) Close() { it.snap.Close() }

// InRange reports whether key is in [start, end), with nil bounds open.
func InRange(key, start, end []byte) bool {
	return (start == nil || bytes.Compare(key, start) >= 0) && (end == nil || bytes.Compare(key, end) < 0)
}
