package mvcc

import (
	"bytes"
	"errors"
	"fmt"
	"math"

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
	// MinCommitTS is kept in each lock: the transaction must commit above
	// it (see CheckTxnStatus, which pushes it). Zero: no bound.
	MinCommitTS uint64
	// TxnSize is the number of keys of the whole transaction, kept in each
	// lock for lock resolvers; zero means len(Mutations).
	TxnSize uint64
	// NotExist are keys that must not exist: checked as an insert's key
	// is, but not locked (TiKV's CheckNotExists mutations).
	NotExist [][]byte

	// AsyncCommit and TryOnePC let the store choose the commit ts (see
	// commitTS): AsyncCommit writes async-commit locks that keep it as
	// their MinCommitTS, and Secondaries on the primary's; TryOnePC
	// commits at it at once, leaving no locks. Either falls back to
	// ordinary locks if the ts would exceed MaxCommitTS (zero: no bound).
	AsyncCommit bool
	Secondaries [][]byte
	TryOnePC    bool
	MaxCommitTS uint64
}

// PrewriteResult is how a prewrite that let the store choose the commit
// ts ended. All zero: it wrote ordinary locks (it fell back, or was asked
// for two phases), and the client commits them at a ts of its own.
type PrewriteResult struct {
	// MinCommitTS: the async-commit locks hold it; the transaction is
	// committed, at the largest MinCommitTS of its locks.
	MinCommitTS uint64
	// OnePCCommitTS: the transaction committed at it.
	OnePCCommitTS uint64
	// Committed: the prewrite was a retry, and found the transaction
	// committed (at MinCommitTS or OnePCCommitTS, whichever the request
	// asked for).
	Committed bool
}

// commitTS is the commit ts that a store whose readers have read at up to
// maxTS chooses for req, as TiKV does: above every read of the keys the
// store has served (so that none of them missed the commit), above the
// transaction's start and for-update ts, and at or above the client's
// bound. The caller must take maxTS after marking req's keys committing
// (Latches.MarkCommitting): a reader either raised max ts before, or waits
// for the prewrite.
func commitTS(req *PrewriteRequest, maxTS uint64) uint64 {
	return max(req.MinCommitTS, req.StartTS+1, req.ForUpdateTS+1, maxTS+1)
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
//
// clear says that the checks read the key's records from startTS up and
// found no rollback record there: a commit above startTS cannot overlap
// one (see overlapsRollback), since any other record above ForUpdateTS
// would have been a conflict.
func checkMutation(r Reader, req *PrewriteRequest, i int, encKey []byte, onePhase bool) (done bool, own *Lock, clear bool, err error) {
	m := &req.Mutations[i]
	l, err := loadLock(r, encKey)
	if err != nil {
		return false, nil, false, err
	}
	if l != nil && l.StartTS != req.StartTS {
		return false, nil, false, &LockedError{Lock: l.Info(m.Key)}
	}
	if l != nil && l.Kind != LockPessimistic {
		return true, l, false, nil
	}
	switch {
	case l != nil:
		// Our pessimistic lock: conflicts were checked when it was taken.
	case req.isPessimistic(i):
		return false, nil, false, fmt.Errorf("%w: key %q, txn %d", ErrPessimisticLockNotFound, m.Key, req.StartTS)
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
		c, err := checkWrites(r, encKey, req.StartTS, after, m.Op == kv.OpInsert, false)
		if err != nil {
			return false, nil, false, err
		}
		if c.rolledBack {
			return false, nil, false, &RolledBackError{Key: m.Key, StartTS: req.StartTS}
		}
		if c.commitTS != 0 {
			return false, nil, false, &kv.WriteConflictError{Key: m.Key, StartTS: req.StartTS, ConflictStartTS: c.w.StartTS, ConflictCommitTS: c.commitTS}
		}
		if c.exists {
			return false, nil, false, &kv.KeyExistsError{Key: m.Key}
		}
		return false, nil, !c.otherRollback, nil
	}
	if m.Op == kv.OpInsert {
		exists, err := keyExists(r, encKey)
		if err != nil {
			return false, nil, false, err
		}
		if exists {
			return false, nil, false, &kv.KeyExistsError{Key: m.Key}
		}
	}
	return false, l, false, nil
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
// insert or a NotExist key (*kv.KeyExistsError), or saw this transaction
// rolled back (*RolledBackError).
//
// With AsyncCommit or TryOnePC it chooses the commit ts from maxTS (see
// commitTS) and writes async-commit locks, or the commit records at once,
// unless the ts exceeds MaxCommitTS: then it falls back to ordinary locks.
//
// A retry is answered as the first attempt was: a key that holds the
// transaction's prewrite lock is left alone (the result carries the
// lock's min commit ts if it is an async-commit one), and a key where the
// transaction has committed makes the whole prewrite a success
// (PrewriteResult.Committed). A one-phase commit cannot join locks written
// before, so meeting one it falls back.
func Prewrite(r Reader, b *Batch, req *PrewriteRequest, maxTS uint64) (PrewriteResult, error) {
	br, err := newBatchReader(r)
	if err != nil {
		return PrewriteResult{}, err
	}
	defer br.close()
	r = br
	// The keys to write, with the transaction's pessimistic lock on each
	// (nil: none), and what the retried ones hold.
	var (
		todo                  []int
		encKeys               = make([][]byte, len(req.Mutations))
		owns                  = make([]*Lock, len(req.Mutations))
		clears                = make([]bool, len(req.Mutations))
		retried, retriedPlain bool
		retriedMin            uint64
	)
	for i := range req.Mutations {
		m := &req.Mutations[i]
		encKeys[i] = encodeKey(m.Key)
		done, own, clear, err := checkMutation(r, req, i, encKeys[i], false)
		if err != nil {
			return committedBefore(r, req, m.Key, err)
		}
		clears[i] = clear
		if done {
			retried = true
			if own.UseAsyncCommit {
				retriedMin = max(retriedMin, own.MinCommitTS)
			} else {
				retriedPlain = true
			}
			continue
		}
		todo, owns[i] = append(todo, i), own
	}
	for _, key := range req.NotExist {
		if err := checkNotExist(r, req, key); err != nil {
			return PrewriteResult{}, err
		}
	}

	var res PrewriteResult
	ts, async, onePC := uint64(0), false, false
	switch {
	case !req.AsyncCommit && !req.TryOnePC:
	case len(todo) == 0:
		// A retry of a prewrite that wrote every lock: answer as it did.
		if req.AsyncCommit && !req.TryOnePC && !retriedPlain {
			res.MinCommitTS = retriedMin
		}
		return res, nil
	case retriedPlain, req.TryOnePC && retried:
	default:
		ts = max(commitTS(req, maxTS), retriedMin)
		if req.MaxCommitTS != 0 && ts > req.MaxCommitTS {
			break
		}
		onePC, async = req.TryOnePC, !req.TryOnePC
	}

	for _, i := range todo {
		m, encKey := &req.Mutations[i], encKeys[i]
		if onePC {
			if err := onePhaseRecord(r, b, req, m, encKey, owns[i], clears[i], ts); err != nil {
				return PrewriteResult{}, err
			}
			continue
		}
		l := Lock{Kind: lockKindOf(m.Op), Primary: req.Primary, StartTS: req.StartTS, TTL: req.LockTTL,
			ForUpdateTS: req.ForUpdateTS, MinCommitTS: req.MinCommitTS, TxnSize: req.TxnSize}
		if own := owns[i]; own != nil {
			// As TiKV: the lock keeps what its pessimistic lock had
			// gained, the TTL heartbeats extended and a min commit ts
			// readers pushed. A client asks for a TTL counted from the
			// start of a transaction it kept alive by heartbeats; taken
			// as is, the lock of a transaction that waited would expire
			// at once, and a reader resolving it would roll back a
			// transaction about to commit.
			l.TTL = max(l.TTL, own.TTL)
			l.MinCommitTS = max(l.MinCommitTS, own.MinCommitTS)
		}
		if l.TxnSize == 0 {
			l.TxnSize = uint64(len(req.Mutations))
		}
		if async {
			l.MinCommitTS, l.UseAsyncCommit = ts, true
			if bytes.Equal(m.Key, req.Primary) {
				l.Secondaries = req.Secondaries
			}
		}
		if l.Kind == LockPut {
			if len(m.Value) <= shortValueMaxLen {
				l.HasShortValue, l.ShortValue = true, m.Value
			} else {
				b.Put(CFDefault, versionKey(encKey, req.StartTS), m.Value)
			}
		}
		b.Put(CFLock, encKey, l.encode())
	}
	switch {
	case onePC:
		res.OnePCCommitTS = ts
	case async:
		res.MinCommitTS = ts
	}
	return res, nil
}

// committedBefore answers a prewrite that failed with err on key: a
// retry of a transaction that has committed since meets its own commit
// record there, as a write conflict or as its pessimistic lock gone, and
// succeeds (as TiKV answers it). Any other failure stands.
func committedBefore(r Reader, req *PrewriteRequest, key []byte, err error) (PrewriteResult, error) {
	var wc *kv.WriteConflictError
	if !errors.As(err, &wc) && !errors.Is(err, ErrPessimisticLockNotFound) {
		return PrewriteResult{}, err
	}
	w, commitTS, found, rerr := txnRecord(r, encodeKey(key), req.StartTS)
	if rerr != nil {
		return PrewriteResult{}, rerr
	}
	if !found || w.Kind == WriteRollback {
		return PrewriteResult{}, err
	}
	res := PrewriteResult{Committed: true}
	switch {
	case req.TryOnePC:
		res.OnePCCommitTS = commitTS
	case req.AsyncCommit:
		res.MinCommitTS = commitTS
	}
	return res, nil
}

// onePhaseRecord writes mutation m's commit record at commitTS, releasing
// own, the transaction's pessimistic lock on the key (nil: none). A
// lock-only mutation leaves a lock record, which tells a retried prewrite
// that the transaction committed. clear: the prewrite's checks found no
// rollback record the commit could overlap (see checkMutation); nor can
// there be one where the write filter proves the key has no record at or
// above commitTS.
func onePhaseRecord(r Reader, b *Batch, req *PrewriteRequest, m *kv.Mutation, encKey []byte, own *Lock, clear bool, commitTS uint64) error {
	if own != nil {
		b.Del(CFLock, encKey)
	}
	w := Write{Kind: lockKindOf(m.Op).writeKind(), StartTS: req.StartTS}
	if !clear && !noWritesSince(r, encKey, commitTS) {
		overlap, err := overlapsRollback(r, encKey, commitTS)
		if err != nil {
			return err
		}
		w.OverlappedRollback = overlap
	}
	if w.Kind == WritePut {
		if len(m.Value) <= shortValueMaxLen {
			w.HasShortValue, w.ShortValue = true, m.Value
		} else {
			b.Put(CFDefault, versionKey(encKey, req.StartTS), m.Value)
		}
	}
	b.Put(CFWrite, versionKey(encKey, commitTS), w.encode())
	return nil
}

// checkNotExist runs an insert's checks on key without locking it.
func checkNotExist(r Reader, req *PrewriteRequest, key []byte) error {
	encKey := encodeKey(key)
	l, err := loadLock(r, encKey)
	if err != nil {
		return err
	}
	if l != nil && l.StartTS != req.StartTS {
		return &LockedError{Lock: l.Info(key)}
	}
	after := req.StartTS
	if req.Pessimistic != nil && req.ForUpdateTS > after {
		after = req.ForUpdateTS
	}
	c, err := checkWrites(r, encKey, req.StartTS, after, true, false)
	switch {
	case err != nil:
		return err
	case c.rolledBack:
		return &RolledBackError{Key: key, StartTS: req.StartTS}
	case c.commitTS != 0:
		return &kv.WriteConflictError{Key: key, StartTS: req.StartTS, ConflictStartTS: c.w.StartTS, ConflictCommitTS: c.commitTS}
	case c.exists:
		return &kv.KeyExistsError{Key: key}
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
		done, own, _, err := checkMutation(r, req, i, encKey, true)
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
// the commit with a *TxnLockNotFoundError (which is kv.ErrTxnAborted): the
// transaction was rolled back. A commit below a lock's MinCommitTS fails
// with a *CommitTSExpiredError.
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
				return &CommitTSExpiredError{Key: key, StartTS: startTS, CommitTS: commitTS, MinCommitTS: l.MinCommitTS}
			}
			if err := commitKey(r, b, encKey, l, commitTS); err != nil {
				return err
			}
			continue
		}
		w, _, found, err := txnRecord(r, encKey, startTS)
		if err != nil {
			return err
		}
		if found && w.Kind != WriteRollback {
			continue
		}
		return &TxnLockNotFoundError{Key: key, StartTS: startTS}
	}
	return nil
}

// commitKey turns l, the lock on encKey, into its commit record at
// commitTS. An async-commit transaction's commit ts was chosen by a store,
// not issued by PD, and may be another transaction's start ts: a rollback
// record of that transaction at the same version is kept (see
// Write.OverlappedRollback).
func commitKey(r Reader, b *Batch, encKey []byte, l *Lock, commitTS uint64) error {
	w := Write{Kind: l.Kind.writeKind(), StartTS: l.StartTS, HasShortValue: l.HasShortValue, ShortValue: l.ShortValue}
	if l.UseAsyncCommit {
		overlap, err := overlapsRollback(r, encKey, commitTS)
		if err != nil {
			return err
		}
		w.OverlappedRollback = overlap
	}
	b.Put(CFWrite, versionKey(encKey, commitTS), w.encode())
	b.Del(CFLock, encKey)
	return nil
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
	// Another transaction may have committed at our start ts (a commit ts
	// chosen by a store): its record keeps our rollback.
	vk := versionKey(encKey, startTS)
	v, err := r.Get(CFWrite, vk)
	switch {
	case errors.Is(err, ErrEngineNotFound):
		b.Put(CFWrite, vk, (&Write{Kind: WriteRollback, StartTS: startTS}).encode())
	case err != nil:
		return err
	default:
		w, err := decodeWrite(v)
		if err != nil {
			return err
		}
		if w.StartTS != startTS && !w.OverlappedRollback {
			w.OverlappedRollback = true
			b.Put(CFWrite, vk, w.encode())
		}
	}
	return nil
}

// PessimisticLockRequest asks for pessimistic locks on Keys.
type PessimisticLockRequest struct {
	Keys        [][]byte
	Primary     []byte
	StartTS     uint64
	ForUpdateTS uint64
	LockTTL     uint64
	// MinCommitTS is kept in the locks (see PrewriteRequest).
	MinCommitTS uint64
	// LockOnlyIfExists: a key with no value is left unlocked.
	LockOnlyIfExists bool
	// Value, if not nil, is told the newest committed value of each key
	// the request locks or passes over (found false: none; value is the
	// callee's to keep), read in the pass that checks the key's records
	// for conflicts. Once the key is locked no commit can change it.
	Value func(key, value []byte, found bool)
}

// AcquirePessimisticLock locks req.Keys in order. It returns how many keys
// it locked or passed over (their locks are in b) and, if it stopped early,
// why: a *LockedError if another transaction holds the next key, a
// *kv.WriteConflictError if the key was committed after ForUpdateTS, or a
// *RolledBackError if this transaction was rolled back there.
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
			if req.Value != nil {
				if err := newestValue(r, encKey, key, req.Value); err != nil {
					return i, err
				}
			}
			continue
		}
		// One pass over the key's records answers the conflict check, and
		// the existence check or the value if asked.
		want := req.LockOnlyIfExists || req.Value != nil
		c, err := checkWrites(r, encKey, req.StartTS, req.ForUpdateTS, want, req.Value != nil)
		if err != nil {
			return i, err
		}
		if c.rolledBack {
			return i, &RolledBackError{Key: key, StartTS: req.StartTS}
		}
		if c.commitTS != 0 {
			return i, &kv.WriteConflictError{Key: key, StartTS: req.StartTS, ConflictStartTS: c.w.StartTS, ConflictCommitTS: c.commitTS}
		}
		if req.Value != nil {
			v := c.newest.ShortValue
			if c.exists && !c.newest.HasShortValue {
				if v, err = r.Get(CFDefault, versionKey(encKey, c.newest.StartTS)); err != nil {
					return i, errors.Join(errors.New("mvcc: committed value missing from CFDefault"), err)
				}
			}
			req.Value(key, v, c.exists)
		}
		if req.LockOnlyIfExists && !c.exists {
			continue
		}
		l = &Lock{Kind: LockPessimistic, Primary: req.Primary, StartTS: req.StartTS, TTL: req.LockTTL,
			ForUpdateTS: req.ForUpdateTS, MinCommitTS: req.MinCommitTS}
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

// TxnAction is what check-txn-status did to the transaction's primary,
// as TiKV reports it to the client (kvrpcpb.Action).
type TxnAction int

const (
	// ActionNone: nothing.
	ActionNone TxnAction = iota
	// ActionTTLExpireRollback: the primary lock had expired; it was rolled
	// back.
	ActionTTLExpireRollback
	// ActionLockNotExistRollback: no trace of the transaction; a rollback
	// record now keeps it from committing.
	ActionLockNotExistRollback
	// ActionMinCommitTSPushed: the transaction is alive but will commit
	// above the caller's start ts, so the caller may read past its locks.
	ActionMinCommitTSPushed
	// ActionTTLExpirePessimisticRollback: the expired primary lock was only
	// pessimistic; it was released without a rollback record.
	ActionTTLExpirePessimisticRollback
	// ActionLockNotExistDoNothing: no trace of the transaction, and the
	// caller resolves a pessimistic lock: nothing was written.
	ActionLockNotExistDoNothing
)

func (a TxnAction) String() string {
	return [...]string{"none", "ttl-expire-rollback", "lock-not-exist-rollback", "min-commit-ts-pushed",
		"ttl-expire-pessimistic-rollback", "lock-not-exist-do-nothing"}[a]
}

// TxnStatus is the result of CheckTxnStatus.
type TxnStatus struct {
	State    TxnState
	CommitTS uint64 // for TxnCommitted
	TTL      uint64 // for TxnLocked
	// Lock is the primary lock, for TxnLocked.
	Lock   *LockInfo
	Action TxnAction
}

// CheckTxnStatusRequest asks for the fate of the transaction that started
// at LockTS, from its primary key.
type CheckTxnStatusRequest struct {
	Primary []byte
	LockTS  uint64
	// CallerStartTS is the start ts of a reader that met one of the
	// transaction's locks (0 for a writer): a live primary lock's
	// MinCommitTS is pushed above it, so that the reader may pass the
	// transaction's locks. math.MaxUint64 passes them without a push.
	CallerStartTS uint64
	// CurrentTS decides whether the lock's TTL has run out.
	CurrentTS uint64
	// RollbackIfNotExist: with no trace of the transaction on its primary,
	// leave a rollback record instead of failing with ErrTxnNotFound.
	RollbackIfNotExist bool
	// ResolvingPessimisticLock: the caller met a pessimistic lock. An
	// expired pessimistic primary is released without a rollback record,
	// and a missing one is left alone.
	ResolvingPessimisticLock bool
	// VerifyIsPrimary: fail with a *PrimaryMismatchError if the lock found
	// names another primary.
	VerifyIsPrimary bool
	// ForceSyncCommit: treat an async-commit primary as an ordinary one
	// (a resolver found one of its locks that fell back to two phases).
	ForceSyncCommit bool
}

// lockExpired reports whether l's TTL has run out at currentTS.
func lockExpired(l *Lock, currentTS uint64) bool {
	return uint64(tso.PhysicalMs(currentTS)) >= uint64(tso.PhysicalMs(l.StartTS))+l.TTL
}

// CheckTxnStatus decides the fate of a transaction by looking at its
// primary key. The primary's commit record means the transaction
// committed; a rollback record means it rolled back. A primary lock whose
// TTL has run out by CurrentTS is rolled back now; a live one may have its
// MinCommitTS pushed past CallerStartTS (which a commit below it then
// fails with a *CommitTSExpiredError). With no trace of the transaction,
// RollbackIfNotExist leaves a protective rollback record (so the
// transaction can never commit); otherwise that case is ErrTxnNotFound.
// An async-commit primary lock is only reported, expired or not, unless
// ForceSyncCommit: its transaction's fate is in its secondaries.
func CheckTxnStatus(r Reader, b *Batch, req *CheckTxnStatusRequest) (TxnStatus, error) {
	encKey := encodeKey(req.Primary)
	l, err := loadLock(r, encKey)
	if err != nil {
		return TxnStatus{}, err
	}
	if l != nil && l.StartTS == req.LockTS {
		if req.VerifyIsPrimary && !bytes.Equal(l.Primary, req.Primary) {
			return TxnStatus{}, &PrimaryMismatchError{Lock: l.Info(req.Primary)}
		}
		if l.UseAsyncCommit && !req.ForceSyncCommit {
			// The transaction may be committed already, at a ts its client
			// took from its locks' min commit ts: neither rolled back nor
			// pushed here. Its resolver decides from its secondaries.
			info := l.Info(req.Primary)
			return TxnStatus{State: TxnLocked, TTL: l.TTL, Lock: &info}, nil
		}
		if lockExpired(l, req.CurrentTS) {
			if req.ResolvingPessimisticLock && l.Kind == LockPessimistic {
				b.Del(CFLock, encKey)
				return TxnStatus{State: TxnRolledBack, Action: ActionTTLExpirePessimisticRollback}, nil
			}
			if err := rollbackKey(r, b, encKey, req.Primary, req.LockTS); err != nil {
				return TxnStatus{}, err
			}
			return TxnStatus{State: TxnRolledBack, Action: ActionTTLExpireRollback}, nil
		}
		// Only prewrite locks block readers; a lock written without a
		// MinCommitTS came from a client that does not expect a push.
		caller := req.CallerStartTS
		if l.Kind != LockPessimistic && l.MinCommitTS != 0 && caller != math.MaxUint64 && caller >= l.MinCommitTS {
			l.MinCommitTS = max(caller+1, req.CurrentTS)
			b.Put(CFLock, encKey, l.encode())
		}
		st := TxnStatus{State: TxnLocked, TTL: l.TTL}
		if (caller != 0 && l.MinCommitTS > caller) || caller == math.MaxUint64 {
			st.Action = ActionMinCommitTSPushed
		}
		info := l.Info(req.Primary)
		st.Lock = &info
		return st, nil
	}
	w, commitTS, found, err := txnRecord(r, encKey, req.LockTS)
	if err != nil {
		return TxnStatus{}, err
	}
	switch {
	case found && w.Kind == WriteRollback:
		return TxnStatus{State: TxnRolledBack}, nil
	case found:
		return TxnStatus{State: TxnCommitted, CommitTS: commitTS}, nil
	case !req.RollbackIfNotExist:
		return TxnStatus{}, fmt.Errorf("%w: txn %d on primary %q", ErrTxnNotFound, req.LockTS, req.Primary)
	case req.ResolvingPessimisticLock:
		return TxnStatus{State: TxnRolledBack, Action: ActionLockNotExistDoNothing}, nil
	}
	if err := rollbackKey(r, b, encKey, req.Primary, req.LockTS); err != nil {
		return TxnStatus{}, err
	}
	return TxnStatus{State: TxnRolledBack, Action: ActionLockNotExistRollback}, nil
}

// TxnHeartBeat extends the TTL of transaction startTS's lock on its primary
// to adviseTTL, if that is longer, and returns the TTL now in force. With
// no such lock it fails with ErrTxnNotFound.
func TxnHeartBeat(r Reader, b *Batch, primary []byte, startTS, adviseTTL uint64) (uint64, error) {
	encKey := encodeKey(primary)
	l, err := loadLock(r, encKey)
	if err != nil {
		return 0, err
	}
	if l == nil || l.StartTS != startTS {
		return 0, fmt.Errorf("%w: txn %d has no lock on primary %q", ErrTxnNotFound, startTS, primary)
	}
	if adviseTTL > l.TTL {
		l.TTL = adviseTTL
		b.Put(CFLock, encKey, l.encode())
	}
	return l.TTL, nil
}

// Cleanup rolls transaction startTS back on key, as Rollback does, unless
// its lock there is still alive at currentTS (a *LockedError); currentTS 0
// rolls back regardless.
func Cleanup(r Reader, b *Batch, key []byte, startTS, currentTS uint64) error {
	encKey := encodeKey(key)
	l, err := loadLock(r, encKey)
	if err != nil {
		return err
	}
	if l != nil && l.StartTS == startTS && currentTS != 0 && !lockExpired(l, currentTS) {
		return &LockedError{Lock: l.Info(key)}
	}
	return rollbackKey(r, b, encKey, key, startTS)
}

// SecondaryLocks is what CheckSecondaryLocks found: the transaction's
// prewrite locks on every key (it may still commit), a commit (CommitTS),
// or, with neither, a rollback.
type SecondaryLocks struct {
	Locks    []LockInfo
	CommitTS uint64
}

// CheckSecondaryLocks decides the fate of transaction startTS from its
// secondary keys, as a resolver of an async-commit transaction does. A
// key committed decides it committed; a key rolled back, only
// pessimistically locked, or without any trace of the transaction
// decides it rolled back, and is made to stay so (the pessimistic lock is
// rolled back, a missing one gets a rollback record). Otherwise every key
// holds a prewrite lock, and they are returned.
func CheckSecondaryLocks(r Reader, b *Batch, keys [][]byte, startTS uint64) (SecondaryLocks, error) {
	var res SecondaryLocks
	for _, key := range keys {
		encKey := encodeKey(key)
		l, err := loadLock(r, encKey)
		if err != nil {
			return SecondaryLocks{}, err
		}
		if l != nil && l.StartTS == startTS && l.Kind != LockPessimistic {
			res.Locks = append(res.Locks, l.Info(key))
			continue
		}
		if l == nil || l.StartTS != startTS {
			w, commitTS, found, err := txnRecord(r, encKey, startTS)
			if err != nil {
				return SecondaryLocks{}, err
			}
			if found && w.Kind != WriteRollback {
				return SecondaryLocks{CommitTS: commitTS}, nil
			}
			if found {
				return SecondaryLocks{}, nil
			}
		}
		return SecondaryLocks{}, rollbackKey(r, b, encKey, key, startTS)
	}
	return res, nil
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
		if err := commitKey(r, b, encKey, l, commitTS); err != nil {
			return err
		}
	}
	return nil
}
