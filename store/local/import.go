package local

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/basalt-db/basalt/store/pebble"
)

var _ kv.Importer = (*Store)(nil)

// importDir is the directory, under the database's, of the SSTs written
// for an import until they are ingested (Pebble links them in from
// there). Nothing in it outlives an import; what a crash leaves is
// removed when the store opens.
const importDir = "import"

// sstTargetSize is the size at which an import starts a new SST.
const sstTargetSize = 256 << 20

var importSeq atomic.Uint64

// Import implements kv.Importer: mvcc.IngestRange, with the records of
// the keys fill puts written into SSTs of the database's filesystem, one
// series per column family, each file up to about sstTargetSize.
func (s *Store) Import(ctx context.Context, start, end []byte, fill func(commitTS uint64, put func(key, value []byte) error) error) (uint64, error) {
	if s.closed.Load() {
		return 0, kv.ErrStoreClosed
	}
	fs := s.db.FS()
	dir := fs.PathJoin(s.db.Dir(), importDir)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	var w *sstSeries
	ts, err := s.mvcc.IngestRange(ctx, start, end, s.oracle.next, func(startTS, commitTS uint64) ([]string, error) {
		w = &sstSeries{db: s.db, prefix: fs.PathJoin(dir, fmt.Sprintf("%d-%d", commitTS, importSeq.Add(1)))}
		recs := mvcc.PutRecords{StartTS: startTS, CommitTS: commitTS}
		err := fill(commitTS, func(key, value []byte) error {
			if len(value) == 0 {
				return kv.ErrEmptyValue
			}
			return recs.Put(key, value, w.add)
		})
		if err == nil {
			err = w.finish()
		}
		if err != nil {
			return nil, err
		}
		return w.paths, nil
	})
	if err != nil && w != nil {
		w.abort()
	}
	return ts, err
}

// sstSeries writes the records of an import: for each column family a
// series of SSTs, each file's keys above the previous file's.
type sstSeries struct {
	db     *pebble.Engine
	prefix string
	open   map[mvcc.CF]*pebble.SSTWriter
	paths  []string
	n      int
}

func (w *sstSeries) add(cf mvcc.CF, k, v []byte) error {
	if w.open == nil {
		w.open = make(map[mvcc.CF]*pebble.SSTWriter)
	}
	sw := w.open[cf]
	if sw != nil && sw.EstimatedSize() >= sstTargetSize {
		delete(w.open, cf)
		if err := sw.Close(); err != nil {
			return err
		}
		sw = nil
	}
	if sw == nil {
		w.n++
		path := fmt.Sprintf("%s-%c-%d.sst", w.prefix, byte(cf), w.n)
		var err error
		if sw, err = w.db.CreateSST(path, cf); err != nil {
			return err
		}
		w.paths = append(w.paths, path)
		w.open[cf] = sw
	}
	return sw.Add(k, v)
}

// finish closes the open files.
func (w *sstSeries) finish() error {
	var errs []error
	for cf, sw := range w.open {
		errs = append(errs, sw.Close())
		delete(w.open, cf)
	}
	return errors.Join(errs...)
}

// abort closes and removes every file written.
func (w *sstSeries) abort() {
	_ = w.finish()
	fs := w.db.FS()
	for _, p := range w.paths {
		_ = fs.Remove(p)
	}
}
