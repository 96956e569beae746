package mvcc

import (
	"bytes"
)

// GCStats counts what a GC pass did.
type GCStats struct {
	Keys           int // user keys examined
	DeletedWrites  int // write records removed
	DeletedDefault int // CFDefault values removed
}

// gcBatchSize is the number of deletions GC hands to flush at a time.
const gcBatchSize = 1024

// GC removes the versions no reader at or above safePoint can see. For each
// key it keeps every record committed after safePoint and the newest Put at
// or below it; below that Put (or from a Delete at or below safePoint
// down), everything goes, as do rollback and lock records at or below
// safePoint. Deletions are handed to flush in batches.
//
// GC reads through a consistent iterator and deletes only versions at or
// below safePoint, so it may run concurrently with commits, which write
// versions above it, as long as no transaction reads below safePoint.
func GC(r Reader, safePoint uint64, flush func(*Batch) error) (GCStats, error) {
	return GCRange(r, nil, nil, safePoint, flush)
}

// GCRange is GC over the keys in [start, end) (nil bounds are open): a
// storage node collects each region's range on its own.
func GCRange(r Reader, start, end []byte, safePoint uint64, flush func(*Batch) error) (GCStats, error) {
	var st GCStats
	var lo, hi []byte
	if start != nil {
		lo = encodeKey(start)
	}
	if end != nil {
		hi = encodeKey(end)
	}
	it, err := r.NewIter(CFWrite, lo, hi)
	if err != nil {
		return st, err
	}
	defer it.Close()

	var (
		b       Batch
		cur     []byte
		settled bool // cur's newest version at or below safePoint was seen
	)
	for ok := it.First(); ok; ok = it.Next() {
		encKey, ts, err := splitVersionKey(it.Key())
		if err != nil {
			return st, err
		}
		if !bytes.Equal(encKey, cur) {
			cur, settled = append(cur[:0], encKey...), false
			st.Keys++
		}
		if ts > safePoint {
			continue
		}
		w, err := decodeWrite(it.Value())
		if err != nil {
			return st, err
		}
		if !settled && w.Kind == WritePut {
			settled = true
			continue
		}
		if w.Kind == WriteDelete {
			settled = true
		}
		b.Del(CFWrite, append([]byte(nil), it.Key()...))
		st.DeletedWrites++
		if w.Kind == WritePut && !w.HasShortValue {
			b.Del(CFDefault, versionKey(cur, w.StartTS))
			st.DeletedDefault++
		}
		if b.Len() >= gcBatchSize {
			if err := flush(&b); err != nil {
				return st, err
			}
			b = Batch{}
		}
	}
	if b.Len() > 0 {
		if err := flush(&b); err != nil {
			return st, err
		}
	}
	return st, nil
}

// DeleteRange removes every record of every user key in [start, end) from
// all three column families, as one batch. It ignores MVCC: the caller
// guarantees no transaction can read the range any more.
func DeleteRange(b *Batch, start, end []byte) {
	lo, hi := encodeKey(start), encodeKey(end)
	for _, cf := range []CF{CFDefault, CFLock, CFWrite} {
		b.DelRange(cf, lo, hi)
	}
}

// CountVersions counts the user keys in [start, end) and their write
// records (committed versions, deletes, rollbacks), for a store's debug
// endpoint: GC's effect, seen from outside.
func CountVersions(r Reader, start, end []byte) (keys, versions int, err error) {
	var hi []byte
	if end != nil {
		hi = encodeKey(end)
	}
	it, err := r.NewIter(CFWrite, encodeKey(start), hi)
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	var cur []byte
	for ok := it.First(); ok; ok = it.Next() {
		encKey, _, err := splitVersionKey(it.Key())
		if err != nil {
			return keys, versions, err
		}
		if !bytes.Equal(encKey, cur) {
			cur = append(cur[:0], encKey...)
			keys++
		}
		versions++
	}
	return keys, versions, nil
}
