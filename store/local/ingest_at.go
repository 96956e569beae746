package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
)

var _ kv.BackfillIngester = (*Store)(nil)

// errIngestTxn: IngestAt's transaction is not one of the store's open ones.
var errIngestTxn = errors.New("local: IngestAt needs an open transaction of this store")

// IngestAt implements kv.BackfillIngester: the puts of fill, as versions
// committed at txn's start ts, are written into SSTs (per column family,
// as Import writes them; by several writers at once, each its chunks of
// the key order: see chunkPipe) and linked in, all at once, by
// mvcc.Store.IngestAt. The transaction, registered open, holds the GC
// safe point below its start ts (safePoint) while this runs; the caller
// ends it afterwards.
func (s *Store) IngestAt(ctx context.Context, t kv.Txn, start, end []byte, fill func(put func(key, value []byte) error) error) error {
	tx, ok := t.(*txn)
	if !ok || tx.s != s {
		return errIngestTxn
	}
	if s.closed.Load() {
		return kv.ErrStoreClosed
	}
	if tx.shard == nil {
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
	prefix := fs.PathJoin(dir, fmt.Sprintf("at%d-%d", ts, importSeq.Add(1)))
	var prev []byte
	n := 0
	// The pairs are checked here, in fill's order, and written into SSTs
	// by writers of their own while fill produces the next ones (a merge
	// of sorted runs, for ADD INDEX): each writer takes whole chunks of
	// consecutive pairs, so that the files of different writers hold
	// disjoint key ranges.
	p := newChunkPipe(ingestWriters(), func(i int) *chunkWriter {
		return &chunkWriter{w: &sstSeries{db: s.db, prefix: fmt.Sprintf("%s-w%d", prefix, i)}, recs: mvcc.PutRecords{StartTS: ts, CommitTS: ts}}
	})
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
		return p.put(key, value)
	})
	if cerr := p.close(); err == nil {
		err = cerr
	}
	var paths []string
	for _, cw := range p.writers {
		if ferr := cw.w.finish(); err == nil {
			err = ferr
		}
		paths = append(paths, cw.w.paths...)
	}
	if err == nil && len(paths) > 0 {
		err = s.mvcc.IngestAt(ctx, ts, start, end, paths)
	}
	if err != nil {
		for _, cw := range p.writers {
			cw.w.abort()
		}
	}
	return err
}

// ingestWriters is how many goroutines IngestAt writes SSTs on.
func ingestWriters() int { return max(1, min(runtime.GOMAXPROCS(0), maxIngestWriters)) }

// maxIngestWriters bounds ingestWriters (benchmarks set it to 1).
var maxIngestWriters = 4

// ingestChunkBytes is the size, in bytes of keys and values, of the
// chunks of consecutive pairs that IngestAt's writers take in turn: each
// chunk's records go into files of their own (one per column family).
var ingestChunkBytes = 4 << 20

// chunkWriter writes the records of the chunks one writer is given, into
// a series of files named apart from the other writers'.
type chunkWriter struct {
	w    *sstSeries
	recs mvcc.PutRecords
}

// put writes the records of a put of value to key.
func (c *chunkWriter) put(key, value []byte) error { return c.recs.Put(key, value, c.w.add) }

// endChunk closes the chunk's files: the next chunk this writer gets
// starts new ones, whose keys are above the other writers' chunks between.
func (c *chunkWriter) endChunk() error { return c.w.finish() }

// chunkPipe hands pairs to writers on goroutines of their own, in
// batches, chunk by chunk: put copies a pair into the batch being filled;
// a full batch goes to the writer of the current chunk, and once a chunk
// holds ingestChunkBytes the next writer, in turn, gets the next one. A
// writer processes its batches in order, so each writer sees its chunks'
// pairs in key order, and chunks of different writers are disjoint
// ranges. The first error of a writer is returned by every later put and
// by close; the pairs after it are dropped. A chunkPipe is used by one
// goroutine.
type chunkPipe struct {
	writers []*chunkWriter
	queues  []chan *pairBatch // a batch with end set closes its chunk
	free    chan *pairBatch
	made    int // batches allocated, at most cap(free)
	cur     *pairBatch
	// pairs is the most pairs a batch has been handed over with: new
	// batches are made with room for a few more, so that they do not
	// grow pair by pair (an index of 1M rows fills about 40 of them).
	pairs  int
	at     int // the writer of the current chunk
	chunk  int // bytes put into the current chunk
	wg     sync.WaitGroup
	failed atomic.Pointer[error]
}

// pairBatch holds pairs: each the bytes of key then value in data, and
// the end offsets of both in ends. end marks the last batch of a chunk.
type pairBatch struct {
	data []byte
	ends []int
	end  bool
}

// pipeBatchBytes is the size at which a batch is handed over.
const pipeBatchBytes = 1 << 20

func newChunkPipe(n int, newWriter func(i int) *chunkWriter) *chunkPipe {
	// Each writer can be given a whole chunk while it still writes its
	// previous one, and the pipe fills one more batch.
	perChunk := max(1, ingestChunkBytes/pipeBatchBytes)
	p := &chunkPipe{free: make(chan *pairBatch, n*(perChunk+1)+1)}
	for i := range n {
		p.writers = append(p.writers, newWriter(i))
		q := make(chan *pairBatch, perChunk+1)
		p.queues = append(p.queues, q)
		p.wg.Add(1)
		go p.run(p.writers[i], q)
	}
	p.cur = p.batch()
	return p
}

// batch returns an empty batch: a free one, or a new one while fewer
// than the pool's capacity exist.
func (p *chunkPipe) batch() *pairBatch {
	select {
	case b := <-p.free:
		return b
	default:
	}
	if p.made < cap(p.free) {
		p.made++
		// The batch is handed over once past pipeBatchBytes: room for
		// that and a pair of up to 4 KB.
		return &pairBatch{data: make([]byte, 0, pipeBatchBytes+4096), ends: make([]int, 0, 2*(p.pairs+p.pairs/8))}
	}
	return <-p.free
}

func (p *chunkPipe) run(w *chunkWriter, q chan *pairBatch) {
	defer p.wg.Done()
	for b := range q {
		if p.failed.Load() == nil {
			err := b.each(w.put)
			if err == nil && b.end {
				err = w.endChunk()
			}
			if err != nil {
				p.failed.CompareAndSwap(nil, &err)
			}
		}
		b.data, b.ends, b.end = b.data[:0], b.ends[:0], false
		p.free <- b
	}
}

// each passes b's pairs to fn in order, up to fn's first error.
func (b *pairBatch) each(fn func(key, value []byte) error) error {
	start := 0
	for i := 0; i < len(b.ends); i += 2 {
		if err := fn(b.data[start:b.ends[i]], b.data[b.ends[i]:b.ends[i+1]]); err != nil {
			return err
		}
		start = b.ends[i+1]
	}
	return nil
}

func (p *chunkPipe) put(key, value []byte) error {
	if err := p.failed.Load(); err != nil {
		return *err
	}
	b := p.cur
	b.data = append(append(b.data, key...), value...)
	b.ends = append(b.ends, len(b.data)-len(value), len(b.data))
	if len(b.data) >= pipeBatchBytes {
		p.pairs = max(p.pairs, len(b.ends)/2)
		p.chunk += len(b.data)
		b.end = p.chunk >= ingestChunkBytes
		p.queues[p.at] <- b
		if b.end {
			p.at, p.chunk = (p.at+1)%len(p.queues), 0
		}
		p.cur = p.batch()
	}
	return nil
}

// close hands over the last pairs and waits for the writers to be done
// with them.
func (p *chunkPipe) close() error {
	if len(p.cur.ends) > 0 {
		p.queues[p.at] <- p.cur
	}
	for _, q := range p.queues {
		close(q)
	}
	p.wg.Wait()
	if err := p.failed.Load(); err != nil {
		return *err
	}
	return nil
}
