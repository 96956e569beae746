package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
)

var _ kv.BackfillIngester = (*Store)(nil)

// errIngestTxn: IngestAt's transaction is not one of the store's open ones.
var errIngestTxn = errors.New("local: IngestAt needs an open transaction of this store")

// IngestAt implements kv.BackfillIngester: the puts of fill, as versions
// committed at txn's start ts, are written into SSTs (one series per
// column family, as Import writes them) and linked in by
// mvcc.Store.IngestAt. The transaction, registered open, holds the GC
// safe point below its start ts (safePoint) while this runs; the caller
// ends it afterwards.
func (s *Store) IngestAt(ctx context.Context, t kv.Txn, start, end []byte, fill func(put func(key, value []byte) error) error) error {
	tx, ok := t.(*txn)
	if !ok || tx.s != s {
		return errIngestTxn
	}
	s.mu.Lock()
	_, open := s.open[tx]
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return kv.ErrStoreClosed
	}
	if !open {
		return errIngestTxn
	}
	if end == nil || bytes.Compare(start, end) >= 0 {
		return fmt.Errorf("local: IngestAt of the range [%q, %q)", start, end)
	}
	fs := s.db.FS()
	dir := fs.PathJoin(s.db.Dir(), importDir)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ts := tx.startTS
	w := &sstSeries{db: s.db, prefix: fs.PathJoin(dir, fmt.Sprintf("at%d-%d", ts, importSeq.Add(1)))}
	recs := mvcc.PutRecords{StartTS: ts, CommitTS: ts}
	var prev []byte
	n := 0
	err := fill(func(key, value []byte) error {
		switch {
		case len(value) == 0:
			return kv.ErrEmptyValue
		case bytes.Compare(key, start) < 0 || bytes.Compare(key, end) >= 0:
			return fmt.Errorf("local: IngestAt of key %q outside [%q, %q)", key, start, end)
		case n > 0 && bytes.Compare(key, prev) <= 0:
			return fmt.Errorf("local: IngestAt of key %q after %q", key, prev)
		}
		n++
		prev = append(prev[:0], key...)
		return recs.Put(key, value, w.add)
	})
	if err == nil {
		err = w.finish()
	}
	if err == nil && len(w.paths) > 0 {
		err = s.mvcc.IngestAt(ctx, start, end, w.paths)
	}
	if err != nil {
		w.abort()
	}
	return err
}
