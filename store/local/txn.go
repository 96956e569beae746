package local

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
)

// txn is the embedded store's kv.Txn. Its writes wait in a MemBuffer until
// Commit applies them in one one-phase commit. In a pessimistic txn,
// LockKeys takes locks in the store at once; in an optimistic one it only
// remembers the keys, which the commit then checks for conflicts.
type txn struct {
	s       *Store
	startTS uint64
	mode    kv.Mode
	snap    snapshot
	buf     *kv.MemBuffer
	bufMem  kv.MemBuffer // what buf points to: one allocation with the txn

	// locked holds the keys this txn surely holds pessimistic locks on
	// (pessimistic mode), or the keys to check at commit (optimistic mode);
	// nil until LockKeys adds one (an autocommit write locks none).
	locked map[string]struct{}
	// tried holds every key a failed LockKeys may have locked: they are
	// released at the end, but cannot be counted on at commit.
	tried       map[string]struct{}
	primary     []byte
	forUpdateTS uint64
	done        bool
	// commitWait bounds the commit's wait for other transactions' locks
	// (kv.TxnOptions.LockWait); 0 is the store's CommitLockWait.
	commitWait time.Duration

	// hold is at or below startTS - 1, fixed before the txn registers in
	// the store's open set: GC keeps the versions it reads (openTxns).
	hold uint64
	// shard is the open set's shard the txn is registered in (nil when
	// it is not), and prev and next its neighbours there, under the
	// shard's lock.
	shard      *openShard
	prev, next *txn
}

func newTxn(s *Store, startTS uint64, mode kv.Mode) *txn {
	t := &txn{s: s, startTS: startTS, mode: mode, snap: snapshot{s: s, ts: startTS}}
	t.buf = &t.bufMem
	return t
}

func (t *txn) StartTS() uint64 { return t.startTS }
func (t *txn) Mode() kv.Mode   { return t.mode }
func (t *txn) Len() int        { return t.buf.Len() }
func (t *txn) Size() int       { return t.buf.Size() }

func (t *txn) Savepoint() int          { return t.buf.Savepoint() }
func (t *txn) RollbackTo(sp int)       { t.buf.RollbackTo(sp) }
func (t *txn) ReleaseSavepoint(sp int) { t.buf.ReleaseSavepoint(sp) }

func (t *txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	return t.ReaderAt(t.startTS).Get(ctx, key)
}

func (t *txn) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	return t.ReaderAt(t.startTS).BatchGet(ctx, keys)
}

func (t *txn) Iter(start, end []byte) (kv.Iterator, error) {
	return t.ReaderAt(t.startTS).Iter(start, end)
}

func (t *txn) IterReverse(start, end []byte) (kv.Iterator, error) {
	return t.ReaderAt(t.startTS).IterReverse(start, end)
}

func (t *txn) ReaderAt(ts uint64) kv.Retriever {
	sn := &t.snap
	if ts != t.startTS {
		sn = &snapshot{s: t.s, ts: ts}
	}
	return kv.BufferedReader{Buf: t.buf, Snap: sn}
}

func (t *txn) Set(key, value []byte) error    { return t.write(key, value, kv.OpPut) }
func (t *txn) Insert(key, value []byte) error { return t.write(key, value, kv.OpInsert) }
func (t *txn) Delete(key []byte) error        { return t.write(key, nil, kv.OpDelete) }

func (t *txn) Cover(key []byte) { t.buf.Cover(key) }

func (t *txn) write(key, value []byte, op kv.Op) error {
	if t.done {
		return kv.ErrTxnClosed
	}
	return t.buf.Write(key, value, op)
}

func (t *txn) LockKeys(ctx context.Context, forUpdateTS uint64, wait time.Duration, keys ...[]byte) error {
	if t.done {
		return kv.ErrTxnClosed
	}
	var need [][]byte
	for _, k := range keys {
		if len(k) == 0 {
			return kv.ErrEmptyKey
		}
		if _, ok := t.locked[string(k)]; !ok {
			need = append(need, k)
		}
	}
	if len(need) == 0 {
		return nil
	}
	if t.locked == nil {
		t.locked = make(map[string]struct{}, len(need))
	}
	if t.mode == kv.Optimistic {
		for _, k := range need {
			t.locked[string(k)] = struct{}{}
		}
		return nil
	}
	if t.primary == nil {
		t.primary = append([]byte(nil), need[0]...)
	}
	t.forUpdateTS = max(t.forUpdateTS, forUpdateTS)
	req := &mvcc.PessimisticLockRequest{Keys: need, Primary: t.primary, StartTS: t.startTS,
		ForUpdateTS: forUpdateTS, LockTTL: lockTTL}
	if err := t.s.mvcc.PessimisticLock(ctx, req, wait); err != nil {
		if t.tried == nil {
			t.tried = make(map[string]struct{})
		}
		for _, k := range need {
			t.tried[string(k)] = struct{}{}
		}
		return err
	}
	for _, k := range need {
		t.locked[string(k)] = struct{}{}
	}
	return nil
}

func (t *txn) Commit(ctx context.Context) error {
	if t.done {
		return kv.ErrTxnClosed
	}
	defer t.finish()
	muts := t.buf.Mutations()
	pess := t.mode == kv.Pessimistic
	var flags []bool
	if pess {
		flags = make([]bool, len(muts))
		for i := range muts {
			_, flags[i] = t.locked[string(muts[i].Key)]
		}
	}
	// Locked keys the txn did not write: in a pessimistic txn their locks
	// are released; in an optimistic one they are checked for conflicts.
	for k := range t.locked {
		if _, _, ok := t.buf.Get([]byte(k)); !ok {
			muts = append(muts, kv.Mutation{Op: kv.OpLock, Key: []byte(k)})
			flags = append(flags, pess)
		}
	}
	if len(muts) == 0 {
		return t.releaseTried()
	}
	req := &mvcc.PrewriteRequest{Mutations: muts, Primary: muts[0].Key, StartTS: t.startTS,
		ForUpdateTS: t.forUpdateTS, LockTTL: lockTTL}
	if pess {
		req.Pessimistic = flags
	}
	wait := t.commitWait
	if wait == 0 {
		wait = t.s.opts.CommitLockWait
	}
	_, err := t.s.mvcc.OnePhaseCommit(ctx, req, t.s.oracle.next, wait)
	if err != nil {
		return errors.Join(err, t.releaseLocks())
	}
	return t.releaseTried()
}

// Rollback ends the txn. After Commit (failed or not) it does nothing.
func (t *txn) Rollback() error {
	if t.done {
		return nil
	}
	defer t.finish()
	return t.releaseLocks()
}

func (t *txn) finish() {
	t.done = true
	t.s.finish(t)
}

// releaseLocks drops every pessimistic lock the txn may hold.
func (t *txn) releaseLocks() error {
	if t.mode != kv.Pessimistic {
		return nil
	}
	keys := make([][]byte, 0, len(t.locked)+len(t.tried))
	for k := range t.locked {
		keys = append(keys, []byte(k))
	}
	for k := range t.tried {
		if _, ok := t.locked[k]; !ok {
			keys = append(keys, []byte(k))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return t.s.mvcc.PessimisticRollback(context.Background(), keys, t.startTS, math.MaxUint64)
}

// releaseTried drops locks that failed LockKeys calls may have left.
func (t *txn) releaseTried() error {
	if len(t.tried) == 0 {
		return nil
	}
	keys := make([][]byte, 0, len(t.tried))
	for k := range t.tried {
		if _, ok := t.locked[k]; !ok {
			keys = append(keys, []byte(k))
		}
	}
	return t.s.mvcc.PessimisticRollback(context.Background(), keys, t.startTS, math.MaxUint64)
}
