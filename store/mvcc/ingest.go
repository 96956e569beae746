package mvcc

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/kv"
)

// Ingestion: a whole key range committed at once by files the engine
// links in, rather than by a batch (IMPORT INTO). The records are those a
// one-phase commit of puts writes (PutRecords); IngestRange is the
// protocol that makes them one commit at one timestamp:
//
//  1. a range latch (Latches.AcquireRange) keeps new writers of the range
//     out and waits out those in flight;
//  2. the range must be empty at a fresh timestamp, startTS (no visible
//     key, no lock): the import's target is a table no one has written;
//  3. the latch is marked committing before the commit timestamp is
//     taken, so that a reader at or above it waits for the files (the
//     one-phase commit's rule, latch.go), and one below it need not;
//  4. the caller writes the files at commitTS, the engine ingests them,
//     and the latest-version cache forgets the range, which it may have
//     cached empty.

// Ingester is an Engine that can link in files of records at once.
type Ingester interface {
	Engine
	// Ingest makes the records of the files at paths visible atomically
	// and durably.
	Ingest(ctx context.Context, paths []string) error
}

// PutRecords emits the records of puts committed at commitTS by a
// transaction that started at startTS, as OnePhaseCommit writes them: the
// value in its write record when short, else in CFDefault. Keys given in
// ascending order give records in ascending order within each column
// family. The slices passed to emit are valid only during the call. A
// PutRecords reuses its buffers from one Put to the next; it is not safe
// for concurrent use.
type PutRecords struct {
	StartTS, CommitTS uint64
	key, rec          []byte
}

// Put emits the records of a put of value to key.
func (p *PutRecords) Put(key, value []byte, emit func(cf CF, k, v []byte) error) error {
	p.key = codec.EncodeBytes(p.key[:0], key)
	n := len(p.key)
	if len(value) > shortValueMaxLen {
		p.key = codec.EncodeUintDesc(p.key, p.StartTS)
		if err := emit(CFDefault, p.key, value); err != nil {
			return err
		}
		p.key = p.key[:n]
	}
	p.key = codec.EncodeUintDesc(p.key, p.CommitTS)
	// The write record, as Write.encode lays it out.
	p.rec = binary.AppendUvarint(append(p.rec[:0], byte(WritePut)), p.StartTS)
	if len(value) <= shortValueMaxLen {
		p.rec = append(append(p.rec, 'v'), value...)
	}
	return emit(CFWrite, p.key, p.rec)
}

// IngestRange commits the range [start, end) (user keys; it must be
// empty) by ingestion, as drawn above: write writes the files of the
// records (PutRecords) of the range's new keys, which can be read at
// commitTS, and returns their paths. nextTS is the timestamp oracle. It
// fails with kv.ErrImportTargetNotEmpty if the range holds a key or a
// lock; the files are then not written.
func (s *Store) IngestRange(ctx context.Context, start, end []byte, nextTS func() (uint64, error),
	write func(startTS, commitTS uint64) ([]string, error)) (commitTS uint64, err error) {
	ing, ok := s.eng.(Ingester)
	if !ok {
		return 0, errors.New("mvcc: the engine cannot ingest files")
	}
	g, err := s.latches.AcquireRange(ctx, start, end)
	if err != nil {
		return 0, err
	}
	defer s.latches.Release(g)
	startTS, err := nextTS()
	if err != nil {
		return 0, err
	}
	if err := s.checkEmpty(ctx, start, end, startTS); err != nil {
		return 0, err
	}
	s.latches.setStart(g, startTS)
	s.latches.MarkCommitting(g)
	if commitTS, err = nextTS(); err != nil {
		return 0, err
	}
	s.latches.SetCommitFloor(g, commitTS)
	paths, err := write(startTS, commitTS)
	if err != nil {
		return 0, err
	}
	if s.recent != nil {
		// The files hold records at commitTS, which the write filter
		// would not otherwise know of.
		s.recent.raiseFloor(commitTS)
	}
	err = ing.Ingest(ctx, paths)
	if s.cache != nil {
		// Chunks loaded or being loaded hold the range as it was; a failed
		// ingestion may or may not have applied.
		s.cache.dropRange(encodeKey(start), encodeKey(end))
	}
	if err != nil {
		return 0, err
	}
	return commitTS, nil
}

// checkEmpty fails with kv.ErrImportTargetNotEmpty if [start, end) holds
// a key visible at ts or a lock.
func (s *Store) checkEmpty(ctx context.Context, start, end []byte, ts uint64) error {
	locks, err := s.ScanLocks(start, end, 1, nil)
	if err != nil {
		return err
	}
	if len(locks) > 0 {
		return kv.ErrImportTargetNotEmpty
	}
	sc, err := s.Scan(ctx, start, end, ts, false)
	if err != nil {
		return err
	}
	defer sc.Close()
	if sc.Valid() {
		return kv.ErrImportTargetNotEmpty
	}
	return sc.Err()
}
