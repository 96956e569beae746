package kv

import "context"

// BackfillIngester is implemented by stores that can add, by ingesting
// files, versions committed at the start timestamp of an open transaction
// to a key range that others write meanwhile: ADD INDEX's fast path
// (TiDB's tidb_ddl_enable_fast_reorg), which reads the rows in that
// transaction's snapshot and writes their index entries as of it. Unlike
// Importer's range, this one need not be empty and is not latched.
//
// The ingested versions lie below every version committed after the
// transaction started, so a key written since reads as written, and one
// not written since reads as ingested, at the start ts and above.
// Writing in the past is correct only under the caller's promise that
//
//   - every transaction that committed after the start ts and changed
//     what a key of the range is derived from wrote that key too (the
//     writers of a write-only index delete the entries of the row values
//     they replace, and write those of the values they write), and
//   - nobody that the ingested versions concern has read the range at or
//     above the start ts (nobody reads an index that is not public).
//
// The open transaction holds GC below its start ts until IngestAt
// returns, so that no newer version the ingested ones must lie under
// (a Delete) is collected meanwhile.
//
// IngestAt calls fill once; fill calls put with keys in strictly
// ascending order within [start, end), and non-empty values. The
// versions become visible together or, if fill or the store fails, not
// at all. It fails if txn is not an open transaction of this store.
type BackfillIngester interface {
	IngestAt(ctx context.Context, txn Txn, start, end []byte, fill func(put func(key, value []byte) error) error) error
}
