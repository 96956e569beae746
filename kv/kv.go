// Package kv is the seam between Basalt's SQL layer and its storage.
//
// Everything above this package (session, planner, executor, table, ddl)
// speaks only these interfaces; every store (the embedded store/local today,
// a replicated cluster store later) implements them. Keys and values are
// arbitrary byte strings; keys are ordered bytewise.
//
// Transactions follow Percolator: a transaction reads a snapshot at its start
// timestamp, buffers its writes in a sorted MemBuffer that its own reads see,
// and commits atomically at a commit timestamp greater than every timestamp
// handed out before the commit began. A pessimistic transaction additionally
// locks keys as statements run (LockKeys), so that conflicts surface as lock
// waits, deadlocks or write conflicts at statement time rather than at commit.
package kv

import (
	"context"
	"time"
)

// Limits on what a single entry may hold. They match TiDB's defaults, so
// that data written here fits in a cluster later.
const (
	// MaxKeySize is the largest key accepted.
	MaxKeySize = 8 << 10
	// MaxValueSize is the largest value accepted (TiDB's txn-entry-size-limit).
	MaxValueSize = 6 << 20
)

// Mode is a transaction's concurrency-control mode.
type Mode int

const (
	// Pessimistic transactions lock keys as they go (LockKeys) and detect
	// conflicts while they run. It is Basalt's default, as in MySQL.
	Pessimistic Mode = iota
	// Optimistic transactions detect write conflicts only at commit.
	Optimistic
)

func (m Mode) String() string {
	if m == Optimistic {
		return "optimistic"
	}
	return "pessimistic"
}

// TxnOptions configure Storage.Begin.
type TxnOptions struct {
	Mode Mode
	// StartTS, if non-zero, is used as the snapshot timestamp instead of a
	// fresh one from the timestamp oracle (for stale or repeatable reads).
	StartTS uint64
	// Commit chooses a cluster's commit protocol; the embedded store
	// commits in one phase, whatever it says.
	Commit CommitOptions
	// LockWait bounds how long the commit waits for another transaction's
	// lock on a key it writes but did not lock itself (all of an
	// optimistic transaction's keys, such as an autocommit statement's)
	// before it fails with ErrLockWaitTimeout: the session's
	// innodb_lock_wait_timeout. 0 leaves the bound to the store.
	// A store may end the wait, once the lock is gone, with a write
	// conflict instead of going on with the commit (client-go's prewrite
	// cannot resume): set it only on transactions that are run again
	// after a write conflict, such as autocommit statements.
	LockWait time.Duration
}

// CommitOptions are TiDB's switches of the commit protocol on a cluster.
type CommitOptions struct {
	// AsyncCommit: the commit is acknowledged once every key is
	// prewritten (tidb_enable_async_commit).
	AsyncCommit bool
	// OnePC: a transaction whose keys are all in one region commits in
	// one round (tidb_enable_1pc).
	OnePC bool
	// CausalConsistency: commit timestamps need only respect causality,
	// not real time across sessions (tidb_guarantee_linearizability off).
	CausalConsistency bool
}

// Storage is a transactional key-value store.
//
// All methods are safe for concurrent use.
type Storage interface {
	// Begin starts a transaction whose snapshot is taken at a timestamp from
	// the oracle (or opts.StartTS).
	Begin(opts TxnOptions) (Txn, error)
	// Snapshot returns a read-only view of the data committed at or before ts.
	Snapshot(ts uint64) Snapshot
	// CurrentTS returns a fresh timestamp from the oracle, greater than every
	// timestamp returned before.
	CurrentTS() (uint64, error)
	// Close releases the store. Open transactions must be finished first.
	Close() error
}

// Retriever reads keys. Get and BatchGet never return a deleted key.
type Retriever interface {
	// Get returns the value of key, or ErrNotFound.
	Get(ctx context.Context, key []byte) ([]byte, error)
	// BatchGet returns the values of the keys that exist, by string(key).
	BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error)
	// Iter returns an iterator over the keys in [start, end) in ascending
	// order. A nil end means no upper bound.
	Iter(start, end []byte) (Iterator, error)
	// IterReverse returns an iterator over the keys in [start, end) in
	// descending order. A nil start means no lower bound.
	IterReverse(start, end []byte) (Iterator, error)
}

// Snapshot is a consistent read-only view at one timestamp.
type Snapshot interface {
	Retriever
	// TS is the timestamp the snapshot reads at.
	TS() uint64
}

// Txn is one transaction. A Txn is not safe for concurrent use: it belongs to
// one session, which runs one statement at a time.
type Txn interface {
	Retriever
	// StartTS is the transaction's snapshot timestamp.
	StartTS() uint64
	// Mode is the transaction's concurrency-control mode.
	Mode() Mode

	// Set buffers a write of value to key. It fails with ErrEntryTooLarge or
	// ErrEmptyKey for bad input; nothing is buffered then. Set, Insert and
	// Delete copy key and value: the caller may reuse both once they
	// return.
	Set(key, value []byte) error
	// Insert buffers a write of value to key that must not overwrite an
	// existing key: Commit fails with a *KeyExistsError if key exists then.
	// If the buffer already holds key, Insert fails at once.
	Insert(key, value []byte) error
	// Delete buffers a deletion of key.
	Delete(key []byte) error
	// Cover marks a key just buffered with Set or Delete as one whose every
	// writer also writes or locks another key of the same transaction (a
	// non-unique index entry, whose row key it always travels with): the
	// commit checks that other key for conflicts and skips this one.
	Cover(key []byte)
	// Len is the number of keys buffered for writing.
	Len() int
	// Size is the number of bytes of the keys and values buffered for
	// writing (the memory they hold, less the buffer's own overhead).
	Size() int
	// Savepoint marks the buffered writes, so that a failed statement can
	// undo its own writes with RollbackTo; ReleaseSavepoint keeps them.
	// Savepoints nest; closing one closes every later one.
	Savepoint() int
	RollbackTo(sp int)
	ReleaseSavepoint(sp int)

	// LockKeys takes pessimistic locks on keys, waiting up to wait for locks
	// held by other transactions (a zero wait fails at once, a negative one
	// waits forever). It fails with a *WriteConflictError if a key was
	// committed after forUpdateTS (the caller retries its statement with a
	// newer forUpdateTS), a *DeadlockError, or ErrLockWaitTimeout. Keys
	// already locked by this transaction are skipped. In an optimistic
	// transaction it only remembers the keys.
	LockKeys(ctx context.Context, forUpdateTS uint64, wait time.Duration, keys ...[]byte) error
	// ReaderAt returns a Retriever that sees the transaction's own writes
	// over the data committed at or before ts: the "current read" of a
	// pessimistic DML statement, reading at its forUpdateTS.
	ReaderAt(ts uint64) Retriever

	// Commit makes the buffered writes visible atomically, or fails and
	// makes none of them visible. When Commit returns nil the writes are
	// durable (as far as the store's sync setting promises).
	Commit(ctx context.Context) error
	// Rollback discards the buffered writes and releases the transaction's
	// locks. It is safe to call after a failed Commit.
	Rollback() error
}

// RangeDeleter is implemented by stores that can drop every version of a
// key range at once, outside MVCC. It is only for data that no transaction
// can read any more, such as the rows of a dropped table once every
// transaction that could see the table has ended.
type RangeDeleter interface {
	DeleteRange(ctx context.Context, start, end []byte) error
}

// RegionSplitter is implemented by stores whose data is cut into regions
// (a cluster's). SplitRegions starts a region at each key, as TiDB's
// split-table does for a new table so that each table has regions of its
// own; a key that already starts a region is left as it is.
type RegionSplitter interface {
	SplitRegions(ctx context.Context, keys [][]byte) error
}

// Importer is implemented by stores that can commit a whole empty key
// range at once from sorted input, bypassing transactions (IMPORT INTO's
// fast path). Import calls fill once with the commit timestamp; fill
// calls put with the range's keys in strictly ascending order, and their
// values (non-empty). The keys become visible together at the commit
// timestamp, which Import returns, or, if fill or the store fails, not
// at all. Import fails with ErrImportTargetNotEmpty, before calling
// fill, if [start, end) holds a key visible now or a lock. Writers of
// the range wait while Import runs, and readers at or above the commit
// timestamp wait for it to finish.
type Importer interface {
	Import(ctx context.Context, start, end []byte, fill func(commitTS uint64, put func(key, value []byte) error) error) (uint64, error)
}

// Iterator walks keys in order. The slices returned by Key and Value are
// valid only until the next call to Next or Close.
type Iterator interface {
	Valid() bool
	Key() []byte
	Value() []byte
	Next() error
	Close()
}

// CheckEntry validates a key and value before they are buffered for op:
// a value written (OpPut, OpInsert) must not be empty, since TiKV and
// client-go read an empty value as a deletion.
func CheckEntry(key, value []byte, op Op) error {
	if len(key) == 0 {
		return ErrEmptyKey
	}
	if len(value) == 0 && (op == OpPut || op == OpInsert) {
		return ErrEmptyValue
	}
	if len(key) > MaxKeySize {
		return &EntryTooLargeError{What: "key", Size: len(key), Limit: MaxKeySize}
	}
	if len(value) > MaxValueSize {
		return &EntryTooLargeError{What: "value", Size: len(value), Limit: MaxValueSize}
	}
	return nil
}

// PrefixEnd returns the first key after every key that starts with prefix,
// or nil if there is none (prefix is all 0xFF).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
