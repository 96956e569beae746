package executor

import (
	"sync"
	"sync/atomic"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/table"
)

// An UPDATE or DELETE plan keeps the table.Writers of its executions in a
// pool in the plan (planner.Update.Exec, planner.Delete.Exec), so that a
// cached plan's next execution reuses one instead of building it (the
// column ids, the maintained indexes and the row encoding's scratch
// buffer) again. A Writer serves one statement at a time: it is taken
// from the pool for the statement and put back at its end. The plan's
// table never changes (a schema change makes a new plan), so every Writer
// in the pool is one of that table.

// writerPool is the pool kept in a plan's Exec.
type writerPool struct{ sync.Pool }

// An INSERT plan keeps one spare Writer instead of a pool: the plans that
// run again (a prepared statement's, a text INSERT template's) serve one
// session, one statement at a time, and a plan that runs once (most
// INSERTs of a bulk load, INSERT ... SELECT) should not make a sync.Pool,
// whose first Put takes a global lock and allocates per P.
type spareWriter struct{ w atomic.Pointer[table.Writer] }

// takeSpareWriter returns the Writer of t spare in slot, or a new one.
func takeSpareWriter(slot *atomic.Value, t *catalog.TableInfo) *table.Writer {
	if s, ok := slot.Load().(*spareWriter); ok {
		if w := s.w.Swap(nil); w != nil && w.Table() == t {
			return w
		}
	}
	return table.NewWriter(t)
}

// putSpareWriter keeps w, which the statement is done with, spare in
// slot.
func putSpareWriter(slot *atomic.Value, w *table.Writer) {
	s, ok := slot.Load().(*spareWriter)
	if !ok {
		slot.CompareAndSwap(nil, &spareWriter{})
		s = slot.Load().(*spareWriter)
	}
	w.Reset()
	s.w.Store(w)
}

// takeWriter returns a Writer of t from the pool in slot, or a new one.
func takeWriter(slot *atomic.Value, t *catalog.TableInfo) *table.Writer {
	if p, ok := slot.Load().(*writerPool); ok {
		if w, ok := p.Get().(*table.Writer); ok && w.Table() == t {
			return w
		}
	}
	return table.NewWriter(t)
}

// putWriter puts w, which the statement is done with, in the pool in slot.
func putWriter(slot *atomic.Value, w *table.Writer) {
	p, ok := slot.Load().(*writerPool)
	if !ok {
		slot.CompareAndSwap(nil, &writerPool{})
		p = slot.Load().(*writerPool)
	}
	w.Reset()
	p.Put(w)
}
