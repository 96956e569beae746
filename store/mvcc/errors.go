package mvcc

import (
	"errors"
	"fmt"

	"github.com/basalt-db/basalt/kv"
)

// LockInfo describes a lock that stood in a command's way.
type LockInfo struct {
	Key         []byte
	Primary     []byte
	StartTS     uint64
	TTL         uint64
	Kind        LockKind
	ForUpdateTS uint64
	TxnSize     uint64
	MinCommitTS uint64
	// UseAsyncCommit and Secondaries: see Lock.
	UseAsyncCommit bool
	Secondaries    [][]byte
}

// LockedError: Key is locked by another transaction. A reader must wait for
// it or resolve it; a writer must wait for it (pessimistic) or back off.
type LockedError struct {
	Lock LockInfo
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("mvcc: key %q is locked by txn %d (primary %q, %s lock, ttl %dms)",
		e.Lock.Key, e.Lock.StartTS, e.Lock.Primary, e.Lock.Kind, e.Lock.TTL)
}

var (
	// ErrTxnLockNotFound: a commit found neither the transaction's lock nor
	// its commit record on a key: the transaction was rolled back (or its
	// lock resolved as such) before it could commit.
	ErrTxnLockNotFound = errors.New("mvcc: transaction lock not found")
	// ErrPessimisticLockNotFound: a pessimistic transaction's commit or
	// prewrite did not find the pessimistic lock it took on a key.
	ErrPessimisticLockNotFound = errors.New("mvcc: pessimistic lock not found")
	// ErrTxnNotFound: check-txn-status found no trace of the transaction.
	ErrTxnNotFound = errors.New("mvcc: transaction not found")
)

// CommittedError: a rollback found the transaction already committed.
type CommittedError struct {
	Key      []byte
	CommitTS uint64
}

func (e *CommittedError) Error() string {
	return fmt.Sprintf("mvcc: cannot roll back key %q: its transaction committed at %d", e.Key, e.CommitTS)
}

// RolledBackError: transaction StartTS found its own rollback record on
// Key (a lock resolver or its expired TTL rolled it back): it can no
// longer lock or prewrite the key.
type RolledBackError struct {
	Key     []byte
	StartTS uint64
}

func (e *RolledBackError) Error() string {
	return fmt.Sprintf("mvcc: txn %d was rolled back on key %q", e.StartTS, e.Key)
}

// Is makes errors.Is(err, kv.ErrTxnAborted) true.
func (e *RolledBackError) Is(target error) bool { return target == kv.ErrTxnAborted }

// TxnLockNotFoundError: a commit found neither transaction StartTS's lock
// nor its commit record on Key.
type TxnLockNotFoundError struct {
	Key     []byte
	StartTS uint64
}

func (e *TxnLockNotFoundError) Error() string {
	return fmt.Sprintf("mvcc: txn %d has no lock on key %q to commit", e.StartTS, e.Key)
}

// Is makes errors.Is true for ErrTxnLockNotFound and kv.ErrTxnAborted.
func (e *TxnLockNotFoundError) Is(target error) bool {
	return target == ErrTxnLockNotFound || target == kv.ErrTxnAborted
}

// CommitTSExpiredError: a commit at CommitTS came below the lock's
// MinCommitTS (a reader pushed it): the transaction must commit again at
// a newer timestamp.
type CommitTSExpiredError struct {
	Key         []byte
	StartTS     uint64
	CommitTS    uint64
	MinCommitTS uint64
}

func (e *CommitTSExpiredError) Error() string {
	return fmt.Sprintf("mvcc: txn %d commits key %q at %d, below its min commit ts %d",
		e.StartTS, e.Key, e.CommitTS, e.MinCommitTS)
}

// PrimaryMismatchError: check-txn-status was asked about a key that holds
// the transaction's lock but is not its primary.
type PrimaryMismatchError struct {
	Lock LockInfo
}

func (e *PrimaryMismatchError) Error() string {
	return fmt.Sprintf("mvcc: key %q is not the primary of txn %d (its primary is %q)",
		e.Lock.Key, e.Lock.StartTS, e.Lock.Primary)
}
