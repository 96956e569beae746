package mvcc

import (
	"hash/maphash"
	"sync/atomic"
)

// recentWrites lets a conflict check skip the engine for a key that no
// record has been written to since the transaction started.
//
// Invariant: for every CFWrite record of a key with version ts in the
// engine, either ts < floor, or the key's bucket holds a value >= ts. So
// "bucket < ts and floor < ts" proves that no CFWrite record of the key
// at or above ts exists: none of its commits after ts, nor a rollback
// record at ts. Hash collisions only make a bucket larger: a check that
// cannot prove it asks the engine, as without the table.
//
// floor starts as Options.WriteFilterFloor, a timestamp above every
// version in the engine when the store opened. Store.write raises a key's
// bucket to the version of each CFWrite record in a batch before the
// engine applies it; ingestion raises the floor to its commit ts before
// it links its files in. Both happen under the latches of the keys
// written, and a checker holds the latch of the key it checks, so a
// record the checker must see was noted before its latch was taken.
//
// Only a store that sees every write of its engine may keep the table:
// the embedded store does; a region's follower, which applies writes
// decided elsewhere, does not. A storage node's regions share one table
// (WriteTable) and each keeps its own floor, which the node holds at
// math.MaxUint64 (nothing proven) while the region's replica does not lead,
// and sets, once it leads, to a timestamp above every record its former
// leaders could have written (see Options.WriteFloor).
type recentWrites struct {
	floor *atomic.Uint64
	*WriteTable
}

// WriteTable is the hashed table of recent writes (see recentWrites), for
// Stores over disjoint keys to share (Options.WriteTable). Safe for
// concurrent use.
type WriteTable struct {
	buckets []atomic.Uint64
}

// NewWriteTable returns an empty table.
func NewWriteTable() *WriteTable {
	return &WriteTable{buckets: make([]atomic.Uint64, recentBuckets)}
}

// recentBuckets is the table's size: 512 KiB. A bucket is raised by the
// commits of the last moments; a key's check meets a collision only if
// another key of its bucket was written since its transaction started,
// about (commits since then) / recentBuckets.
const recentBuckets = 1 << 16

var recentSeed = maphash.MakeSeed()

func newRecentWrites(floor uint64) *recentWrites {
	r := &recentWrites{floor: new(atomic.Uint64), WriteTable: NewWriteTable()}
	r.floor.Store(floor)
	return r
}

func (t *WriteTable) bucket(encKey []byte) *atomic.Uint64 {
	return &t.buckets[maphash.Bytes(recentSeed, encKey)&(recentBuckets-1)]
}

// note records a CFWrite record of encKey at version ts.
func (r *recentWrites) note(encKey []byte, ts uint64) {
	raise(r.bucket(encKey), ts)
}

// raiseFloor records records of any key at versions up to ts.
func (r *recentWrites) raiseFloor(ts uint64) { raise(r.floor, ts) }

func raise(a *atomic.Uint64, ts uint64) {
	for {
		old := a.Load()
		if old >= ts || a.CompareAndSwap(old, ts) {
			return
		}
	}
}

// noneSince reports whether encKey surely has no CFWrite record at or
// above ts.
func (r *recentWrites) noneSince(encKey []byte, ts uint64) bool {
	return r.floor.Load() < ts && r.bucket(encKey).Load() < ts
}

// noteBatch notes the CFWrite records b puts. Deletions add no record
// and range deletions remove records, so neither is noted.
func (r *recentWrites) noteBatch(b *Batch) {
	for i := range b.Entries {
		e := &b.Entries[i]
		if e.CF != CFWrite || e.Delete || e.End != nil {
			continue
		}
		encKey, ts, err := splitVersionKey(e.Key)
		if err != nil {
			// Not a version key: nothing a check could find by it, but
			// be safe and treat everything as written.
			r.raiseFloor(^uint64(0))
			continue
		}
		r.note(encKey, ts)
	}
}

// filteredReader is a Reader that knows some keys' recent writes (see
// recentWrites); checkWrites asks it before it reads the engine.
type filteredReader struct {
	Reader
	recent *recentWrites
}

// writeFilter is implemented by Readers that can prove a key has no
// CFWrite record at or above a timestamp.
type writeFilter interface {
	noWritesSince(encKey []byte, ts uint64) bool
}

func (f filteredReader) noWritesSince(encKey []byte, ts uint64) bool {
	return f.recent.noneSince(encKey, ts)
}

// NewVersionIter implements VersionReader for the checks that do read
// the engine: the wrapped Reader's VersionIter, nil if it has none.
func (f filteredReader) NewVersionIter(cf CF) (VersionIter, error) {
	if vr, ok := f.Reader.(VersionReader); ok {
		return vr.NewVersionIter(cf)
	}
	return nil, nil
}

// noWritesSince asks r, if it is a writeFilter.
func noWritesSince(r Reader, encKey []byte, ts uint64) bool {
	f, ok := r.(writeFilter)
	return ok && f.noWritesSince(encKey, ts)
}
