package mvcc

import (
	"bytes"
	"errors"
	"math"
	"slices"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/kv"
)

// This file reads versions: the newest visible version of a key at a
// timestamp, and the records that transaction commands inspect. Every read at
// ts first checks the key's lock: a prewrite lock with startTS <= ts belongs to
// a transaction that may still commit below ts, so the reader gets a
// *LockedError and must wait for or resolve that transaction, unless the
// lock's MinCommitTS is above ts (the transaction will commit above it) or
// the reader's ReadLocks say how the transaction ended.

// loadLock returns the lock on encKey, or nil if there is none.
func loadLock(r Reader, encKey []byte) (*Lock, error) {
	v, err := r.Get(CFLock, encKey)
	if errors.Is(err, ErrEngineNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := decodeLock(v)
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// ReadLocks names the transactions whose locks a read may pass, as a
// TiKV client learns them while resolving locks (Context.resolved_locks
// and committed_locks).
type ReadLocks struct {
	// Resolved: transactions rolled back, or known to commit above the
	// read's ts. Their locks are passed over.
	Resolved []uint64
	// Committed: transactions known to have committed at or below the
	// read's ts whose locks may not be resolved yet. A lock of theirs is
	// read as the key's newest version.
	Committed []uint64
}

// readLock decides how a read at ts treats l, the lock on encKey (nil:
// none): pass it, take the key's value from it (fromLock), or stop (a
// *LockedError).
func readLock(l *Lock, encKey []byte, ts uint64, rl *ReadLocks) (fromLock bool, err error) {
	if l == nil || !l.Kind.blocksReads() || l.StartTS > ts || l.MinCommitTS > ts {
		return false, nil
	}
	if rl != nil {
		if slices.Contains(rl.Resolved, l.StartTS) {
			return false, nil
		}
		if slices.Contains(rl.Committed, l.StartTS) {
			return true, nil
		}
	}
	key, err := decodeKey(encKey)
	if err != nil {
		return false, err
	}
	return false, &LockedError{Lock: l.Info(key)}
}

// lockValue returns, appended to buf, the value that prewrite lock l on
// encKey writes once committed: found is false for a deletion.
func lockValue(r Reader, l *Lock, encKey, buf []byte) (value []byte, found bool, err error) {
	if l.Kind != LockPut {
		return nil, false, nil
	}
	if l.HasShortValue {
		return append(buf, l.ShortValue...), true, nil
	}
	v, err := r.Get(CFDefault, versionKey(encKey, l.StartTS))
	if err != nil {
		return nil, false, errors.Join(errors.New("mvcc: prewritten value missing from CFDefault"), err)
	}
	return append(buf, v...), true, nil
}

// Get returns the value of key visible at ts: kv.ErrNotFound if there is
// none, a *LockedError if a lock hides it. With checkLocks false the lock is
// not read: for engines that never hold prewrite locks.
func Get(r Reader, key []byte, ts uint64, checkLocks bool) ([]byte, error) {
	return get(r, key, ts, checkLocks, nil)
}

// GetWith is Get that checks the lock and passes the locks rl names (rl
// may be nil).
func GetWith(r Reader, key []byte, ts uint64, rl *ReadLocks) ([]byte, error) {
	return get(r, key, ts, true, rl)
}

func get(r Reader, key []byte, ts uint64, checkLocks bool, rl *ReadLocks) ([]byte, error) {
	encKey := encodeKey(key)
	if checkLocks {
		l, err := loadLock(r, encKey)
		if err != nil {
			return nil, err
		}
		fromLock, err := readLock(l, encKey, ts, rl)
		if err != nil {
			return nil, err
		}
		if fromLock {
			v, found, err := lockValue(r, l, encKey, nil)
			if err == nil && !found {
				err = kv.ErrNotFound
			}
			return v, err
		}
	}
	it, err := keyVersions(r, CFWrite, encKey)
	if err != nil {
		return nil, err
	}
	v, found, err := visibleValue(r, it, encKey, ts, nil)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, kv.ErrNotFound
	}
	return v, nil
}

// keyVersions returns an iterator over the records of encKey in cf, as
// r.NewIter(cf, encKey, keyEnd(encKey)) does, but through r's VersionIter
// if r has one (see VersionReader). It moves forward only: Last, SeekLT
// and Prev are not for it.
func keyVersions(r Reader, cf CF, encKey []byte) (EngineIter, error) {
	if vr, ok := r.(VersionReader); ok {
		vi, err := vr.NewVersionIter(cf)
		if err != nil {
			return nil, err
		}
		if vi != nil {
			return &versionsOf{vi: vi, encKey: encKey}, nil
		}
	}
	return r.NewIter(cf, encKey, keyEnd(encKey))
}

// versionsOf is a VersionIter held to the versions of encKey.
type versionsOf struct {
	vi     VersionIter
	encKey []byte
	past   bool // a seek went past encKey's versions
}

func (v *versionsOf) First() bool { return v.SeekGE(v.encKey) }

func (v *versionsOf) SeekGE(key []byte) bool {
	switch {
	case bytes.Compare(key, v.encKey) <= 0:
		key = v.encKey
	case !bytes.HasPrefix(key, v.encKey):
		// Above encKey and not a version of it: past every version.
		v.past = true
		return false
	}
	v.past = false
	return v.vi.SeekVersion(key)
}

func (v *versionsOf) Next() bool    { return !v.past && v.vi.Next() }
func (v *versionsOf) Valid() bool   { return !v.past && v.vi.Valid() }
func (v *versionsOf) Key() []byte   { return v.vi.Key() }
func (v *versionsOf) Value() []byte { return v.vi.Value() }
func (v *versionsOf) Close() error  { return v.vi.Close() }

func (v *versionsOf) Last() bool         { panic("mvcc: a key's version iterator moves forward only") }
func (v *versionsOf) SeekLT([]byte) bool { panic("mvcc: a key's version iterator moves forward only") }
func (v *versionsOf) Prev() bool         { panic("mvcc: a key's version iterator moves forward only") }

// visibleValue positions it (bounded to encKey's versions, or positioned
// anywhere) at encKey's newest version at or below ts and returns that
// version's value, appended to buf. Rollback and lock records are skipped.
func visibleValue(r Reader, it EngineIter, encKey []byte, ts uint64, buf []byte) (value []byte, found bool, err error) {
	for ok := it.SeekGE(versionKey(encKey, ts)); ok; ok = it.Next() {
		k, _, err := splitVersionKey(it.Key())
		if err != nil {
			return nil, false, err
		}
		if !bytes.Equal(k, encKey) {
			return nil, false, nil
		}
		w, err := decodeWrite(it.Value())
		if err != nil {
			return nil, false, err
		}
		switch w.Kind {
		case WritePut:
			if w.HasShortValue {
				return append(buf, w.ShortValue...), true, nil
			}
			v, err := r.Get(CFDefault, versionKey(encKey, w.StartTS))
			if err != nil {
				return nil, false, errors.Join(errors.New("mvcc: committed value missing from CFDefault"), err)
			}
			return append(buf, v...), true, nil
		case WriteDelete:
			return nil, false, nil
		}
	}
	return nil, false, nil
}

// newerWrite returns the newest data-changing record of encKey committed
// after afterTS (its commit ts and record), or reports that transaction
// startTS was rolled back on this key. Records below startTS are not read:
// no transaction commits below its start. Rollback records of other
// transactions change no data and are skipped.
func newerWrite(r Reader, encKey []byte, startTS, afterTS uint64) (commitTS uint64, w Write, rolledBack bool, err error) {
	c, err := checkWrites(r, encKey, startTS, afterTS, false, false)
	return c.commitTS, c.w, c.rolledBack, err
}

// writeCheck is what checkWrites found on a key.
type writeCheck struct {
	commitTS   uint64 // newest data-changing commit after afterTS, or 0
	w          Write  // its record
	rolledBack bool   // transaction startTS was rolled back on the key
	exists     bool   // the newest committed version is a value
	// otherRollback: a rollback record of another transaction is at or
	// above startTS. Without one, and with no error, every record at or
	// above startTS is a commit at or below afterTS.
	otherRollback bool
	// newest is, with keepValue and exists, that value's record; its
	// ShortValue is a copy.
	newest Write
}

// checkWrites answers newerWrite's questions and, with wantExists,
// keyExists's too, in one pass over encKey's records: an insert needs
// both. With keepValue too, it keeps the record of the newest value.
func checkWrites(r Reader, encKey []byte, startTS, afterTS uint64, wantExists, keepValue bool) (c writeCheck, err error) {
	if !wantExists && noWritesSince(r, encKey, startTS) {
		// Every record it could find is at or above startTS.
		return c, nil
	}
	it, err := keyVersions(r, CFWrite, encKey)
	if err != nil {
		return c, err
	}
	defer it.Close()
	decided := !wantExists
	for ok := it.First(); ok; ok = it.Next() {
		_, ts, err := splitVersionKey(it.Key())
		if err != nil {
			return c, err
		}
		if ts < startTS && decided {
			break
		}
		rec, err := decodeWrite(it.Value())
		if err != nil {
			return c, err
		}
		if ts >= startTS {
			if rec.StartTS == startTS && rec.Kind == WriteRollback || ts == startTS && rec.OverlappedRollback {
				return writeCheck{rolledBack: true}, nil
			}
			if ts > afterTS && rec.Kind != WriteRollback {
				return writeCheck{commitTS: ts, w: rec}, nil
			}
			if rec.Kind == WriteRollback {
				c.otherRollback = true
			}
		}
		if !decided && (rec.Kind == WritePut || rec.Kind == WriteDelete) {
			decided, c.exists = true, rec.Kind == WritePut
			if keepValue && c.exists {
				c.newest = rec
				c.newest.ShortValue = bytes.Clone(rec.ShortValue)
			}
		}
	}
	return c, nil
}

// newestValue tells value the newest committed value of encKey (key).
func newestValue(r Reader, encKey, key []byte, value func(key, value []byte, found bool)) error {
	it, err := keyVersions(r, CFWrite, encKey)
	if err != nil {
		return err
	}
	v, found, err := visibleValue(r, it, encKey, math.MaxUint64, nil)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	value(key, v, found)
	return nil
}

// keyExists reports whether encKey's newest committed version is a value.
func keyExists(r Reader, encKey []byte) (bool, error) {
	it, err := keyVersions(r, CFWrite, encKey)
	if err != nil {
		return false, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		w, err := decodeWrite(it.Value())
		if err != nil {
			return false, err
		}
		switch w.Kind {
		case WritePut:
			return true, nil
		case WriteDelete:
			return false, nil
		}
	}
	return false, nil
}

// txnRecord finds the record that transaction startTS left on encKey: its
// commit (with the commit ts) or its rollback, which may be kept by
// another transaction's commit at startTS (see Write.OverlappedRollback).
// Records are searched only down to startTS, since no transaction commits
// below its start.
func txnRecord(r Reader, encKey []byte, startTS uint64) (w Write, commitTS uint64, found bool, err error) {
	it, err := keyVersions(r, CFWrite, encKey)
	if err != nil {
		return w, 0, false, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		_, ts, err := splitVersionKey(it.Key())
		if err != nil {
			return w, 0, false, err
		}
		if ts < startTS {
			break
		}
		rec, err := decodeWrite(it.Value())
		if err != nil {
			return w, 0, false, err
		}
		if rec.StartTS == startTS {
			return rec, ts, true, nil
		}
		if ts == startTS && rec.OverlappedRollback {
			return Write{Kind: WriteRollback, StartTS: startTS}, ts, true, nil
		}
	}
	return w, 0, false, nil
}

// overlapsRollback reports whether a commit at commitTS on encKey must
// keep a rollback: the version already holds another transaction's
// rollback record, or a commit that keeps one.
func overlapsRollback(r Reader, encKey []byte, commitTS uint64) (bool, error) {
	v, err := r.Get(CFWrite, versionKey(encKey, commitTS))
	if errors.Is(err, ErrEngineNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	w, err := decodeWrite(v)
	if err != nil {
		return false, err
	}
	return w.Kind == WriteRollback || w.OverlappedRollback, nil
}

// Scanner walks the keys visible at a timestamp in [start, end), forward
// or backward, merging the write and lock column families so that a
// blocking lock anywhere in the range is noticed, even on a key with no
// committed version.
type Scanner struct {
	r       Reader
	ts      uint64
	reverse bool
	rl      *ReadLocks
	writes  EngineIter
	locks   EngineIter

	valid      bool
	err        error
	key, value []byte
	cur        []byte // enc(key) of the key being examined
	seek       []byte // the key of the next seek, reused
	seekKeys   int    // keys the forward scan still moves past by SeekGE only (see forwardValue)

	// With a latest-version cache (see latest.go): a scan over cached
	// chunks walks their slots, and a scan that is not tells the cache how
	// crowded with versions its range was.
	cache      *latestCache
	start, end []byte // the scan's bounds, the caller's slices: only for heat
	crowded    int    // keys met with older versions to step over
	slots      []*slot
	pos        int    // index in slots of the next key, backward: one past it
	buf        []byte // a cached scan's values read from the engine
}

// NewScanner returns a scanner over [start, end) at ts; nil bounds are open.
// It is positioned at the first visible key (check Valid and Err). With
// checkLocks false it does not read locks (see Get).
func NewScanner(r Reader, start, end []byte, ts uint64, reverse, checkLocks bool) (*Scanner, error) {
	return newScanner(r, start, end, ts, reverse, checkLocks, nil)
}

func newScanner(r Reader, start, end []byte, ts uint64, reverse, checkLocks bool, rl *ReadLocks) (*Scanner, error) {
	var lo, hi []byte
	if start != nil {
		lo = encodeKey(start)
	}
	if end != nil {
		hi = encodeKey(end)
	}
	writes, err := r.NewIter(CFWrite, lo, hi)
	if err != nil {
		return nil, err
	}
	var locks EngineIter = noIter{}
	if checkLocks {
		locks, err = r.NewIter(CFLock, lo, hi)
		if err != nil {
			writes.Close()
			return nil, err
		}
	}
	s := &Scanner{r: r, ts: ts, reverse: reverse, rl: rl, writes: writes, locks: locks}
	if reverse {
		writes.Last()
		locks.Last()
	} else {
		writes.First()
		locks.First()
	}
	s.advance()
	return s, nil
}

// advance moves to the next visible key in the scan direction.
func (s *Scanner) advance() {
	s.valid = false
	if s.slots != nil {
		s.advanceCached()
		return
	}
	for s.err == nil {
		wValid, lValid := s.writes.Valid(), s.locks.Valid()
		if !wValid && !lValid {
			return
		}
		var wKey []byte
		if wValid {
			k, _, err := splitVersionKey(s.writes.Key())
			if err != nil {
				s.err = err
				return
			}
			wKey = k
		}
		// The next key in scan order is the nearer of the two positions.
		atLock, atWrite := lValid, wValid
		if lValid && wValid {
			c := bytes.Compare(s.locks.Key(), wKey)
			if s.reverse {
				c = -c
			}
			atLock, atWrite = c <= 0, c >= 0
		}
		if atLock {
			s.cur = append(s.cur[:0], s.locks.Key()...)
		} else {
			s.cur = append(s.cur[:0], wKey...)
		}
		var v []byte
		var found bool
		if atLock {
			l, err := decodeLock(s.locks.Value())
			if err != nil {
				s.err = err
				return
			}
			fromLock, err := readLock(&l, s.cur, s.ts, s.rl)
			if err == nil && fromLock {
				// Before the lock iterator moves: l points into it.
				v, found, err = lockValue(s.r, &l, s.cur, s.value[:0])
			}
			if s.err = err; err != nil {
				return
			}
			if s.reverse {
				s.locks.Prev()
			} else {
				s.locks.Next()
			}
			if fromLock {
				// The lock's transaction committed last: its value
				// hides the key's write records, which are stepped over.
				if atWrite && s.reverse {
					s.writes.SeekLT(s.cur)
				} else if atWrite {
					s.seek = append(s.seek[:0], s.cur...)
					s.seek[len(s.seek)-1]++ // keyEnd(s.cur)
					s.writes.SeekGE(s.seek)
				}
				if found {
					s.emit(v)
					return
				}
				continue
			}
		}
		if !atWrite {
			continue
		}
		var err error
		if s.reverse {
			v, found, err = visibleValue(s.r, s.writes, s.cur, s.ts, s.value[:0])
			s.writes.SeekLT(s.cur) // step before every version of the key
		} else {
			v, found, err = s.forwardValue()
		}
		if err != nil {
			s.err = err
			return
		}
		if found {
			s.emit(v)
			return
		}
	}
}

// emit makes s.cur, with value v, the scanner's current key.
func (s *Scanner) emit(v []byte) {
	_, key, err := codec.DecodeBytes(s.cur, s.key[:0])
	if err != nil {
		s.err = err
		return
	}
	s.key, s.value, s.valid = key, v, true
}

// maxSteps is how many records of one key a forward scan steps over with
// Next before it seeks past the rest.
const maxSteps = 3

// seekRun is how many keys a forward scan moves past by seeks, counting
// the key with more than maxSteps records that starts the run.
const seekRun = 8

// forwardValue reads the value of s.cur visible at s.ts, with s.writes at
// the key's newest record, and leaves s.writes at the next key's first
// record.
//
// Most keys have a few records, and Next over them is cheaper than a seek.
// A key with more records is skipped with SeekGE, and so are the keys
// after it, seekRun in all: once its previous move was a seek, Pebble turns a seek to
// a nearby later key into a few steps inside the memtable
// (TrySeekUsingNext), far cheaper than a Next through the merging iterator
// followed by a full seek, and hot keys (rows updated often between GC
// passes, each with many versions) tend to come in runs. Past the run the
// scan steps with Next again, which in sstables beats seeking key by key.
func (s *Scanner) forwardValue() (value []byte, found bool, err error) {
	it, steps := s.writes, 0
	if s.seekKeys > 0 {
		s.seekKeys--
	}
	// move positions it at target (a key after its position) or the first
	// record after it.
	move := func(target []byte) bool {
		if s.seekKeys == 0 {
			if steps++; steps <= maxSteps {
				return it.Next()
			}
			s.seekKeys = seekRun
		}
		return it.SeekGE(target)
	}
	for ok := it.Valid(); ok; {
		k, ts, err := splitVersionKey(it.Key())
		if err != nil {
			return nil, false, err
		}
		if !bytes.Equal(k, s.cur) {
			return nil, false, nil
		}
		if ts > s.ts {
			ok = move(s.seekKey(s.ts))
			continue
		}
		w, err := decodeWrite(it.Value())
		if err != nil {
			return nil, false, err
		}
		if w.Kind == WriteRollback || w.Kind == WriteLock {
			// Change no data: go on to the next older record (a seek here
			// must move forward, never back to a record already passed).
			if ts == 0 {
				break
			}
			ok = move(s.seekKey(ts - 1))
			continue
		}
		// The newest Put or Delete at or below s.ts decides.
		if w.Kind == WritePut {
			found = true
			if w.HasShortValue {
				value = append(s.value[:0], w.ShortValue...)
			} else if value, err = s.r.Get(CFDefault, versionKey(s.cur, w.StartTS)); err != nil {
				return nil, false, errors.Join(errors.New("mvcc: committed value missing from CFDefault"), err)
			}
		}
		break
	}
	// Step past the key's older versions. it is at the record that
	// decided: the key is crowded if another record of it follows. A key
	// in a run of seeks counts as crowded unseen (the seek passes its
	// records at once), as the key that began the run was.
	s.seek = append(s.seek[:0], s.cur...)
	s.seek[len(s.seek)-1]++ // keyEnd(s.cur)
	for n, ok := 0, it.Valid(); ok && bytes.Compare(it.Key(), s.seek) < 0; n++ {
		if n == 1 || (n == 0 && s.seekKeys > 0) {
			s.crowded++
		}
		ok = move(s.seek)
	}
	return value, found, nil
}

// seekKey returns versionKey(s.cur, ts) in the scanner's seek buffer.
func (s *Scanner) seekKey(ts uint64) []byte {
	s.seek = codec.EncodeUintDesc(append(s.seek[:0], s.cur...), ts)
	return s.seek
}

// Valid reports whether the scanner is at a key.
func (s *Scanner) Valid() bool { return s.valid && s.err == nil }

// Err is the error that stopped the scan (a *LockedError among others).
func (s *Scanner) Err() error { return s.err }

// Key is the current user key.
func (s *Scanner) Key() []byte { return s.key }

// Value is the current value.
func (s *Scanner) Value() []byte { return s.value }

// Next moves to the next visible key.
func (s *Scanner) Next() error {
	s.advance()
	return s.err
}

// Close releases the scanner's iterators.
func (s *Scanner) Close() error {
	if s.cache != nil && s.crowded >= crowdedKeys {
		s.cache.noteCrowded(s.r, s.start, s.end)
	}
	return errors.Join(s.writes.Close(), s.locks.Close())
}

// newCachedScanner returns a scanner at ts over slots, the cached keys of
// its range.
func newCachedScanner(r Reader, slots []*slot, ts uint64, reverse bool) *Scanner {
	s := &Scanner{r: r, ts: ts, reverse: reverse, writes: noIter{}, locks: noIter{}, slots: slots}
	if reverse {
		s.pos = len(slots)
	}
	s.advanceCached()
	return s
}

// advanceCached is advance over cached slots. A key whose cached record is
// newer than s.ts is read from the engine.
func (s *Scanner) advanceCached() {
	for s.err == nil {
		var sl *slot
		if s.reverse {
			if s.pos == 0 {
				return
			}
			s.pos--
			sl = s.slots[s.pos]
		} else {
			if s.pos == len(s.slots) {
				return
			}
			sl = s.slots[s.pos]
			s.pos++
		}
		var v []byte
		var found bool
		if rec := sl.rec.Load(); rec.commitTS <= s.ts {
			if rec.w.Kind == WriteDelete {
				continue
			}
			if rec.w.HasShortValue {
				// The cache's copy, which no one changes: a newer record
				// replaces rec whole. Copying it was 9% of
				// oltp_read_write's CPU.
				s.key, s.value, s.valid = sl.key, rec.w.ShortValue, true
				return
			}
			v, s.err = cachedValue(s.r, rec, sl.encKey, s.buf[:0])
			found = s.err == nil
		} else {
			if _, ok := s.writes.(noIter); ok {
				// Unbounded: the caller's bounds may have changed since.
				if s.writes, s.err = s.r.NewIter(CFWrite, nil, nil); s.err != nil {
					s.writes = noIter{}
					return
				}
			}
			v, found, s.err = visibleValue(s.r, s.writes, sl.encKey, s.ts, s.buf[:0])
		}
		if s.err == nil && found {
			s.buf = v
			s.key, s.value, s.valid = sl.key, v, true
			return
		}
	}
}

// cachedValue returns the value of a cached Put record of encKey, appended
// to buf.
func cachedValue(r Reader, rec *latestRec, encKey, buf []byte) ([]byte, error) {
	if rec.w.Kind != WritePut {
		return nil, kv.ErrNotFound
	}
	if rec.w.HasShortValue {
		return append(buf, rec.w.ShortValue...), nil
	}
	v, err := r.Get(CFDefault, versionKey(encKey, rec.w.StartTS))
	if err != nil {
		return nil, errors.Join(errors.New("mvcc: committed value missing from CFDefault"), err)
	}
	return append(buf, v...), nil
}

// noIter is an empty iterator.
type noIter struct{}

func (noIter) First() bool        { return false }
func (noIter) Last() bool         { return false }
func (noIter) SeekGE([]byte) bool { return false }
func (noIter) SeekLT([]byte) bool { return false }
func (noIter) Next() bool         { return false }
func (noIter) Prev() bool         { return false }
func (noIter) Valid() bool        { return false }
func (noIter) Key() []byte        { return nil }
func (noIter) Value() []byte      { return nil }
func (noIter) Close() error       { return nil }

// ScanKeys is a convenience for tests: every visible key and value.
func ScanKeys(r Reader, start, end []byte, ts uint64, reverse bool) (keys, values [][]byte, err error) {
	s, err := NewScanner(r, start, end, ts, reverse, true)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	for ; s.Valid(); s.Next() {
		keys = append(keys, slices.Clone(s.Key()))
		values = append(values, slices.Clone(s.Value()))
	}
	return keys, values, s.Err()
}

// ScanLocks returns, in key order, the locks on keys in [start, end) (nil
// bounds are open) that keep accepts, at most limit of them (0: all).
func ScanLocks(r Reader, start, end []byte, limit int, keep func(*LockInfo) bool) ([]LockInfo, error) {
	var lo, hi []byte
	if start != nil {
		lo = encodeKey(start)
	}
	if end != nil {
		hi = encodeKey(end)
	}
	it, err := r.NewIter(CFLock, lo, hi)
	if err != nil {
		return nil, err
	}
	var locks []LockInfo
	for ok := it.First(); ok && (limit == 0 || len(locks) < limit); ok = it.Next() {
		l, err := decodeLock(it.Value())
		if err != nil {
			it.Close()
			return nil, err
		}
		key, err := decodeKey(it.Key())
		if err != nil {
			it.Close()
			return nil, err
		}
		if info := l.Info(key); keep(&info) {
			locks = append(locks, info)
		}
	}
	return locks, it.Close()
}
