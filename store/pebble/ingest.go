package pebble

import (
	"context"
	"fmt"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Files to ingest. An SST written by SSTWriter holds the keys of one
// column family, with the column family's prefix (see engine.go), in
// strictly ascending order; the files of one ingestion must not overlap
// each other. Ingest links them into the LSM in one atomic step, above
// every write applied before it (Pebble gives the files a sequence number
// above the memtable's, flushing it first if it overlaps them): readers
// see all of them or none.

// SSTWriter writes one SST of one column family for Ingest.
type SSTWriter struct {
	w    *sstable.Writer
	cf   mvcc.CF
	path string
	buf  []byte
	n    int
}

// CreateSST creates the file path on the database's filesystem (FS), for
// keys of cf. The file is synced when Close returns.
func (e *Engine) CreateSST(path string, cf mvcc.CF) (*SSTWriter, error) {
	f, err := e.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	// Ingested files land in the lowest level that they do not overlap:
	// the last one, for a range that was empty. Write them as that level's
	// files are written (bloom filter, block sizes).
	wo := e.WriterOptions(len(e.opts.Levels) - 1)
	return &SSTWriter{w: sstable.NewWriter(objstorageprovider.NewFileWritable(f), wo), cf: cf, path: path}, nil
}

// Add writes key (without the column family prefix) with value. Keys must
// come in strictly ascending order.
func (w *SSTWriter) Add(key, value []byte) error {
	w.buf = append(append(w.buf[:0], byte(w.cf)), key...)
	w.n++
	return w.w.Set(w.buf, value)
}

// Len is the number of keys added.
func (w *SSTWriter) Len() int { return w.n }

// EstimatedSize is the size of the file so far.
func (w *SSTWriter) EstimatedSize() uint64 { return w.w.Raw().EstimatedSize() }

// Path is the file's path.
func (w *SSTWriter) Path() string { return w.path }

// Close finishes and syncs the file.
func (w *SSTWriter) Close() error {
	if err := w.w.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	return nil
}

// Ingest links the SSTs at paths (on FS, written by SSTWriter, not
// overlapping each other) into the database, atomically and durably.
// Pebble hard-links them in and removes the originals; after a failure
// the caller removes them.
func (e *Engine) Ingest(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	return e.db.Ingest(ctx, paths)
}

// WriterOptions are the options of the database's files of level: its
// comparer and key schema, which a file written elsewhere for ingestion
// must share (Pebble refuses a table with another comparer), its table
// format, filters and block sizes.
func (e *Engine) WriterOptions(level int) sstable.WriterOptions {
	return e.opts.MakeWriterOptions(level, e.db.TableFormat())
}
