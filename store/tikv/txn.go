package tikv

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/basalt-db/basalt/kv"
	tikvkv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv/transaction"
)

// txn is kv.Txn over a client-go transaction. Reads go to client-go's
// snapshot at the start timestamp under the transaction's own MemBuffer;
// LockKeys takes client-go's pessimistic locks at once (or, optimistic,
// marks the keys for the commit to check); Commit moves the buffered
// writes into the client-go transaction and runs its two-phase commit.
type txn struct {
	s    *Storage
	kt   *transaction.KVTxn
	mode kv.Mode
	snap snapshot
	buf  *kv.MemBuffer
	done bool
	// check, if set, decides at commit whether the schema the SQL layer
	// wrote under still holds (SetSchemaCheck).
	check SchemaCheck
	// commitWait, if set, bounds how long Commit waits for a lock its
	// prewrite met (kv.TxnOptions.LockWait).
	commitWait time.Duration
	// locked holds what the pessimistic locks of a few keys at a time
	// returned (lockedValues). lockedSnap is t.snap read through it.
	locked     map[string]lockedValue
	lockedSnap lockedReader
}

// A pessimistic lock is asked to return its key's value (TiDB's point get
// of a DML statement locks with ReturnValues): the value is the newest
// committed, which the locking statement then reads, so its read needs no
// RPC of its own. The store locks a key only if no commit above the lock's
// forUpdateTS exists, and while the lock is held no other transaction can
// commit to it: a read at forUpdateTS or above sees that value, until the
// transaction ends. A read below it (a plain SELECT at the start
// timestamp after a lock at a newer one) does not use it.
//
// This relies on the lock being held, as TiDB's pessimistic lock cache
// does. A lock the store lost (an in-memory lock on a leader change, one
// another transaction's resolver rolled back) may let a later read return
// the older value, but such a transaction cannot commit: its prewrite
// finds the lock missing and fails.
//
// Only a LockKeys of at most lockValuesKeys keys asks for values (the
// locks of point and batch-point DML and INSERT's key locks), and
// lockValuesMax values at most are kept per transaction.
const (
	lockValuesKeys = 16
	lockValuesMax  = 4096
)

// lockedValue is a locked key's newest committed value (nil: none) as
// its lock at ts returned it.
type lockedValue struct {
	val []byte
	ts  uint64
}

// lockedReader reads r through the values t's locks returned, for the
// keys locked at or below ts.
type lockedReader struct {
	t  *txn
	ts uint64
	r  kv.Retriever
}

// value is the value the lock of key returned, if it holds at r.ts.
func (r *lockedReader) value(key []byte) (lockedValue, bool) {
	lv, ok := r.t.locked[string(key)]
	return lv, ok && lv.ts <= r.ts
}

func (r *lockedReader) Get(ctx context.Context, key []byte) ([]byte, error) {
	if lv, ok := r.value(key); ok {
		return found(lv.val)
	}
	return r.r.Get(ctx, key)
}

// BatchGet is answered from the locks' values if they hold every key.
func (r *lockedReader) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	if len(r.t.locked) > 0 {
		out := make(map[string][]byte, len(keys))
		for _, k := range keys {
			lv, ok := r.value(k)
			if !ok {
				return r.r.BatchGet(ctx, keys)
			}
			if len(lv.val) > 0 {
				out[string(k)] = lv.val
			}
		}
		return out, nil
	}
	return r.r.BatchGet(ctx, keys)
}

func (r *lockedReader) Iter(start, end []byte) (kv.Iterator, error) { return r.r.Iter(start, end) }

func (r *lockedReader) IterReverse(start, end []byte) (kv.Iterator, error) {
	return r.r.IterReverse(start, end)
}

// SchemaCheck decides whether a transaction may commit at commitTS (0:
// now), given the keys it writes; an error fails the commit. It is what
// TiDB gives client-go as its schema lease checker.
type SchemaCheck func(commitTS uint64, keys iter.Seq[[]byte]) error

// SetSchemaCheck makes Commit call check before the two-phase commit and
// again, through client-go, once the commit timestamp is known (for async
// commit and 1PC, at the prewrite, with the commit bounded by client-go's
// safe window). (check is a SchemaCheck; the method takes the plain
// function type so that the SQL layer can ask for it by an interface of
// its own.)
func (t *txn) SetSchemaCheck(check func(commitTS uint64, keys iter.Seq[[]byte]) error) {
	t.check = check
}

// schemaChecker is t.check as client-go's SchemaLeaseChecker.
type schemaChecker struct{ t *txn }

func (c schemaChecker) CheckBySchemaVer(commitTS uint64, _ transaction.SchemaVer) (*transaction.RelatedSchemaChange, error) {
	return nil, c.t.check(commitTS, c.t.keys)
}

// keys yields the keys the transaction writes.
func (t *txn) keys(yield func([]byte) bool) {
	for _, m := range t.buf.Mutations() {
		if !yield(m.Key) {
			return
		}
	}
}

// noSchemaVer is the start schema client-go passes back to the checker,
// which knows its own.
type noSchemaVer struct{}

func (noSchemaVer) SchemaMetaVersion() int64 { return 0 }

func newTxn(s *Storage, kt *transaction.KVTxn, mode kv.Mode) *txn {
	t := &txn{s: s, kt: kt, mode: mode, snap: snapshot{snap: kt.GetSnapshot(), ts: kt.StartTS(), store: s}, buf: kv.NewMemBuffer()}
	t.lockedSnap = lockedReader{t: t, ts: kt.StartTS(), r: &t.snap}
	s.open.add(t, kt.StartTS())
	return t
}

func (t *txn) StartTS() uint64 { return t.kt.StartTS() }
func (t *txn) Mode() kv.Mode   { return t.mode }
func (t *txn) Len() int        { return t.buf.Len() }
func (t *txn) Size() int       { return t.buf.Size() }

func (t *txn) Savepoint() int          { return t.buf.Savepoint() }
func (t *txn) RollbackTo(sp int)       { t.buf.RollbackTo(sp) }
func (t *txn) ReleaseSavepoint(sp int) { t.buf.ReleaseSavepoint(sp) }

func (t *txn) reader() kv.BufferedReader { return kv.BufferedReader{Buf: t.buf, Snap: &t.lockedSnap} }

func (t *txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	return t.reader().Get(ctx, key)
}

func (t *txn) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	return t.reader().BatchGet(ctx, keys)
}

func (t *txn) Iter(start, end []byte) (kv.Iterator, error) { return t.reader().Iter(start, end) }

func (t *txn) IterReverse(start, end []byte) (kv.Iterator, error) {
	return t.reader().IterReverse(start, end)
}

// ReaderAt reads the transaction's writes over the data committed at ts.
func (t *txn) ReaderAt(ts uint64) kv.Retriever {
	if ts == t.kt.StartTS() {
		return t.reader()
	}
	return kv.BufferedReader{Buf: t.buf, Snap: &lockedReader{t: t, ts: ts, r: t.s.Snapshot(ts)}}
}

func (t *txn) Set(key, value []byte) error    { return t.write(key, value, kv.OpPut) }
func (t *txn) Insert(key, value []byte) error { return t.write(key, value, kv.OpInsert) }
func (t *txn) Delete(key []byte) error        { return t.write(key, nil, kv.OpDelete) }

// Cover is a hint the cluster does without: client-go checks every
// written key for conflicts.
func (t *txn) Cover(key []byte) {}

func (t *txn) write(key, value []byte, op kv.Op) error {
	if t.done {
		return kv.ErrTxnClosed
	}
	return t.buf.Write(key, value, op)
}

// LockKeys takes pessimistic locks through client-go, which skips the
// keys this transaction already holds; in an optimistic transaction
// client-go marks them for the commit to check.
func (t *txn) LockKeys(ctx context.Context, forUpdateTS uint64, wait time.Duration, keys ...[]byte) error {
	if t.done {
		return kv.ErrTxnClosed
	}
	for _, k := range keys {
		if len(k) == 0 {
			return kv.ErrEmptyKey
		}
	}
	if len(keys) == 0 {
		return nil
	}
	waitMs := wait.Milliseconds()
	switch {
	case wait < 0:
		waitMs = tikvkv.LockAlwaysWait
	case wait == 0:
		waitMs = tikvkv.LockNoWait
	case waitMs == 0:
		waitMs = 1
	}
	lctx := tikvkv.NewLockCtx(forUpdateTS, waitMs, time.Now())
	values := t.mode == kv.Pessimistic && len(keys) <= lockValuesKeys && len(t.locked) < lockValuesMax
	if values {
		lctx.InitReturnValues(len(keys))
	}
	err := mapErr(t.kt.LockKeys(ctx, lctx, keys...))
	if err == nil && values {
		t.lockedValues(lctx)
	}
	var dl *kv.DeadlockError
	if errors.As(err, &dl) {
		dl.StartTS = t.kt.StartTS()
		dl.Cycle = append([]uint64{dl.StartTS}, dl.Cycle...)
	}
	return err
}

// lockedValues keeps the values lctx's locks returned. A key this
// transaction had locked before returns none (AlreadyLocked): what an
// earlier lock returned, if anything, still holds.
func (t *txn) lockedValues(lctx *tikvkv.LockCtx) {
	if t.locked == nil {
		t.locked = make(map[string]lockedValue, len(lctx.Values))
	}
	for k, rv := range lctx.Values {
		if rv.AlreadyLocked {
			continue
		}
		v := rv.Value
		if !rv.Exists {
			v = nil
		}
		t.locked[k] = lockedValue{val: v, ts: lctx.ForUpdateTS}
	}
}

// Commit moves the buffered writes into the client-go transaction and
// commits it.
func (t *txn) Commit(ctx context.Context) error {
	if t.done {
		return kv.ErrTxnClosed
	}
	t.done = true
	defer t.s.open.remove(t)
	if t.check != nil {
		if err := t.check(0, t.keys); err != nil {
			t.kt.Rollback()
			return err
		}
		t.kt.SetSchemaVer(noSchemaVer{})
		t.kt.SetSchemaLeaseChecker(schemaChecker{t})
	}
	mb := t.kt.GetMemBuffer()
	for _, m := range t.buf.Mutations() {
		var err error
		switch m.Op {
		case kv.OpPut:
			err = mb.Set(m.Key, m.Value)
		case kv.OpInsert:
			err = mb.SetWithFlags(m.Key, m.Value, tikvkv.SetPresumeKeyNotExists)
		case kv.OpDelete:
			err = mb.Delete(m.Key)
		}
		if err != nil {
			t.kt.Rollback()
			return mapErr(err)
		}
	}
	cctx, done := watchTSO(ctx)
	err := t.kt.Commit(cctx)
	if err != nil && errors.Is(context.Cause(cctx), kv.ErrPDTimeout) {
		err = context.Cause(cctx)
	}
	done()
	if err != nil {
		err = mapErr(err)
		var wc *kv.WriteConflictError
		if t.commitWait != 0 && errors.As(err, &wc) && wc.ConflictCommitTS == 0 {
			return t.waitForLock(ctx, wc)
		}
		return err
	}
	return nil
}

// waitForLock waits, up to commitWait, for the lock that failed the
// prewrite (a write conflict with no commit ts: another transaction's
// lock on wc.Key, given back under NoResolvePolicy). It waits as a
// pessimistic transaction would, in the store's lock wait queue, by
// locking the key in a transaction of its own, which it then rolls back:
// so an expired lock is resolved, and the wait ends at once when the
// holder finishes. It returns wc for the caller to run the statement
// again at a newer timestamp, or kv.ErrLockWaitTimeout.
func (t *txn) waitForLock(ctx context.Context, wc *kv.WriteConflictError) error {
	ts, err := t.s.timestamp()
	if err != nil {
		return err
	}
	probe, err := t.s.store.Begin(tikv.WithStartTS(ts))
	if err != nil {
		return mapErr(err)
	}
	defer probe.Rollback()
	probe.SetPessimistic(true)
	waitMs := t.commitWait.Milliseconds()
	if t.commitWait < 0 {
		waitMs = tikvkv.LockAlwaysWait
	} else if waitMs == 0 {
		waitMs = 1
	}
	lctx := tikvkv.NewLockCtx(probe.StartTS(), waitMs, time.Now())
	if err := mapErr(probe.LockKeys(ctx, lctx, wc.Key)); errors.Is(err, kv.ErrLockWaitTimeout) {
		return err
	}
	// Whatever else the probe met (the holder's commit, as a write
	// conflict), the statement runs again and meets it itself.
	return wc
}

// Rollback discards the writes and releases the locks; after a failed
// commit it has nothing left to do.
func (t *txn) Rollback() error {
	if t.done {
		return nil
	}
	t.done = true
	t.s.open.remove(t)
	return mapErr(t.kt.Rollback())
}
