// Package pebble is store/mvcc's Engine over one Pebble database: the
// engine the embedded store (store/local) opens, and the one a storage
// node will open for its regions' data.
//
// The three column families share the database's keyspace, told apart by
// a one-byte prefix (the CF's own byte value):
//
//	'd' ++ key   CFDefault
//	'l' ++ key   CFLock
//	'w' ++ key   CFWrite
//
// Keys are ordered bytewise. Comparer (comparer.go) splits a versioned
// key into its user key and timestamp, so that the bloom filters know user
// keys and a point read seeks with SeekPrefixGE (Engine.NewVersionIter);
// a database created before keeps Pebble's default comparer.
//
// Every file of the database goes through Options.FS, so that tests can
// inject disk faults.
package pebble

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Engine is mvcc.Engine over one Pebble database. It is safe for
// concurrent use; Close must come after every other call has returned.
type Engine struct {
	db  *pebble.DB
	dir string
	fs  vfs.FS
	// opts are the options the database was opened with: files written
	// for ingestion (ingest.go) take their block sizes and filters.
	opts *pebble.Options
	// prefixSeeks: the database's comparer is Comparer, so its filters
	// are built on user keys and a key's versions can be read with
	// SeekPrefixGE (NewVersionIter).
	prefixSeeks bool
	// syncing counts the synced writes in flight (Write), and arrived
	// those that ever entered Write, for Options.WALMinSyncInterval.
	syncing, arrived *atomic.Int64
}

var (
	_ mvcc.Engine        = (*Engine)(nil)
	_ mvcc.Compacter     = (*Engine)(nil)
	_ mvcc.VersionReader = (*Engine)(nil)
)

// Metrics are Pebble's metrics.
type Metrics = pebble.Metrics

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
func (e *Engine) Get(cf mvcc.CF, key []byte) ([]byte, error) {
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
func (e *Engine) NewIter(cf mvcc.CF, lower, upper []byte) (mvcc.EngineIter, error) {
	lo, hi := cfBounds(cf, lower, upper)
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	return &iter{it: it, cf: cf}, nil
}

// cfSpans are the Pebble bounds of each column family, [cf, cf+1).
var cfSpans = func() (s [256][2][]byte) {
	for i := range s {
		s[i] = [2][]byte{{byte(i)}, {byte(i + 1)}}
	}
	return s
}()

// NewVersionIter implements mvcc.VersionReader. In a database with
// Comparer, the iterator's seeks are Pebble's SeekPrefixGE: a table whose
// bloom filter rules the key out is not read. In one created with
// Pebble's default comparer it returns nil, and callers use bounded
// iterators, as before.
//
// A filter built on whole keys is never consulted with a prefix: every
// table of a database is written with the database's comparer (Pebble
// checks the comparer's name in the manifest when it opens the database,
// and in each table, ingested ones included, when it opens the table),
// its filter holds what that comparer's Split returns, and only a
// database with Comparer gets prefix seeks. Get's lookups (pebble.DB.Get)
// split the key with the same comparer.
func (e *Engine) NewVersionIter(cf mvcc.CF) (mvcc.VersionIter, error) {
	if !e.prefixSeeks || cf == mvcc.CFLock {
		return nil, nil
	}
	span := &cfSpans[cf]
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: span[0], UpperBound: span[1]})
	if err != nil {
		return nil, err
	}
	vi := &versionIter{iter: iter{it: it, cf: cf}}
	vi.buf = vi.arr[:0]
	return vi, nil
}

// versionIter is mvcc.VersionIter over a Pebble iterator of one column
// family. arr holds the seek key of a point read (a row key or an index
// entry and its timestamp, with the CF byte), so that it needs no
// allocation of its own.
type versionIter struct {
	iter
	arr [64]byte
}

// SeekVersion implements mvcc.VersionIter. Comparer splits cf ++ key
// into cf ++ enc(k) and the timestamp.
func (i *versionIter) SeekVersion(key []byte) bool { return i.it.SeekPrefixGE(i.seekKey(key)) }

// Write implements mvcc.Engine: the batch is one Pebble batch. Concurrent
// synced writes share WAL syncs: Pebble's commit pipeline groups them.
//
// Pebble cannot go on after a failed WAL write or sync: it calls
// Logger.Fatalf, so Write panics. The batch may by then be in the
// memtable, where readers see it, and may or may not survive a restart.
func (e *Engine) Write(b *mvcc.Batch, sync bool) error {
	pb := e.newBatch(b)
	defer pb.Close()
	buf := make([]byte, 0, 64)
	for _, ent := range b.Entries {
		buf = append(append(buf[:0], byte(ent.CF)), ent.Key...)
		var err error
		switch {
		case ent.End != nil:
			err = pb.DeleteRange(buf, cfKey(ent.CF, ent.End), nil)
		case ent.Delete:
			err = pb.Delete(buf, nil)
		default:
			err = pb.Set(buf, ent.Value, nil)
		}
		if err != nil {
			return err
		}
	}
	if pb.Empty() {
		return nil
	}
	if sync {
		e.syncing.Add(1)
		e.arrived.Add(1)
		defer e.syncing.Add(-1)
	}
	return pb.Commit(writeOptions(sync))
}

// newBatch returns a Pebble batch for b. A big one (a bulk INSERT's
// commit: thousands of keys, a megabyte or more) gets its whole size at
// once, where a pooled batch would grow by doubling from 1 KiB, copying
// its contents at each step.
func (e *Engine) newBatch(b *mvcc.Batch) *pebble.Batch {
	if len(b.Entries) < 256 {
		return e.db.NewBatch()
	}
	// Each record: kind, the key and value lengths (varints of at most
	// 5 bytes), the CF byte, the key and the value; 12 bytes of header.
	size := 12
	for i := range b.Entries {
		ent := &b.Entries[i]
		size += 12 + len(ent.Key) + len(ent.Value) + len(ent.End)
	}
	return e.db.NewBatchWithSize(size)
}

func writeOptions(sync bool) *pebble.WriteOptions {
	if sync {
		return pebble.Sync
	}
	return pebble.NoSync
}

// ClearCF deletes every key of cf.
func (e *Engine) ClearCF(cf mvcc.CF, sync bool) error {
	return e.db.DeleteRange([]byte{byte(cf)}, []byte{byte(cf) + 1}, writeOptions(sync))
}

// CompactRange implements mvcc.Compacter: a manual compaction of the keys
// of cf in [lower, upper) down to the last level, which first flushes the
// memtable if it holds any of them. Keys a range deletion covers are
// dropped on the way, and the files that held them are deleted once no
// iterator reads them.
func (e *Engine) CompactRange(ctx context.Context, cf mvcc.CF, lower, upper []byte) error {
	lo, hi := cfBounds(cf, lower, upper)
	return e.db.Compact(ctx, lo, hi, true)
}

// Metrics returns Pebble's metrics.
func (e *Engine) Metrics() *Metrics { return e.db.Metrics() }

// DB returns the Pebble database, for benchmarks and tools that compact,
// flush or read it raw. Keys there carry their column family's prefix;
// writes must go through Write.
func (e *Engine) DB() *pebble.DB { return e.db }

// Dir is the database's directory.
func (e *Engine) Dir() string { return e.dir }

// FS is the filesystem of the database's files (Options.FS). Files to
// ingest (pebble.DB.Ingest) are written on it, so that Pebble can link
// them in rather than copy them.
func (e *Engine) FS() vfs.FS { return e.fs }

// Close closes the database.
func (e *Engine) Close() error { return e.db.Close() }

// iter strips the column family prefix from a Pebble iterator.
type iter struct {
	it  *pebble.Iterator
	cf  mvcc.CF
	buf []byte
}

func (i *iter) seekKey(key []byte) []byte {
	i.buf = append(append(i.buf[:0], byte(i.cf)), key...)
	return i.buf
}

func (i *iter) First() bool            { return i.it.First() }
func (i *iter) Last() bool             { return i.it.Last() }
func (i *iter) SeekGE(key []byte) bool { return i.it.SeekGE(i.seekKey(key)) }
func (i *iter) SeekLT(key []byte) bool { return i.it.SeekLT(i.seekKey(key)) }
func (i *iter) Next() bool             { return i.it.Next() }
func (i *iter) Prev() bool             { return i.it.Prev() }
func (i *iter) Valid() bool            { return i.it.Valid() }
func (i *iter) Key() []byte            { return i.it.Key()[1:] }
func (i *iter) Value() []byte          { return i.it.Value() }
func (i *iter) Close() error           { return i.it.Close() }
