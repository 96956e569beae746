package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"

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
	// The files are written on a goroutine of their own, while fill
	// produces the next pairs (a merge of sorted runs, for ADD INDEX).
	p := newPairPipe(func(key, value []byte) error {
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
	err := fill(p.put)
	if cerr := p.close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.finish()
	}
	if err == nil && len(w.paths) > 0 {
		err = s.mvcc.IngestAt(ctx, ts, start, end, w.paths)
	}
	if err != nil {
		w.abort()
	}
	return err
}

// pairPipe hands pairs to a function run on a goroutine of its own, in
// order, in batches: put copies a pair into the batch being filled, and a
// full batch goes to the goroutine while put fills another. The first
// error of the function is returned by every later put and by close;
// the pairs after it are dropped. A pairPipe is used by one goroutine.
type pairPipe struct {
	fn         func(key, value []byte) error
	cur        *pairBatch
	full, free chan *pairBatch
	done       chan struct{}
	failed     atomic.Pointer[error]
}

// pairBatch holds pairs: each the bytes of key then value in data, and
// the end offsets of both in ends.
type pairBatch struct {
	data []byte
	ends []int
}

// Batches are handed over at pipeBatchBytes; pipeBatches are in use at
// once.
const (
	pipeBatchBytes = 1 << 20
	pipeBatches    = 3
)

func newPairPipe(fn func(key, value []byte) error) *pairPipe {
	p := &pairPipe{fn: fn, full: make(chan *pairBatch, pipeBatches), free: make(chan *pairBatch, pipeBatches),
		done: make(chan struct{})}
	for range pipeBatches - 1 {
		p.free <- &pairBatch{}
	}
	p.cur = &pairBatch{}
	go p.run()
	return p
}

func (p *pairPipe) run() {
	defer close(p.done)
	for b := range p.full {
		if p.failed.Load() == nil {
			start := 0
			for i := 0; i < len(b.ends); i += 2 {
				k, v := b.data[start:b.ends[i]], b.data[b.ends[i]:b.ends[i+1]]
				if err := p.fn(k, v); err != nil {
					p.failed.Store(&err)
					break
				}
				start = b.ends[i+1]
			}
		}
		b.data, b.ends = b.data[:0], b.ends[:0]
		p.free <- b
	}
}

func (p *pairPipe) put(key, value []byte) error {
	if err := p.failed.Load(); err != nil {
		return *err
	}
	b := p.cur
	b.data = append(append(b.data, key...), value...)
	b.ends = append(b.ends, len(b.data)-len(value), len(b.data))
	if len(b.data) >= pipeBatchBytes {
		p.full <- b
		p.cur = <-p.free
	}
	return nil
}

// close hands over the last pairs and waits for the function to be done
// with them.
func (p *pairPipe) close() error {
	if len(p.cur.ends) > 0 {
		p.full <- p.cur
	}
	close(p.full)
	<-p.done
	if err := p.failed.Load(); err != nil {
		return *err
	}
	return nil
}
