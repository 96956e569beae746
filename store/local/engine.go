package local

import (
	"context"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/basalt-db/basalt/store/pebble"
)

// engine is the embedded store's mvcc.Engine: CFDefault and CFWrite in the
// Pebble database, CFLock in memory (see lockTable).
type engine struct {
	db    *pebble.Engine
	locks *lockTable
}

var (
	_ mvcc.Engine        = (*engine)(nil)
	_ mvcc.Compacter     = (*engine)(nil)
	_ mvcc.VersionReader = (*engine)(nil)
)

// Get implements mvcc.Reader.
func (e *engine) Get(cf mvcc.CF, key []byte) ([]byte, error) {
	if cf == mvcc.CFLock {
		v, ok := e.locks.get(key)
		if !ok {
			return nil, mvcc.ErrEngineNotFound
		}
		return v, nil
	}
	return e.db.Get(cf, key)
}

// NewIter implements mvcc.Reader.
func (e *engine) NewIter(cf mvcc.CF, lower, upper []byte) (mvcc.EngineIter, error) {
	if cf == mvcc.CFLock {
		return e.locks.iter(lower, upper), nil
	}
	return e.db.NewIter(cf, lower, upper)
}

// NewVersionIter implements mvcc.VersionReader for the column families in
// Pebble.
func (e *engine) NewVersionIter(cf mvcc.CF) (mvcc.VersionIter, error) {
	if cf == mvcc.CFLock {
		return nil, nil
	}
	return e.db.NewVersionIter(cf)
}

// CompactRange implements mvcc.Compacter; the lock column family, in
// memory, needs none.
func (e *engine) CompactRange(ctx context.Context, cf mvcc.CF, lower, upper []byte) error {
	if cf == mvcc.CFLock {
		return nil
	}
	return e.db.CompactRange(ctx, cf, lower, upper)
}

// Write implements mvcc.Engine. Lock records change in memory, after the
// rest of the batch is written: callers hold the latches of the keys, so
// nobody sees the state in between.
func (e *engine) Write(b *mvcc.Batch, sync bool) error {
	locks := 0
	for i := range b.Entries {
		if b.Entries[i].CF == mvcc.CFLock {
			locks++
		}
	}
	if locks == 0 {
		return e.db.Write(b, sync)
	}
	if locks < len(b.Entries) {
		rest := mvcc.Batch{Entries: make([]mvcc.BatchEntry, 0, len(b.Entries)-locks)}
		for _, ent := range b.Entries {
			if ent.CF != mvcc.CFLock {
				rest.Entries = append(rest.Entries, ent)
			}
		}
		if err := e.db.Write(&rest, sync); err != nil {
			return err
		}
	}
	e.locks.apply(b.Entries)
	return nil
}

// Ingest implements mvcc.Ingester.
func (e *engine) Ingest(ctx context.Context, paths []string) error {
	return e.db.Ingest(ctx, paths)
}
