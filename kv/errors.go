package kv

import (
	"errors"
	"fmt"
	"time"
)

// The errors a store returns. The SQL layer maps each to a MySQL error code
// in one table at the session edge; stores never invent other kinds for
// conditions listed here. Match them with errors.Is / errors.As.
var (
	// ErrNotFound: the key does not exist at the snapshot.
	ErrNotFound = errors.New("kv: key not found")
	// ErrEmptyKey: keys must be at least one byte long.
	ErrEmptyKey = errors.New("kv: empty key")
	// ErrEmptyValue: a value written must be at least one byte long (an
	// empty one is a deletion on a TiKV-protocol cluster).
	ErrEmptyValue = errors.New("kv: empty value")
	// ErrEntryTooLarge matches every *EntryTooLargeError.
	ErrEntryTooLarge = errors.New("kv: entry too large")
	// ErrWriteConflict matches every *WriteConflictError.
	ErrWriteConflict = errors.New("kv: write conflict")
	// ErrDeadlock matches every *DeadlockError.
	ErrDeadlock = errors.New("kv: deadlock")
	// ErrLockWaitTimeout: a lock held by another transaction was not
	// released within the wait given to LockKeys.
	ErrLockWaitTimeout = errors.New("kv: lock wait timeout")
	// ErrTxnAborted: the transaction was rolled back by another party (its
	// locks were resolved as rolled back, or its lock TTL expired) and can
	// no longer commit.
	ErrTxnAborted = errors.New("kv: transaction aborted")
	// ErrTxnClosed: the transaction was already committed or rolled back.
	ErrTxnClosed = errors.New("kv: transaction already finished")
	// ErrImportTargetNotEmpty: an import (Importer) found its target key
	// range holding data or a lock.
	ErrImportTargetNotEmpty = errors.New("kv: the import's target range is not empty")
	// ErrKeyExists matches every *KeyExistsError.
	ErrKeyExists = errors.New("kv: key already exists")
	// ErrPDTimeout: a cluster's placement driver (its timestamps and region
	// directory) did not answer in time.
	ErrPDTimeout = errors.New("kv: PD server timeout")
	// ErrStoreTimeout: a cluster's storage node did not answer in time.
	ErrStoreTimeout = errors.New("kv: storage node timeout")
	// ErrRegionUnavailable: no replica of a range of keys could serve.
	ErrRegionUnavailable = errors.New("kv: region is unavailable")
	// ErrGCTooEarly matches every *GCTooEarlyError.
	ErrGCTooEarly = errors.New("kv: GC life time is shorter than transaction duration")
	// ErrStoreClosed: the store was closed.
	ErrStoreClosed = errors.New("kv: store closed")
)

// GCTooEarlyError reports a read or commit of a transaction whose start
// is below the cluster's GC safe point: the versions it reads may have
// been collected (TiDB's ErrGCTooEarly).
type GCTooEarlyError struct {
	StartTS, SafePoint time.Time
}

func (e *GCTooEarlyError) Error() string {
	return fmt.Sprintf("GC life time is shorter than transaction duration, transaction starts at %v, GC safe point is %v",
		e.StartTS, e.SafePoint)
}

func (e *GCTooEarlyError) Is(target error) bool { return target == ErrGCTooEarly }

// EntryTooLargeError reports a key or value over its limit.
type EntryTooLargeError struct {
	What  string // "key" or "value"
	Size  int
	Limit int
}

func (e *EntryTooLargeError) Error() string {
	return fmt.Sprintf("kv: %s of %d bytes exceeds the limit of %d bytes", e.What, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrEntryTooLarge) true.
func (e *EntryTooLargeError) Is(target error) bool { return target == ErrEntryTooLarge }

// WriteConflictError: Key was committed by another transaction at
// ConflictCommitTS, after this transaction's StartTS (optimistic) or
// ForUpdateTS (pessimistic).
type WriteConflictError struct {
	Key              []byte
	StartTS          uint64
	ConflictStartTS  uint64
	ConflictCommitTS uint64
}

func (e *WriteConflictError) Error() string {
	return fmt.Sprintf("kv: write conflict on key %q: txn %d, conflicting txn %d committed at %d",
		e.Key, e.StartTS, e.ConflictStartTS, e.ConflictCommitTS)
}

// Is makes errors.Is(err, ErrWriteConflict) true.
func (e *WriteConflictError) Is(target error) bool { return target == ErrWriteConflict }

// DeadlockError: waiting for Key would close a cycle of transactions each
// waiting for the next. The transaction that receives it is the victim: it
// should roll back so that the others proceed.
type DeadlockError struct {
	Key []byte
	// StartTS is the victim; Holder holds the lock it asked for.
	StartTS, Holder uint64
	// Cycle lists the start timestamps of the transactions in the cycle,
	// starting with the victim.
	Cycle []uint64
}

func (e *DeadlockError) Error() string {
	return fmt.Sprintf("kv: deadlock: txn %d waiting for key %q held by txn %d (cycle %v)",
		e.StartTS, e.Key, e.Holder, e.Cycle)
}

// Is makes errors.Is(err, ErrDeadlock) true.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

// KeyExistsError: an Insert found Key already present.
type KeyExistsError struct {
	Key []byte
}

func (e *KeyExistsError) Error() string {
	return fmt.Sprintf("kv: key %q already exists", e.Key)
}

// Is makes errors.Is(err, ErrKeyExists) true.
func (e *KeyExistsError) Is(target error) bool { return target == ErrKeyExists }
