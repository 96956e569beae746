package mvcc

import (
	"fmt"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tso"
)

// This file holds Percolator's transaction commands. Each is a pure function
// of the engine's state (read through r) that adds its effects to a Batch;
// the caller applies the batch atomically. The caller must hold latches on
// every key a command touches, so that no other command changes those keys
// between the reads and the write.

// PrewriteRequest is a transaction's writes, as prewrite and one-phase
// commit receive them.
type PrewriteRequest struct {
	Mutations []kv.Mutation
	// Pessimistic, if not nil, says for each mutation whether its key
	// holds a pessimistic lock of this transaction, taken at ForUpdateTS.
	// Those keys were checked for conflicts when locked.
	Pessimistic []bool
	Primary     []byte
	StartTS     uint64
	ForUpdateTS uint64
	LockTTL     uint64
}

func (req *PrewriteRequest) isPessimistic(i int) bool {
	return req.Pessimistic != nil && req.Pessimistic[i]
}

// checkMutation runs prewrite's checks on mutation i. It returns done if
// the key already holds this transaction's prewrite lock (a retried
// prewrite), and the transaction's own lock if it has one there.
//
// With onePhase (a commit without prewrite locks), a covered mutation (see
// kv.Mutation.Covered) is not checked for newer commits. A prewrite checks
// it anyway: there the check also finds the protective rollback record a
// lock resolver may have left on this very key.
func checkMutation(r Reader, req *PrewriteRequest, i int, encKey []byte, onePhase bool) (done bool, own *Lock, err error) {
	m := &req.Mutations[i]
	l, err := loadLock(r, encKey)
	if err != nil {
		return false, nil, err
	}
	if l != nil && l.StartTS != req.StartTS {
		return false, nil, &LockedError{Lock: l.Info(m.Key)}
	}
	if l != nil && l.Kind != LockPessimistic {
		return true, l, nil
	}
	switch {
	case l != nil:
		// Our pessimistic lock: conflicts were checked when it was taken.
	case req.isPessimistic(i):
		return false, nil, fmt.Errorf("%w: key %q, txn %d", ErrPessimisticLockNotFound, m.Key, req.StartTS)
	case onePhase && m.Covered && m.Op != kv.OpInsert:
		// Conflicts show on the key that covers it.
	default:
		// A pessimistic transaction changes keys it did not lock (index
		// entries) only under the locks of their rows, which it took at
		// ForUpdateTS: commits before that are not conflicts.
		after := req.StartTS
		if req.Pessimistic != nil && req.ForUpdateTS > after {
			after = req.ForUpdateTS
		}
		c, err := checkWrites(r, encKey, req.StartTS, after, m.Op == kv.OpInsert)
		if err != nil {
			return false, nil, err
		}
		if c.rolledBack {
			return false, nil, fmt.Errorf("%w: txn %d was rolled back on key %q", kv.ErrTxnAborted, req.StartTS, m.Key)
		}
		if c.commitTS != 0 {
			return false, nil, &kv.WriteConflictError{Key: m.Key, StartTS: req.StartTS, ConflictStartTS: c.w.StartTS, ConflictCommitTS: c.commitTS}
		}
		if c.exists {
			return false, nil, &kv.KeyExistsError{Key: m.Key}
		}
		return false, nil, nil
	}
	if m.Op == kv.OpInsert {
		exists, err := keyExists(r, encKey)
		if err != nil {
			return false, nil, err
		}
		if exists {
			return false, nil, &kv.KeyExistsError{Key: m.Key}
		}
	}
	return false, l, nil
}

func lockKindOf(op kv.Op) LockKind {
	switch op {
	case kv.OpPut, kv.OpInsert:
		return LockPut
	case kv.OpDelete:
		return LockDelete
	}
	return LockLock
}

// Prewrite locks every mutation's key for the transaction, writing long
// values to CFDefault. It fails, leaving b unusable, on the first key that
// is locked by another transaction (*LockedError), was committed since the
// transaction started (*kv.WriteConflictError), already exists for an
// insert (*kv.KeyExistsError), or saw this transaction rolled back.
func Prewrite(r Reader, b *Batch, req *PrewriteRequest) error {
	br, err := newBatchReader(r)
	if err != nil {
		return err
	}
	defer br.close()
	r = br
	for i := range req.Mutations {
		m := &req.Mutations[i]
		encKey := encodeKey(m.Key)
		done, _, err := checkMutation(r, req, i, encKey, false)
		if err != nil {
			return err
		}
		if done {
			continue
		}
		l := Lock{Kind: lockKindOf(m.Op), Primary: req.Primary, StartTS: req.StartTS, TTL: req.LockTTL,
			ForUpdateTS: req.ForUpdateTS, TxnSize: uint64(len(req.Mutations))}
		if l.Kind == LockPut {
			if len(m.Value) <= shortValueMaxLen {
				l.HasShortValue, l.ShortValue = true, m.Value
			} else {
				b.Put(CFDefault, versionKey(encKey, req.StartTS), m.Value)
			}
		}
		b.Put(CFLock, encKey, l.encode())
	}
	return nil
}

// OnePhaseCommit commits the transaction's mutations at commitTS without
// leaving locks: the checks of Prewrite followed directly by the records of
// Commit. Pessimistic locks of the transaction are released; a key that
// was only pessimistically locked (OpLock) leaves no record.
func OnePhaseCommit(r Reader, b *Batch, req *PrewriteRequest, commitTS uint64) error {
	br, err := newBatchReader(r)
	if err != nil {
		return err
	}
	defer br.close()
	r = br
	for i := range req.Mutations {
		m := &req.Mutations[i]
		encKey := encodeKey(m.Key)
		done, own, err := checkMutation(r, req, i, encKey, true)
		if err != nil {
			return err
		}
		if done {
			return fmt.Errorf("mvcc: one-phase commit of txn %d found its own prewrite lock on %q", req.StartTS, m.Key)
		}
		if own != nil {
			b.Del(CFLock, encKey)
			if m.Op == kv.OpLock {
				continue
			}
		}
		w := Write{Kind: lockKindOf(m.Op).writeKind(), StartTS: req.StartTS}
		if w.Kind == WritePut {
			if len(m.Value) <= shortValueMaxLen {
				w.HasShortValue, w.ShortValue = true, m.Value
			} else {
				b.Put(CFDefault, versionKey(encKey, req.StartTS), m.Value)
			}
		}
		b.Put(CFWrite, versionKey(encKey, commitTS), w.encode())
	}
	return nil
}

// Commit turns the transaction's prewrite locks on keys into write records
// at commitTS. A key whose lock is gone but whose commit record is present
// was committed before (a retry) and is skipped. A key with neither fails
// the commit with kv.ErrTxnAborted: the transaction was rolled back.
func Commit(r Reader, b *Batch, keys [][]byte, startTS, commitTS uint64) error {
	for _, key := range keys {
		encKey := encodeKey(key)
		l, err := loadLock(r, encKey)
		if err != nil {
			return err
		}
		if l != nil && l.StartTS == startTS {
			if l.Kind == LockPessimistic {
				return fmt.Errorf("mvcc: txn %d commits key %q that holds only a pessimistic lock", startTS, key)
			}
			if commitTS < l.MinCommitTS {
				return fmt.Errorf("mvcc: commit ts %d below the lock's min commit ts %d", commitTS, l.MinCommitTS)
			}
			commitKey(b, encKey, l, commitTS)
			continue
		}
		w, _, found, err := txnRecord(r, encKey, startTS)
		if err != nil {
			return err
		}
		if found && w.Kind != WriteRollback {
			continue
		}
		return fmt.Errorf("%w: %w: txn %d on key %q", kv.ErrTxnAborted, ErrTxnLockNotFound, startTS, key)
	}
	return nil
}

func commitKey(b *Batch, encKey []byte, l *Lock, commitTS uint64) {
	w := Write{Kind: l.Kind.writeKind(), StartTS: l.StartTS, HasShortValue: l.HasShortValue, ShortValue: l.ShortValue}
	b.Put(CFWrite, versionKey(encKey, commitTS), w.encode())
	b.Del(CFLock, encKey)
}

// Rollback rolls the transaction back on keys: it removes its locks and
// values and leaves a rollback record on each key, which makes a late
// prewrite of the same transaction fail. Rolling back a committed key fails
// with a *CommittedError.
func Rollback(r Reader, b *Batch, keys [][]byte, startTS uint64) error {
	for _, key := range keys {
		if err := rollbackKey(r, b, encodeKey(key), key, startTS); err != nil {
			return err
		}
	}
	return nil
}

func rollbackKey(r Reader, b *Batch, encKey, key []byte, startTS uint64) error {
	l, err := loadLock(r, encKey)
	if err != nil {
		return err
	}
	if l != nil && l.StartTS == startTS {
		if l.Kind == LockPut && !l.HasShortValue {
			b.Del(CFDefault, versionKey(encKey, startTS))
		}
		b.Del(CFLock, encKey)
	} else {
		w, commitTS, found, err := txnRecord(r, encKey, startTS)
		if err != nil {
			return err
		}
		if found && w.Kind == WriteRollback {
			return nil
		}
		if found {
			return &CommittedError{Key: key, CommitTS: commitTS}
		}
	}
	b.Put(CFWrite, versionKey(encKey, startTS), (&Write{Kind: WriteRollback, StartTS: startTS}).encode())
	return nil
}

// PessimisticLockRequest asks for pessimistic locks on Keys.
type PessimisticLockRequest struct {
	Keys        [][]byte
	Primary     []byte
	StartTS     uint64
	ForUpdateTS uint64
	LockTTL     uint64
}

// AcquirePessimisticLock locks req.Keys in order. It returns how many keys
// it locked (their locks are in b) and, if it stopped early, why: a
// *LockedError if another transaction holds the next key, a
// *kv.WriteConflictError if the key was committed after ForUpdateTS, or
// kv.ErrTxnAborted if this transaction was rolled back there.
func AcquirePessimisticLock(r Reader, b *Batch, req *PessimisticLockRequest) (int, error) {
	if len(req.Keys) > 1 {
		br, err := newBatchReader(r)
		if err != nil {
			return 0, err
		}
		defer br.close()
		r = br
	}
	for i, key := range req.Keys {
		encKey := encodeKey(key)
		l, err := loadLock(r, encKey)
		if err != nil {
			return i, err
		}
		if l != nil {
			if l.StartTS != req.StartTS {
				return i, &LockedError{Lock: l.Info(key)}
			}
			if l.Kind == LockPessimistic && req.ForUpdateTS > l.ForUpdateTS {
				l.ForUpdateTS = req.ForUpdateTS
				b.Put(CFLock, encKey, l.encode())
			}
			continue
		}
		commitTS, w, rolledBack, err := newerWrite(r, encKey, req.StartTS, req.ForUpdateTS)
		if err != nil {
			return i, err
		}
		if rolledBack {
			return i, fmt.Errorf("%w: txn %d was rolled back on key %q", kv.ErrTxnAborted, req.StartTS, key)
		}
		if commitTS != 0 {
			return i, &kv.WriteConflictError{Key: key, StartTS: req.StartTS, ConflictStartTS: w.StartTS, ConflictCommitTS: commitTS}
		}
		l = &Lock{Kind: LockPessimistic, Primary: req.Primary, StartTS: req.StartTS, TTL: req.LockTTL, ForUpdateTS: req.ForUpdateTS}
		b.Put(CFLock, encKey, l.encode())
	}
	return len(req.Keys), nil
}

// PessimisticRollback releases the transaction's pessimistic locks on keys
// that were taken at or below forUpdateTS; other locks are left alone.
func PessimisticRollback(r Reader, b *Batch, keys [][]byte, startTS, forUpdateTS uint64) error {
	for _, key := range keys {
		encKey := encodeKey(key)
		l, err := loadLock(r, encKey)
		if err != nil {
			return err
		}
		if l != nil && l.StartTS == startTS && l.Kind == LockPessimistic && l.ForUpdateTS <= forUpdateTS {
			b.Del(CFLock, encKey)
		}
	}
	return nil
}

// TxnState is what check-txn-status learned about a transaction.
type TxnState int

const (
	// TxnLocked: the transaction is alive; its primary lock is in place.
	TxnLocked TxnState = iota
	// TxnCommitted: the primary key was committed at CommitTS.
	TxnCommitted
	// TxnRolledBack: the transaction was (or has just been) rolled back.
	TxnRolledBack
)

func (s TxnState) String() string {
	return [...]string{"locked", "committed", "rolled back"}[s]
}

// TxnStatus is the result of CheckTxnStatus.
type TxnStatus struct {
	State    TxnState
	CommitTS uint64 // for TxnCommitted
	TTL      uint64 // for TxnLocked
	// Action says what the check itself did: "" (nothing),
	// "ttl-expire-rollback" or "lock-not-exist-rollback".
	Action string
}

// CheckTxnStatus decides the fate of the transaction that started at lockTS
// by looking at its primary key. The primary's commit record means the
// transaction committed; a rollback record means it rolled back. A primary
// lock whose TTL has run out by currentTS is rolled back now. With
// rollbackIfNotExist, a primary with no trace of the transaction gets a
// protective rollback record (so the transaction can never commit);
// otherwise that case is ErrTxnNotFound.
func CheckTxnStatus(r Reader, b *Batch, primary []byte, lockTS, currentTS uint64, rollbackIfNotExist bool) (TxnStatus, error) {
	encKey := encodeKey(primary)
	l, err := loadLock(r, encKey)
	if err != nil {
		return TxnStatus{}, err
	}
	if l != nil && l.StartTS == lockTS {
		if uint64(tso.PhysicalMs(currentTS)) < uint64(tso.PhysicalMs(lockTS))+l.TTL {
			return TxnStatus{State: TxnLocked, TTL: l.TTL}, nil
		}
		if err := rollbackKey(r, b, encKey, primary, lockTS); err != nil {
			return TxnStatus{}, err
		}
		return TxnStatus{State: TxnRolledBack, Action: "ttl-expire-rollback"}, nil
	}
	w, commitTS, found, err := txnRecord(r, encKey, lockTS)
	if err != nil {
		return TxnStatus{}, err
	}
	switch {
	case found && w.Kind == WriteRollback:
		return TxnStatus{State: TxnRolledBack}, nil
	case found:
		return TxnStatus{State: TxnCommitted, CommitTS: commitTS}, nil
	case !rollbackIfNotExist:
		return TxnStatus{}, fmt.Errorf("%w: txn %d on primary %q", ErrTxnNotFound, lockTS, primary)
	}
	if err := rollbackKey(r, b, encKey, primary, lockTS); err != nil {
		return TxnStatus{}, err
	}
	return TxnStatus{State: TxnRolledBack, Action: "lock-not-exist-rollback"}, nil
}

// ResolveLock settles the locks that transaction startTS left on keys once
// its fate is known: commit them at commitTS, or roll them back if commitTS
// is 0. Keys no longer locked by the transaction are skipped.
func ResolveLock(r Reader, b *Batch, keys [][]byte, startTS, commitTS uint64) error {
	for _, key := range keys {
		encKey := encodeKey(key)
		l, err := loadLock(r, encKey)
		if err != nil {
			return err
		}
		if l == nil || l.StartTS != startTS {
			continue
		}
		if commitTS == 0 || l.Kind == LockPessimistic {
			if err := rollbackKey(r, b, encKey, key, startTS); err != nil {
				return err
			}
			continue
		}
		commitKey(b, encKey, l, commitTS)
	}
	return nil
}
