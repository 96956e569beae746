package pebble

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2"
)

// The engine keeps the version iterators its readers have closed, and
// hands them out again while the database's data has not changed since
// they were made.
//
// A Pebble iterator reads the database as it was when the iterator was
// made, and Pebble v2 cannot bring one up to date. Making one, and
// opening each level's table for its first seek (which a reused iterator
// skips while its next seek stays in the same tables), was a tenth to a
// fifth of a point read's CPU (BenchmarkPointRead, 400k keys over L0, L5
// and L6: 7.4 against 6.6 µs present, 5.7 against 4.9 µs absent, medians
// of 8 alternated runs on a loaded machine; docs/cluster-bench/README.md).
// So an iterator is reused only while dataGen is what it was
// when the iterator was made: every change to the data (Write, ClearCF,
// Ingest here; raftstore's applies through DataChanged) adds one to it
// once the change is visible and before its writer returns or tells
// anyone, so that a reader that may see the change (it started after the
// write returned, or learned of it: a latch released, an in-memory lock
// settled, an applied index published) reads dataGen after the addition
// and makes a new iterator.
//
// An idle iterator pins the memtables and tables it reads. Those of an
// older dataGen are closed by the next reader that looks for one and by a
// sweep every idleSweepInterval; at most maxIdleIters are kept.

const (
	maxIdleIters      = 8
	idleSweepInterval = time.Second
)

// idleIter is a closed version iterator kept for reuse.
type idleIter struct {
	it  *pebble.Iterator
	cf  mvcc.CF
	gen uint64
}

// versionIters is an engine's idle version iterators (see above).
type versionIters struct {
	dataGen atomic.Uint64
	made    atomic.Int64 // iterators made (for tests)
	reused  atomic.Int64 // idle iterators handed out again (for tests)

	mu     sync.Mutex
	idle   []idleIter // made under dataGen values in increasing order
	closed bool       // the engine is closing: keep nothing
	stop   chan struct{}
	done   chan struct{}
}

// DataChanged tells the engine that the database's data has changed
// through a batch, ingestion or deletion that the caller committed on
// DB() itself (raftstore's applies): call it once the change is visible,
// before anyone learns of it. Changes made through Write, ClearCF and
// Ingest call it themselves. Writes outside the column families' keys
// (raft logs and states) need not call it.
func (e *Engine) DataChanged() { e.iters.dataGen.Add(1) }

// takeIdle returns an idle iterator of cf made under gen, closing the
// idle iterators of older generations on the way; nil if there is none.
func (v *versionIters) takeIdle(cf mvcc.CF, gen uint64) *pebble.Iterator {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.dropStaleLocked(gen)
	for i := len(v.idle) - 1; i >= 0; i-- {
		if v.idle[i].cf == cf {
			it := v.idle[i].it
			v.idle = append(v.idle[:i], v.idle[i+1:]...)
			v.reused.Add(1)
			return it
		}
	}
	return nil
}

// dropStaleLocked closes the idle iterators not made under gen.
func (v *versionIters) dropStaleLocked(gen uint64) {
	n := 0
	for _, ii := range v.idle {
		if ii.gen == gen {
			v.idle[n] = ii
			n++
			continue
		}
		_ = ii.it.Close()
	}
	clear(v.idle[n:])
	v.idle = v.idle[:n]
}

// putIdle keeps it for reuse, if it was made under the current data
// generation and there is room; it reports whether it kept it.
func (v *versionIters) putIdle(it *pebble.Iterator, cf mvcc.CF, gen uint64) bool {
	if it.Error() != nil || v.dataGen.Load() != gen {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed || len(v.idle) >= maxIdleIters {
		return false
	}
	v.idle = append(v.idle, idleIter{it: it, cf: cf, gen: gen})
	return true
}

// sweep closes stale idle iterators every idleSweepInterval until stop.
func (v *versionIters) sweep() {
	defer close(v.done)
	t := time.NewTicker(idleSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			gen := v.dataGen.Load()
			v.mu.Lock()
			v.dropStaleLocked(gen)
			v.mu.Unlock()
		}
	}
}

// start starts the sweep.
func (v *versionIters) start() {
	v.stop, v.done = make(chan struct{}), make(chan struct{})
	go v.sweep()
}

// close stops the sweep and closes every idle iterator; iterators closed
// after it are closed, not kept.
func (v *versionIters) close() {
	if v.stop != nil {
		close(v.stop)
		<-v.done
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	for _, ii := range v.idle {
		_ = ii.it.Close()
	}
	v.idle = nil
}
