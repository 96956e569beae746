package mvcc

import (
	"context"
	"errors"
)

// CF names a column family: one of three disjoint keyspaces in one engine.
type CF byte

// The column families of Percolator. Their key layouts are drawn in keys.go.
const (
	// CFDefault holds values too large to inline in their write record.
	CFDefault CF = 'd'
	// CFLock holds at most one lock per user key.
	CFLock CF = 'l'
	// CFWrite holds commit and rollback records, newest first per key.
	CFWrite CF = 'w'
)

func (c CF) String() string {
	switch c {
	case CFDefault:
		return "default"
	case CFLock:
		return "lock"
	case CFWrite:
		return "write"
	}
	return "cf?"
}

// ErrEngineNotFound is returned by Reader.Get for an absent key.
var ErrEngineNotFound = errors.New("mvcc: engine key not found")

// Reader reads an engine's latest state. Implementations must be safe for
// concurrent use.
type Reader interface {
	// Get returns a copy of the value of key in cf, or ErrEngineNotFound.
	Get(cf CF, key []byte) ([]byte, error)
	// NewIter returns an iterator over the keys of cf in [lower, upper). A
	// nil upper bound is open. The iterator sees a consistent view as of
	// its creation.
	NewIter(cf CF, lower, upper []byte) (EngineIter, error)
}

// EngineIter walks one column family in key order. Key and Value are valid
// until the next positioning call.
type EngineIter interface {
	First() bool
	Last() bool
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
	Next() bool
	Prev() bool
	Valid() bool
	Key() []byte
	Value() []byte
	// Close releases the iterator and reports any error met while iterating.
	Close() error
}

// VersionReader is implemented by Readers that read the versions of one
// key faster than a range read does: Pebble with bloom filters built on
// user keys (store/pebble's Comparer) reads only the tables that may hold
// the key. The point reads (Get, the conflict and existence checks of
// prewrite and one-phase commit) use it when it is there.
type VersionReader interface {
	// NewVersionIter returns an iterator over cf (CFWrite or CFDefault) to
	// read one key's versions at a time, or nil if the engine knows no
	// faster way than NewIter bounded to the key's versions (then callers
	// use that). It sees a consistent view as of its creation.
	NewVersionIter(cf CF) (VersionIter, error)
}

// VersionIter reads the versions of one key at a time (see
// VersionReader). Key and Value are valid until the next positioning call.
type VersionIter interface {
	// SeekVersion positions the iterator at the first record at or after
	// key that is a version of enc(k), where key is enc(k) (for its newest
	// version) or enc(k) ++ ^ts. Next then moves over the versions of
	// enc(k) only: past the oldest the iterator is invalid.
	SeekVersion(key []byte) bool
	Next() bool
	Valid() bool
	Key() []byte
	Value() []byte
	// Close releases the iterator and reports any error met while iterating.
	Close() error
}

// Engine is the ordered store the MVCC logic runs over: an in-memory one in
// tests, Pebble in the embedded store, a Raft-applied Pebble in a cluster.
type Engine interface {
	Reader
	// Write applies the batch atomically. With sync, it returns only once
	// the batch is durable.
	Write(b *Batch, sync bool) error
}

// Compacter is implemented by engines that can rewrite a key range on
// disk (an LSM's manual compaction), so that the space of what a range
// deletion covered comes back: a deletion alone only hides the keys until
// compaction reaches them. CompactRange compacts the keys of cf in
// [lower, upper); it may take long, and returns ctx's error if ctx ends
// first. The data it keeps is unchanged.
type Compacter interface {
	CompactRange(ctx context.Context, cf CF, lower, upper []byte) error
}

// Batch collects writes to apply atomically.
type Batch struct {
	Entries []BatchEntry
}

// BatchEntry is one write in a Batch: a put, a delete (Delete set), or a
// deletion of every key in [Key, End) (End set).
type BatchEntry struct {
	CF     CF
	Key    []byte
	Value  []byte
	Delete bool
	End    []byte
}

// Put adds a write of value to key in cf.
func (b *Batch) Put(cf CF, key, value []byte) {
	b.Entries = append(b.Entries, BatchEntry{CF: cf, Key: key, Value: value})
}

// Del adds a deletion of key in cf.
func (b *Batch) Del(cf CF, key []byte) {
	b.Entries = append(b.Entries, BatchEntry{CF: cf, Key: key, Delete: true})
}

// DelRange adds a deletion of every key of cf in [start, end).
func (b *Batch) DelRange(cf CF, start, end []byte) {
	b.Entries = append(b.Entries, BatchEntry{CF: cf, Key: start, End: end})
}

// Len is the number of writes in the batch.
func (b *Batch) Len() int { return len(b.Entries) }

// Reset empties the batch for reuse.
func (b *Batch) Reset() { b.Entries = b.Entries[:0] }
