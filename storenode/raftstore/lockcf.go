package raftstore

import (
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2"
)

// lockCF knows, at times, that the store's lock column family in Pebble
// holds no lock at all, so that a read's lock lookup (every point get
// looks one up) can skip Pebble: a Get there for a key without a lock
// searches every memtable and level, a fifth of a leader's CPU under
// point selects.
//
// The invariant: while empty() is true, no lock is in Pebble. Every write
// that may add one (an applied batch holding a lock put, an ingested
// snapshot) calls begin before Pebble can show it and end after; a scan
// that found no lock while no such write was in progress, and none began
// during the scan, records the count of writes it saw (check). empty() is
// that record being the current count. Locks kept in memory (memlocks.go)
// are not in Pebble and are looked up before it. Deleting locks needs no
// call: a stale "not empty" only costs the lookup.
//
// Safe for concurrent use; check runs on one goroutine at a time.
type lockCF struct {
	writing atomic.Int64  // writes begun and not ended
	writes  atomic.Uint64 // writes ever begun; starts at 1
	emptyAt atomic.Uint64 // writes when a scan last found no lock; 0: never
}

func newLockCF() *lockCF {
	l := &lockCF{}
	l.writes.Store(1)
	return l
}

// begin is called before a write that may add a lock reaches Pebble.
// writing goes up first: a check that reads writes before this begin
// then sees writing above zero, or, reading it after end, finds the lock.
func (l *lockCF) begin() {
	l.writing.Add(1)
	l.writes.Add(1)
}

// end is called once the write begun is in Pebble (or failed).
func (l *lockCF) end() { l.writing.Add(-1) }

// empty reports whether Pebble holds no lock.
func (l *lockCF) empty() bool { return l.emptyAt.Load() == l.writes.Load() }

// check records that Pebble holds no lock if scan, which reports whether
// it found one, finds none while no write that may add one runs.
func (l *lockCF) check(scan func() (bool, error)) {
	w := l.writes.Load()
	if l.emptyAt.Load() == w || l.writing.Load() != 0 {
		return
	}
	if found, err := scan(); err != nil || found {
		return
	}
	if l.writes.Load() == w {
		l.emptyAt.Store(w)
	}
}

// lockCFCheckInterval is how often the store looks for an empty lock
// column family after a write that may have added a lock.
const lockCFCheckInterval = 100 * time.Millisecond

// checkLockCF runs lockCF.check every lockCFCheckInterval until the store
// stops, then closes s.lockCFDone.
func (s *Store) checkLockCF() {
	defer close(s.lockCFDone)
	t := time.NewTicker(lockCFCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopCh:
			return
		case <-t.C:
		}
		s.lockCF.check(s.lockCFFound)
	}
}

// lockCFFound reports whether Pebble holds a lock.
func (s *Store) lockCFFound() (bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{byte(mvcc.CFLock)}, UpperBound: []byte{byte(mvcc.CFLock) + 1}})
	if err != nil {
		return false, err
	}
	found := it.First()
	return found, it.Close()
}
