package storenode

import (
	"errors"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/basalt-db/basalt/storenode/raftstore"
	"github.com/pingcap/kvproto/pkg/deadlock"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
)

// This file maps what store/mvcc and the raftstore report onto TiKV's
// answers: a region error (the command did not run here; the client
// refreshes its region cache and retries) or a kvrpcpb.KeyError, filled as
// TiKV fills it, since client-go decides what to do by which field is set.

// failure splits err into a region error or a key error.
func failure(err error) (*errorpb.Error, *kvrpcpb.KeyError) {
	var re *raftstore.RegionError
	if errors.As(err, &re) && re.Err != nil {
		return re.Err, nil
	}
	return nil, keyError(err)
}

// keyError is err, a command's failure, as TiKV's KeyError (nil for nil).
// Fields that only the command knows (the transaction's primary, its
// start ts for txn_not_found) are filled by the caller.
//
//	*mvcc.LockedError            locked
//	*kv.WriteConflictError       conflict (and retryable, as TiKV sets it)
//	*kv.KeyExistsError           already_exist
//	*kv.DeadlockError            deadlock
//	*mvcc.CommitTSExpiredError   commit_ts_expired
//	*mvcc.TxnLockNotFoundError   txn_lock_not_found (a commit after a rollback)
//	mvcc.ErrTxnNotFound          txn_not_found
//	*mvcc.PrimaryMismatchError   primary_mismatch
//	anything else                abort, with the error's text
//
// A prewrite that finds its transaction rolled back is a write conflict
// with itself; the prewrite handler makes it so.
func keyError(err error) *kvrpcpb.KeyError {
	if err == nil {
		return nil
	}
	var (
		le  *mvcc.LockedError
		wc  *kv.WriteConflictError
		ke  *kv.KeyExistsError
		dl  *kv.DeadlockError
		cte *mvcc.CommitTSExpiredError
		tln *mvcc.TxnLockNotFoundError
		pm  *mvcc.PrimaryMismatchError
	)
	switch {
	case errors.As(err, &le):
		return &kvrpcpb.KeyError{Locked: lockInfo(&le.Lock)}
	case errors.As(err, &wc):
		return &kvrpcpb.KeyError{Retryable: err.Error(), Conflict: &kvrpcpb.WriteConflict{
			StartTs: wc.StartTS, ConflictTs: wc.ConflictStartTS, ConflictCommitTs: wc.ConflictCommitTS, Key: wc.Key}}
	case errors.As(err, &ke):
		return &kvrpcpb.KeyError{AlreadyExist: &kvrpcpb.AlreadyExist{Key: ke.Key}}
	case errors.As(err, &dl):
		return &kvrpcpb.KeyError{Deadlock: &kvrpcpb.Deadlock{LockTs: dl.Holder, LockKey: dl.Key}}
	case errors.As(err, &cte):
		return &kvrpcpb.KeyError{CommitTsExpired: &kvrpcpb.CommitTsExpired{StartTs: cte.StartTS,
			AttemptedCommitTs: cte.CommitTS, Key: cte.Key, MinCommitTs: cte.MinCommitTS}}
	case errors.As(err, &tln):
		return &kvrpcpb.KeyError{TxnLockNotFound: &kvrpcpb.TxnLockNotFound{Key: tln.Key}}
	case errors.Is(err, mvcc.ErrTxnNotFound):
		return &kvrpcpb.KeyError{TxnNotFound: &kvrpcpb.TxnNotFound{}}
	case errors.As(err, &pm):
		return &kvrpcpb.KeyError{PrimaryMismatch: &kvrpcpb.PrimaryMismatch{LockInfo: lockInfo(&pm.Lock)}}
	}
	return &kvrpcpb.KeyError{Abort: err.Error()}
}

// keyErrors is keyError as the commands that answer a list of errors
// carry it.
func keyErrors(ke *kvrpcpb.KeyError) []*kvrpcpb.KeyError {
	if ke == nil {
		return nil
	}
	return []*kvrpcpb.KeyError{ke}
}

// lockInfo is l as TiKV describes a lock; an async-commit primary's
// carries the secondaries, which a lock resolver checks.
func lockInfo(l *mvcc.LockInfo) *kvrpcpb.LockInfo {
	return &kvrpcpb.LockInfo{PrimaryLock: l.Primary, LockVersion: l.StartTS, Key: l.Key, LockTtl: l.TTL,
		TxnSize: l.TxnSize, LockType: lockType(l.Kind), LockForUpdateTs: l.ForUpdateTS, MinCommitTs: l.MinCommitTS,
		UseAsyncCommit: l.UseAsyncCommit, Secondaries: l.Secondaries}
}

func lockType(k mvcc.LockKind) kvrpcpb.Op {
	switch k {
	case mvcc.LockPut:
		return kvrpcpb.Op_Put
	case mvcc.LockDelete:
		return kvrpcpb.Op_Del
	case mvcc.LockPessimistic:
		return kvrpcpb.Op_PessimisticLock
	}
	return kvrpcpb.Op_Lock
}

// waitChain describes the deadlock dl as TiKV's detector does: each
// transaction of the cycle with the one it waits for and the key, ending
// with the victim's own wait. Key hashes are left zero (TiKV's are
// farmhash fingerprints, which client-go compares with the keys of the
// statement to decide whether it may retry it; zero never matches, so a
// deadlock always fails the statement). Edges that changed since the
// detection are left out.
func waitChain(dl *kv.DeadlockError, waits *mvcc.WaitManager) []*deadlock.WaitForEntry {
	var chain []*deadlock.WaitForEntry
	for _, txn := range dl.Cycle {
		if txn == dl.StartTS {
			continue
		}
		if key, holder, ok := waits.WaitingOn(txn); ok {
			chain = append(chain, &deadlock.WaitForEntry{Txn: txn, WaitForTxn: holder, Key: key})
		}
	}
	return append(chain, &deadlock.WaitForEntry{Txn: dl.StartTS, WaitForTxn: dl.Holder, Key: dl.Key})
}
