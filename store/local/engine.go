package local

import (
	"errors"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2"
)

// pebbleEngine is mvcc.Engine over one Pebble DB. The three column families
// share the DB's keyspace, told apart by a one-byte prefix (the CF's own
// byte value):
//
//	'd' ++ key   CFDefault
//	'l' ++ key   CFLock (only in data directories of older versions)
//	'w' ++ key   CFWrite
//
// The lock column family lives in memory (see lockTable).
type pebbleEngine struct {
	db    *pebble.DB
	locks *lockTable
}

var _ mvcc.Engine = (*pebbleEngine)(nil)

func cfKey(cf mvcc.CF, key []byte) []byte {
	k := make([]byte, 1+len(key))
	k[0] = byte(cf)
	copy(k[1:], key)
	return k
}

// cfBounds returns the Pebble bounds of [lower, upper) in cf; a nil upper
// bound stops at the end of the column family.
func cfBounds(cf mvcc.CF, lower, upper []byte) (lo, hi []byte) {
	lo = cfKey(cf, lower)
	if upper == nil {
		hi = []byte{byte(cf) + 1}
	} else {
		hi = cfKey(cf, upper)
	}
	return lo, hi
}

// Get implements mvcc.Reader.
func (e *pebbleEngine) Get(cf mvcc.CF, key []byte) ([]byte, error) {
	if cf == mvcc.CFLock {
		v, ok := e.locks.get(key)
		if !ok {
			return nil, mvcc.ErrEngineNotFound
		}
		return v, nil
	}
	v, closer, err := e.db.Get(cfKey(cf, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, mvcc.ErrEngineNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

// NewIter implements mvcc.Reader.
func (e *pebbleEngine) NewIter(cf mvcc.CF, lower, upper []byte) (mvcc.EngineIter, error) {
	if cf == mvcc.CFLock {
		return e.locks.iter(lower, upper), nil
	}
	lo, hi := cfBounds(cf, lower, upper)
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	return &pebbleIter{it: it, cf: cf}, nil
}

// Write implements mvcc.Engine. Concurrent synced writes share WAL syncs:
// Pebble's commit pipeline groups them. Lock records change in memory,
// after the rest of the batch is written: callers hold the latches of
// the keys, so nobody sees the state in between.
func (e *pebbleEngine) Write(b *mvcc.Batch, sync bool) error {
	pb := e.db.NewBatch()
	defer pb.Close()
	buf := make([]byte, 0, 64)
	var locks []lockWrite
	for _, ent := range b.Entries {
		if ent.CF == mvcc.CFLock {
			locks = append(locks, lockWrite{key: ent.Key, value: ent.Value, end: ent.End, delete: ent.Delete})
			continue
		}
		buf = append(append(buf[:0], byte(ent.CF)), ent.Key...)
		var err error
		if ent.End != nil {
			if err := pb.DeleteRange(buf, cfKey(ent.CF, ent.End), nil); err != nil {
				return err
			}
			continue
		}
		if ent.Delete {
			err = pb.Delete(buf, nil)
		} else {
			err = pb.Set(buf, ent.Value, nil)
		}
		if err != nil {
			return err
		}
	}
	if !pb.Empty() {
		opts := pebble.NoSync
		if sync {
			opts = pebble.Sync
		}
		if err := pb.Commit(opts); err != nil {
			return err
		}
	}
	if len(locks) > 0 {
		e.locks.apply(locks)
	}
	return nil
}

// clearCF deletes every key of cf.
func (e *pebbleEngine) clearCF(cf mvcc.CF, sync bool) error {
	opts := pebble.NoSync
	if sync {
		opts = pebble.Sync
	}
	return e.db.DeleteRange([]byte{byte(cf)}, []byte{byte(cf) + 1}, opts)
}

// pebbleIter strips the column family prefix from a Pebble iterator.
type pebbleIter struct {
	it  *pebble.Iterator
	cf  mvcc.CF
	buf []byte
}

func (i *pebbleIter) seekKey(key []byte) []byte {
	i.buf = append(append(i.buf[:0], byte(i.cf)), key...)
	return i.buf
}

func (i *pebbleIter) First() bool            { return i.it.First() }
func (i *pebbleIter) Last() bool             { return i.it.Last() }
func (i *pebbleIter) SeekGE(key []byte) bool { return i.it.SeekGE(i.seekKey(key)) }
func (i *pebbleIter) SeekLT(key []byte) bool { return i.it.SeekLT(i.seekKey(key)) }
func (i *pebbleIter) Next() bool             { return i.it.Next() }
func (i *pebbleIter) Prev() bool             { return i.it.Prev() }
func (i *pebbleIter) Valid() bool            { return i.it.Valid() }
func (i *pebbleIter) Key() []byte            { return i.it.Key()[1:] }
func (i *pebbleIter) Value() []byte          { return i.it.Value() }
func (i *pebbleIter) Close() error           { return i.it.Close() }
