package mvcc

import (
	"errors"
	"fmt"
)

// LockInfo describes a lock that stood in a command's way.
type LockInfo struct {
	Key         []byte
	Primary     []byte
	StartTS     uint64
	TTL         uint64
	Kind        LockKind
	ForUpdateTS uint64
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
