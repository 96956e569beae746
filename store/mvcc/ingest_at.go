package mvcc

import (
	"context"
	"errors"
)

// Ingestion in the past: versions committed at a timestamp ts that was
// issued before, linked in as files into a range that others may be
// writing (ADD INDEX's fast path; kv.BackfillIngester states when that is
// correct). The records are those PutRecords makes with StartTS =
// CommitTS = ts. Against IngestRange:
//
//   - nothing is latched and nothing checked: writers of the range go on.
//     A version at ts has the key encKey|ts, which no commit shares (the
//     oracle issues every ts once, and ts went to a reader, whose
//     transaction writes nothing), so the files neither replace a record
//     nor are replaced by one, whatever the engine's order of the two: a
//     commit after ts has a version key above it (versions sort newest
//     first), which a read at or above that commit finds first;
//   - the latest-version cache forgets the range afterwards: a chunk
//     loaded before may hold a key's newest record older than ts, or the
//     key as absent. A chunk being loaded is dropped too (the loader
//     finds it dead), and one loaded later reads the files.
//
// What the engine must do is link the files in atomically, and keep each
// record apart from those of other version keys (Pebble's ingestion does:
// a record is replaced only by one of the same key).

// IngestAt links in the files at paths, written with the records of
// versions committed at ts, a timestamp issued before, into the user key
// range [start, end). The engine must be an Ingester.
func (s *Store) IngestAt(ctx context.Context, ts uint64, start, end []byte, paths []string) error {
	ing, ok := s.eng.(Ingester)
	if !ok {
		return errors.New("mvcc: the engine cannot ingest files")
	}
	if s.recent != nil {
		// The write filter (recent.go) must know of records at ts before
		// they are in: a conflict check from a transaction that started
		// at or below ts now reads the engine.
		s.recent.raiseFloor(ts)
	}
	err := ing.Ingest(ctx, paths)
	if s.cache != nil {
		// Also after a failure, which may or may not have applied.
		s.cache.dropRange(encodeKey(start), encodeKey(end))
	}
	return err
}
