package kv

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"unsafe"
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
// created (later Sets of existing keys are seen; new keys are not); it
// must not be used after a RollbackTo that takes away keys it holds.
//
// Slices it hands out (Get's value, an iterator's Key and Value, a
// Mutation's Key and Value) are the buffer's own bytes: read-only, and
// never changed by later writes, which store new bytes instead.
//
// Layout, so that a transaction of millions of keys costs the Go collector
// next to nothing and makes no allocation per key (TiDB's memdb and
// Pebble's arenaskl are built the same way):
//
//	arena    keys and values appended into byte chunks (512 bytes doubling
//	         to 4 MiB; a value too big for its chunk gets one of its own)
//	entries  one fixed-size memEntry per key, in order of first Set,
//	         naming its key and current value by arena address
//	index    open-addressing hash table (linear probing) of entry
//	         numbers; 0 is an empty slot
//	order    entry numbers, order[:sorted] ascending by key; the rest,
//	         added since, are sorted when an iterator needs them (on
//	         16-byte key abbreviations) and merged in
//
// None of these holds a Go pointer but the chunk list, so the collector
// does not scan them. A key's entry number never changes; the entries
// added since a savepoint are the last ones, so RollbackTo removes them
// by truncating.
//
// An overwritten value stays in the arena (slices handed out may still
// refer to it). Size counts keys and current values only, as before the
// arena: garbage is not counted against memory quotas. To keep it bounded,
// once more than half of an arena of at least 1 MiB is estimated to be
// garbage, the live keys and values are copied into a new arena.
type MemBuffer struct {
	arena   memArena
	entries []memEntry
	index   []uint64
	order   []uint32
	sorted  int
	size    int
	// garbage estimates the arena bytes no entry refers to any more. It
	// also counts old values that an open savepoint's undo still holds.
	garbage int

	// undo records, while a savepoint is open, what each Set replaced, so
	// that RollbackTo can restore it. savepoints[i] is the undo length when
	// savepoint i was taken.
	undo       []undoEntry
	savepoints []int
}

type undoEntry struct {
	entry   uint32
	existed bool
	// What the entry held before (if it existed).
	op      Op
	covered bool
	vlen    uint32
	value   arenaAddr
}

type memEntry struct {
	key, value arenaAddr
	klen, vlen uint32
	op         Op
	covered    bool
}

// An index slot: the high 32 bits of the key's hash, then entry+1 (0 is an
// empty slot). A key's home slot is its hash bits modulo the table size.
func slotHash(s uint64) uint32  { return uint32(s >> 32) }
func slotEntry(s uint64) uint32 { return uint32(s) - 1 }

var memSeed = maphash.MakeSeed()

func keyHash(key []byte) uint32 { return uint32(maphash.Bytes(memSeed, key) >> 32) }

const (
	minIndexSlots = 16
	// maxEntries is the most keys a buffer holds: entry numbers are
	// uint32 (less the empty slot), and the index, of up to 2^32 slots,
	// finds a key's home slot from 32 bits of its hash.
	maxEntries = 3 << 30
)

// compactMin is the arena size below which it is never compacted; a
// variable so that tests can make compaction happen sooner.
var compactMin = 1 << 20

// NewMemBuffer returns an empty buffer.
func NewMemBuffer() *MemBuffer {
	return &MemBuffer{}
}

func (b *MemBuffer) keyOf(e *memEntry) []byte   { return b.arena.bytes(e.key, e.klen) }
func (b *MemBuffer) valueOf(e *memEntry) []byte { return b.arena.bytes(e.value, e.vlen) }
func (b *MemBuffer) keyAt(i uint32) []byte      { return b.keyOf(&b.entries[i]) }

// find returns the entry number of key, or the index slot where it
// would go.
func (b *MemBuffer) find(h uint32, key []byte) (slot int, entry uint32, ok bool) {
	if len(b.index) == 0 {
		return -1, 0, false
	}
	mask := uint32(len(b.index) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := b.index[i]
		if s == 0 {
			return int(i), 0, false
		}
		if slotHash(s) == h {
			e := slotEntry(s)
			if bytes.Equal(b.keyAt(e), key) {
				return int(i), e, true
			}
		}
	}
}

// grow doubles the index (or makes the first one).
func (b *MemBuffer) grow() {
	n := max(minIndexSlots, 2*len(b.index))
	index := make([]uint64, n)
	mask := uint32(n - 1)
	for _, s := range b.index {
		if s == 0 {
			continue
		}
		i := slotHash(s) & mask
		for index[i] != 0 {
			i = (i + 1) & mask
		}
		index[i] = s
	}
	b.index = index
}

// unindex removes entry from the index, shifting back the slots after it
// that would otherwise no longer be found (linear probing's deletion).
func (b *MemBuffer) unindex(entry uint32) {
	mask := uint32(len(b.index) - 1)
	h := keyHash(b.keyAt(entry))
	i := h & mask
	for b.index[i] != uint64(h)<<32|uint64(entry+1) {
		i = (i + 1) & mask
	}
	for j := i; ; {
		j = (j + 1) & mask
		s := b.index[j]
		if s == 0 {
			break
		}
		// The slot at j stays if its home is cyclically in (i, j].
		home := slotHash(s) & mask
		if i <= j && i < home && home <= j || i > j && (i < home || home <= j) {
			continue
		}
		b.index[i] = s
		i = j
	}
	b.index[i] = 0
}

// Get returns the buffered operation for key.
func (b *MemBuffer) Get(key []byte) (value []byte, op Op, ok bool) {
	_, i, ok := b.find(keyHash(key), key)
	if !ok {
		return nil, 0, false
	}
	e := &b.entries[i]
	return b.valueOf(e), e.op, true
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
	if len(b.entries) >= len(b.index)/4*3 {
		b.grow()
	}
	h := keyHash(key)
	slot, i, ok := b.find(h, key)
	if ok {
		e := &b.entries[i]
		if len(b.savepoints) > 0 {
			b.undo = append(b.undo, undoEntry{entry: i, existed: true, op: e.op, covered: e.covered, vlen: e.vlen, value: e.value})
		}
		b.size += len(value) - int(e.vlen)
		b.garbage += int(e.vlen)
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
		e.value, e.vlen = b.arena.add(value), uint32(len(value))
		b.maybeCompact()
		return
	}
	if len(b.entries) >= maxEntries {
		panic("kv: MemBuffer holds too many keys")
	}
	i = uint32(len(b.entries))
	if len(b.savepoints) > 0 {
		b.undo = append(b.undo, undoEntry{entry: i})
	}
	k := b.arena.add2(key, value)
	b.entries = appendDoubling(b.entries, memEntry{key: k, value: k + arenaAddr(len(key)),
		klen: uint32(len(key)), vlen: uint32(len(value)), op: op})
	b.index[slot] = uint64(h)<<32 | uint64(i+1)
	b.order = appendDoubling(b.order, i)
	b.size += len(key) + len(value)
	b.maybeCompact()
}

func (b *MemBuffer) maybeCompact() {
	if b.garbage > b.arena.used/2 && b.arena.used >= compactMin {
		b.compact()
	}
}

// appendDoubling appends v, doubling the capacity when it runs out (append
// grows big slices by a quarter, which copies a big buffer's entries
// several times over).
func appendDoubling[T any](s []T, v T) []T {
	if len(s) == cap(s) && len(s) >= 256 {
		s = slices.Grow(s, len(s))
	}
	return append(s, v)
}

// compact copies the live keys and values (those of the entries and those
// the undo records hold) into a new arena. The old chunks stay as they are
// for whatever slices of them were handed out.
func (b *MemBuffer) compact() {
	var a memArena
	for i := range b.entries {
		e := &b.entries[i]
		e.key = a.add2(b.keyOf(e), b.valueOf(e))
		e.value = e.key + arenaAddr(e.klen)
	}
	for i := range b.undo {
		u := &b.undo[i]
		if u.existed {
			u.value = a.add(b.arena.bytes(u.value, u.vlen))
		}
	}
	b.arena, b.garbage = a, 0
}

// Cover marks the buffered key as covered (see Mutation.Covered) until
// its next Set.
func (b *MemBuffer) Cover(key []byte) {
	if _, i, ok := b.find(keyHash(key), key); ok {
		b.entries[i].covered = true
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
	n := len(b.entries)
	for i := len(b.undo) - 1; i >= mark; i-- {
		u := b.undo[i]
		cur := &b.entries[u.entry]
		if u.existed {
			b.size += int(u.vlen) - int(cur.vlen)
			b.garbage += int(cur.vlen)
			cur.op, cur.covered, cur.value, cur.vlen = u.op, u.covered, u.value, u.vlen
			continue
		}
		// Keys new since the savepoint are the last entries, undone last
		// first.
		if u.entry != uint32(n-1) {
			panic("kv: MemBuffer undo out of order")
		}
		b.size -= int(cur.klen + cur.vlen)
		b.garbage += int(cur.klen + cur.vlen)
		b.unindex(u.entry)
		n--
	}
	if n < len(b.entries) {
		b.entries = b.entries[:n]
		b.dropOrder(uint32(n))
	}
	b.undo = b.undo[:mark]
	b.savepoints = b.savepoints[:sp]
}

// dropOrder takes the entries numbered n and up out of order, into a new
// slice if they are not just its tail, so that iterators holding the old
// one are not disturbed.
func (b *MemBuffer) dropOrder(n uint32) {
	tail := len(b.order)
	for tail > b.sorted && b.order[tail-1] >= n {
		tail--
	}
	if tail == int(n) {
		b.order = b.order[:tail:tail]
		return
	}
	order := make([]uint32, 0, n)
	sorted := 0
	for j, i := range b.order {
		if i < n {
			order = append(order, i)
			if j < b.sorted {
				sorted++
			}
		}
	}
	b.order, b.sorted = order, sorted
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
	ms := make([]Mutation, len(b.order))
	for j, i := range b.order {
		e := &b.entries[i]
		ms[j] = Mutation{Op: e.op, Key: b.keyOf(e), Value: b.valueOf(e), Covered: e.covered}
	}
	return ms
}

func (b *MemBuffer) compareEntries(x, y uint32) int { return bytes.Compare(b.keyAt(x), b.keyAt(y)) }

// sort brings order into ascending order: it sorts the keys added since
// the last sort and merges them into the sorted ones. It builds a new
// slice, so that iterators holding the old one are not disturbed.
func (b *MemBuffer) sort() {
	if b.sorted == len(b.order) {
		return
	}
	head := b.order[:b.sorted]
	tail := slices.Clone(b.order[b.sorted:])
	b.sortEntries(tail)
	order := tail
	if len(head) > 0 {
		order = make([]uint32, 0, len(b.order))
		for len(head) > 0 && len(tail) > 0 {
			if b.compareEntries(head[0], tail[0]) <= 0 {
				order, head = append(order, head[0]), head[1:]
			} else {
				order, tail = append(order, tail[0]), tail[1:]
			}
		}
		order = append(append(order, head...), tail...)
	}
	b.order, b.sorted = order, len(order)
}

// sortItem is an entry to sort, with 16 bytes of its key from the depth
// being sorted on, big-endian (zero-padded): most comparisons are decided
// by them without reading the arena.
type sortItem struct {
	hi, lo uint64
	entry  uint32
	klen   uint32
}

// sortEntries sorts entry numbers by key. It skips the prefix every key
// shares, then sorts on 16 bytes of key at a time: keys that tie on them
// are sorted again on the next 16 (a most-significant-digit-first sort).
func (b *MemBuffer) sortEntries(es []uint32) {
	if len(es) < 2 {
		return
	}
	first := b.keyAt(es[0])
	common := len(first)
	for _, e := range es[1:] {
		k := b.keyAt(e)
		n := min(common, len(k))
		i := 0
		for i < n && k[i] == first[i] {
			i++
		}
		common = i
	}
	items := make([]sortItem, len(es))
	for i, e := range es {
		items[i] = sortItem{entry: e, klen: b.entries[e].klen}
	}
	b.sortItems(items, common)
	for i := range items {
		es[i] = items[i].entry
	}
}

// sortItems sorts items whose keys share their first depth bytes.
func (b *MemBuffer) sortItems(items []sortItem, depth int) {
	var abbr [16]byte
	for i := range items {
		it := &items[i]
		clear(abbr[:])
		copy(abbr[:], b.keyAt(it.entry)[depth:])
		it.hi, it.lo = binary.BigEndian.Uint64(abbr[:8]), binary.BigEndian.Uint64(abbr[8:])
	}
	next := uint32(depth + 16)
	slices.SortFunc(items, func(x, y sortItem) int {
		if x.hi != y.hi {
			return cmp.Compare(x.hi, y.hi)
		}
		if x.lo != y.lo {
			return cmp.Compare(x.lo, y.lo)
		}
		// The same 16 bytes: a key that ends within them is a prefix of
		// the other (or zero-padded to look like it), so shorter first.
		// Two keys that go on tie here, and are sorted on the next 16.
		return cmp.Compare(min(x.klen, next+1), min(y.klen, next+1))
	})
	for i := 0; i < len(items); {
		j := i + 1
		for j < len(items) && items[j].hi == items[i].hi && items[j].lo == items[i].lo && items[j].klen > next && items[i].klen > next {
			j++
		}
		if j-i > 1 {
			b.sortItems(items[i:j], int(next))
		}
		i = j
	}
}

// search returns the position in the sorted order of the first key at or
// after key.
func (b *MemBuffer) search(key []byte) int {
	i, _ := slices.BinarySearchFunc(b.order, key, func(e uint32, k []byte) int { return bytes.Compare(b.keyAt(e), k) })
	return i
}

// Iter returns an iterator over buffered keys in [start, end), deletions
// included, ascending (or descending if reverse). Nil bounds are open.
func (b *MemBuffer) Iter(start, end []byte, reverse bool) *MemBufferIter {
	b.sort()
	lo := 0
	if start != nil {
		lo = b.search(start)
	}
	hi := len(b.order)
	if end != nil {
		hi = b.search(end)
	}
	it := &MemBufferIter{buf: b, entries: b.order[lo:max(lo, hi)], reverse: reverse}
	if reverse {
		it.pos = len(it.entries) - 1
	}
	return it
}

// MemBufferIter walks a MemBuffer in key order.
type MemBufferIter struct {
	buf     *MemBuffer
	entries []uint32
	pos     int
	reverse bool
}

// Valid reports whether the iterator is positioned at a key.
func (it *MemBufferIter) Valid() bool { return it.pos >= 0 && it.pos < len(it.entries) }

func (it *MemBufferIter) entry() *memEntry { return &it.buf.entries[it.entries[it.pos]] }

// Key returns the current key.
func (it *MemBufferIter) Key() []byte { return it.buf.keyOf(it.entry()) }

// KeyString returns the current key without copying it.
func (it *MemBufferIter) KeyString() string {
	k := it.Key()
	return unsafe.String(unsafe.SliceData(k), len(k))
}

// Op returns the operation buffered for the current key.
func (it *MemBufferIter) Op() Op { return it.entry().op }

// Value returns the value buffered for the current key.
func (it *MemBufferIter) Value() []byte { return it.buf.valueOf(it.entry()) }

// Next moves to the next key.
func (it *MemBufferIter) Next() {
	if it.reverse {
		it.pos--
	} else {
		it.pos++
	}
}

// arenaAddr is a place in a memArena: chunk number << 32 | offset.
type arenaAddr uint64

const (
	firstChunk = 512
	maxChunk   = 4 << 20
)

// memArena hands out space for bytes appended into chunks, never to be
// written again. A chunk is never moved or reused, so slices of it stay
// valid for as long as someone holds them.
type memArena struct {
	chunks [][]byte
	// cur is the chunk being filled (a chunk of its own for a big value
	// does not become it); next is the size of the next chunk.
	cur  int
	next int
	// used is the number of bytes handed out.
	used int
}

// add copies p into the arena and returns its address.
func (a *memArena) add(p []byte) arenaAddr { return a.add2(p, nil) }

// add2 copies p then q into the arena, and returns p's address.
func (a *memArena) add2(p, q []byte) arenaAddr {
	n := len(p) + len(q)
	if n == 0 {
		return 0
	}
	a.used += n
	if len(a.chunks) > 0 {
		c := a.chunks[a.cur]
		if off := len(c); n <= cap(c)-off {
			c = append(append(c, p...), q...)
			a.chunks[a.cur] = c
			return arenaAddr(a.cur)<<32 | arenaAddr(off)
		}
	}
	if a.next == 0 {
		a.next = firstChunk
	}
	size := a.next
	for size < n && size < maxChunk {
		size *= 2
	}
	if len(a.chunks) >= math.MaxUint32 {
		panic("kv: MemBuffer arena too big")
	}
	if n > size/2 && len(a.chunks) > 0 {
		// A chunk of its own, so as not to waste what is left of cur.
		a.chunks = append(a.chunks, append(append(make([]byte, 0, n), p...), q...))
		return arenaAddr(len(a.chunks)-1) << 32
	}
	size = max(size, n)
	a.next = min(2*size, maxChunk)
	c := append(append(make([]byte, 0, size), p...), q...)
	a.chunks = append(a.chunks, c)
	a.cur = len(a.chunks) - 1
	return arenaAddr(a.cur) << 32
}

// bytes returns the n bytes at addr, capped so that appending to them
// copies.
func (a *memArena) bytes(addr arenaAddr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	c, off := a.chunks[addr>>32], uint32(addr)
	return c[off : off+n : off+n]
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
			c = bytes.Compare(it.snap.Key(), it.buf.Key())
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
