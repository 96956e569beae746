package mvcc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// Store runs the transaction commands against one engine, the way a storage
// node serves them: each command holds latches on its keys while it reads
// and writes, lock waits are parked in a WaitManager with deadlock
// detection, and released locks wake their waiters. The embedded store uses
// it directly; a replicated region will run the same commands.
//
// What only the embedded store may do is not the core's behaviour but an
// Option it turns on: see Options.
//
// All methods are safe for concurrent use.
type Store struct {
	eng     Engine
	latches *Latches
	waits   *WaitManager
	// Sync says whether writes that end a transaction (commits and
	// rollbacks) wait for durability. Lock-only writes never do: locks of
	// a crashed process die with it. It starts as Options.Sync; change it
	// only while no command runs.
	Sync bool

	onePhaseOnly bool          // Options.OnePhaseOnly
	cache        *latestCache  // see latest.go; nil unless Options.LatestCacheSize > 0
	recent       *recentWrites // see recent.go; nil unless Options.WriteFilterFloor > 0 or WriteTable is set
}

// Options choose how a Store serves. The zero value is the shared core, as
// a storage node runs it: two-phase commits, reads that check the lock
// column family, no cache. OnePhaseOnly and LatestCacheSize are for a
// store whose every transaction commits in one phase, as the embedded
// store's do because all its keys live in one place.
type Options struct {
	// Sync is the store's initial Sync.
	Sync bool
	// OnePhaseOnly says the store commits only with OnePhaseCommit, so the
	// lock column family never holds a lock that blocks readers (only
	// pessimistic ones), and reads skip it. Prewrite is then refused.
	OnePhaseOnly bool
	// LatestCacheSize, if positive, keeps the newest version of the keys of
	// hot chunks in memory, up to that many bytes (see latest.go). It needs
	// OnePhaseOnly.
	LatestCacheSize int64
	// WriteFilterFloor, if not zero, is a timestamp above the version of
	// every record in the engine, and promises that every later write of
	// the engine goes through this Store. The Store then remembers, in a
	// small hashed table, the versions it writes, so that a commit's or a
	// pessimistic lock's conflict check on a key that nobody wrote since
	// the transaction started skips the engine (see recent.go). The
	// embedded store sets it to a fresh timestamp when it opens.
	WriteFilterFloor uint64
	// WriteTable and WriteFloor, both set, give the Store a write filter
	// over a table it shares with other Stores whose engines hold other
	// keys (a storage node's regions), and a floor of its own that the
	// caller owns. The Store notes every CFWrite record it writes in the
	// table, whatever the floor, and its conflict checks trust the filter
	// below the floor's current value. The caller may raise the floor at
	// any time (math.MaxUint64: the filter proves nothing), and may lower
	// it to ts only when every CFWrite record that is in the engine, or
	// may yet be written to it, and that no Store noted in the table, has
	// a version below ts (a region's leader: see storenode/raftstore's
	// Peer.SetWriteFloor). WriteFilterFloor is then ignored.
	WriteTable *WriteTable
	WriteFloor *atomic.Uint64
	// Latches and Waits, if set, are shared with other Stores: a storage
	// node runs one Store per region, over the region's replicated engine,
	// and all of them share the node's latches and lock waits, so that a
	// deadlock across its regions is found and a region that splits keeps
	// its waiters. Nil: the Store's own.
	Latches *Latches
	Waits   *WaitManager
}

// NewStore returns a Store over eng. Lock wait timeouts are timed by clock.
func NewStore(eng Engine, clock Clock, opts Options) (*Store, error) {
	s := &Store{eng: eng, latches: opts.Latches, waits: opts.Waits,
		Sync: opts.Sync, onePhaseOnly: opts.OnePhaseOnly}
	if s.latches == nil {
		s.latches = NewLatches()
	}
	if s.waits == nil {
		s.waits = NewWaitManager(clock)
	}
	switch {
	case opts.WriteTable != nil && opts.WriteFloor != nil:
		s.recent = &recentWrites{floor: opts.WriteFloor, WriteTable: opts.WriteTable}
	case opts.WriteFilterFloor > 0:
		s.recent = newRecentWrites(opts.WriteFilterFloor)
	}
	if opts.LatestCacheSize > 0 {
		if !opts.OnePhaseOnly {
			return nil, errors.New("mvcc: the latest-version cache needs a one-phase-only store")
		}
		s.cache = newLatestCache(opts.LatestCacheSize)
	}
	return s, nil
}

// LatestCacheStats describes the latest-version cache; ok is false if it
// is not enabled.
func (s *Store) LatestCacheStats() (st LatestCacheStats, ok bool) {
	if s.cache == nil {
		return st, false
	}
	return s.cache.stats(), true
}

// ProposingEngine is an Engine whose writes are ordered before they are
// applied: a Raft group's, whose leader accepts a write into its log and
// applies it once a quorum holds it. A Store writes through WriteProposed
// when its engine has it, so that a caller may answer a command before its
// write applies (Hooks.Proposed).
type ProposingEngine interface {
	Engine
	// WriteProposed is Write that calls proposed, if not nil, once the
	// batch is ordered: from then on it applies unless the engine fails
	// as a whole (a leader that loses its leadership), in which case
	// WriteProposed returns that error and the batch may be lost.
	WriteProposed(b *Batch, sync bool, proposed func()) error
}

// Scheduler bounds how many commands decide their writes at once, as
// TiKV's scheduler worker pool does: a command takes a slot once it holds
// its latches, reads and decides its batch, and gives the slot back as it
// hands the batch to the engine, not when the batch is applied; waiting
// for latches, for another transaction's lock, or for replication holds
// no slot. Acquire waits for a slot or for ctx to end; each successful
// Acquire is matched by one Release.
type Scheduler interface {
	Acquire(ctx context.Context) error
	Release()
}

// Hooks are what the caller of a Store's write commands can bound and
// learn of, carried by a command's context (WithHooks), as net/http/httptrace
// carries its hooks. Nil fields do nothing. The embedded store sets none.
type Hooks struct {
	// Scheduler, if set, gives the commands their slots to decide in.
	Scheduler Scheduler
	// Proposed, if set, is called when PessimisticLock hands the engine
	// the batch that holds the last of the request's locks and a
	// ProposingEngine has ordered it, before it applies: the command's
	// answer is known then (TiKV's pipelined pessimistic lock). The
	// command still holds its latches until the batch applies, so later
	// commands on its keys see the locks; if the engine fails instead,
	// the command returns the error and the locks may be lost, which a
	// later pessimistic prewrite finds (it fails: its lock is missing).
	// It is not called for a batch that is followed by a wait for
	// another transaction's lock, nor when there is nothing to write.
	Proposed func()
}

type hooksKey struct{}

// WithHooks returns ctx carrying h for the commands run under it.
func WithHooks(ctx context.Context, h *Hooks) context.Context {
	return context.WithValue(ctx, hooksKey{}, h)
}

func hooksOf(ctx context.Context) *Hooks {
	h, _ := ctx.Value(hooksKey{}).(*Hooks)
	return h
}

// schedSlot is a command's place in its context's Scheduler, if it has
// one.
type schedSlot struct {
	sched Scheduler
	held  bool
}

// takeSlot waits for a slot of ctx's scheduler (none: at once). Call it
// with the command's latches held; free the slot with release.
func takeSlot(ctx context.Context) (schedSlot, error) {
	h := hooksOf(ctx)
	if h == nil || h.Scheduler == nil {
		return schedSlot{}, nil
	}
	if err := h.Scheduler.Acquire(ctx); err != nil {
		return schedSlot{}, err
	}
	return schedSlot{sched: h.Scheduler, held: true}, nil
}

// release gives the slot back; later calls do nothing.
func (sl *schedSlot) release() {
	if sl.held {
		sl.held = false
		sl.sched.Release()
	}
}

// write applies b to the engine and then to the cache. Commands call it
// with their latches held. proposed, if not nil, is passed on to a
// ProposingEngine; other engines ignore it.
func (s *Store) write(b *Batch, sync bool, proposed func()) error {
	if s.recent != nil {
		s.recent.noteBatch(b)
	}
	var err error
	if pe, ok := s.eng.(ProposingEngine); ok {
		err = pe.WriteProposed(b, sync, proposed)
	} else {
		err = s.eng.Write(b, sync)
	}
	if s.cache != nil {
		if err != nil {
			s.cache.clear() // the batch may or may not be applied
		} else {
			s.cache.apply(b)
		}
	}
	return err
}

// reader is the engine as the commands' conflict checks read it: with
// the write filter, if the store keeps one.
func (s *Store) reader() Reader {
	if s.recent == nil {
		return s.eng
	}
	return filteredReader{Reader: s.eng, recent: s.recent}
}

// Engine returns the store's engine.
func (s *Store) Engine() Engine { return s.eng }

// Waits returns the store's wait manager.
func (s *Store) Waits() *WaitManager { return s.waits }

// WaitRead waits until no commit in flight can become visible to a read
// of key at ts (see Latches). The reads below wait so themselves; a caller
// that bounds how many reads run at once waits first, so that a read does
// not hold its place while it waits for a write to apply.
func (s *Store) WaitRead(ctx context.Context, key []byte, ts uint64) error {
	return s.latches.WaitRead(ctx, key, ts)
}

// WaitReadRange is WaitRead for every key in [start, end) (nil bounds are
// open).
func (s *Store) WaitReadRange(ctx context.Context, start, end []byte, ts uint64) error {
	return s.latches.WaitReadRange(ctx, start, end, ts)
}

// Get reads key at ts, after any commit in flight that could land below ts.
func (s *Store) Get(ctx context.Context, key []byte, ts uint64) ([]byte, error) {
	if err := s.latches.WaitRead(ctx, key, ts); err != nil {
		return nil, err
	}
	if s.cache != nil {
		if sl, ok := s.cache.get(key); ok {
			if sl == nil {
				return nil, kv.ErrNotFound
			}
			if rec := sl.rec.Load(); rec.commitTS <= ts {
				return cachedValue(s.eng, rec, sl.encKey, nil)
			}
		} else {
			s.cache.noteRead(s.eng, key)
		}
	}
	return Get(s.eng, key, ts, !s.onePhaseOnly)
}

// GetWith is Get for a client that resolves locks itself: it passes the
// locks rl names (see ReadLocks).
func (s *Store) GetWith(ctx context.Context, key []byte, ts uint64, rl *ReadLocks) ([]byte, error) {
	if s.onePhaseOnly {
		return s.Get(ctx, key, ts)
	}
	if err := s.latches.WaitRead(ctx, key, ts); err != nil {
		return nil, err
	}
	return GetWith(s.eng, key, ts, rl)
}

// ScanWith is Scan for a client that resolves locks itself: it passes the
// locks rl names (see ReadLocks).
func (s *Store) ScanWith(ctx context.Context, start, end []byte, ts uint64, reverse bool, rl *ReadLocks) (*Scanner, error) {
	if s.onePhaseOnly {
		return s.Scan(ctx, start, end, ts, reverse)
	}
	if err := s.latches.WaitReadRange(ctx, start, end, ts); err != nil {
		return nil, err
	}
	return newScanner(s.eng, start, end, ts, reverse, true, rl)
}

// Scan returns a scanner over [start, end) at ts, after any commit in
// flight that could land below ts.
func (s *Store) Scan(ctx context.Context, start, end []byte, ts uint64, reverse bool) (*Scanner, error) {
	if err := s.latches.WaitReadRange(ctx, start, end, ts); err != nil {
		return nil, err
	}
	if s.cache != nil {
		if slots, ok := s.cache.slotsOf(start, end); ok {
			return newCachedScanner(s.eng, slots, ts, reverse), nil
		}
	}
	sc, err := NewScanner(s.eng, start, end, ts, reverse, !s.onePhaseOnly)
	if err == nil && s.cache != nil {
		sc.cache, sc.start, sc.end = s.cache, start, end
	}
	return sc, err
}

// run executes one command under latches on keys and applies its batch.
func (s *Store) run(ctx context.Context, startTS uint64, keys [][]byte, sync bool, cmd func(*Batch) error) error {
	return s.runProposing(ctx, startTS, keys, sync, func(b *Batch) (func(), error) { return nil, cmd(b) })
}

// runProposing is run for a command that also says whom to tell once the
// engine orders its batch (see ProposingEngine): cmd decides the batch,
// in a slot of the context's Scheduler, and returns the hook with it.
func (s *Store) runProposing(ctx context.Context, startTS uint64, keys [][]byte, sync bool, cmd func(*Batch) (func(), error)) error {
	g, err := s.latches.Acquire(ctx, startTS, keys)
	if err != nil {
		return err
	}
	defer s.latches.Release(g)
	sl, err := takeSlot(ctx)
	if err != nil {
		return err
	}
	defer sl.release()
	var b Batch
	proposed, err := cmd(&b)
	sl.release() // decided: replication needs no slot
	if err != nil || b.Len() == 0 {
		return err
	}
	return s.write(&b, sync, proposed)
}

// PessimisticLock takes req's locks in key order. When another transaction
// holds a key it waits up to wait for its release (zero: fail at once,
// negative: forever), failing with a *kv.DeadlockError if the wait would
// close a cycle, or kv.ErrLockWaitTimeout.
func (s *Store) PessimisticLock(ctx context.Context, req *PessimisticLockRequest, wait time.Duration) error {
	keys := sortedKeys(req.Keys)
	for len(keys) > 0 {
		var locked int
		var waiter *Waiter
		r := *req
		r.Keys = keys
		err := s.runProposing(ctx, req.StartTS, keys, false, func(b *Batch) (func(), error) {
			var err error
			locked, err = AcquirePessimisticLock(s.reader(), b, &r)
			var le *LockedError
			if err == nil {
				// The batch holds the last of the request's locks: its
				// answer is known once the engine orders it.
				if h := hooksOf(ctx); h != nil {
					return h.Proposed, nil
				}
				return nil, nil
			}
			if !errors.As(err, &le) || wait == 0 {
				return nil, err
			}
			// Keep what was locked, and park on the busy key while its latch
			// is still held, so its release cannot be missed.
			waiter, err = s.waits.Register(keys[locked], req.StartTS, le.Lock.StartTS)
			return nil, err
		})
		if err != nil {
			if waiter != nil {
				waiter.Cancel()
			}
			return noWaitError(err)
		}
		keys = keys[locked:]
		if waiter == nil {
			return nil
		}
		if err := waiter.Wait(ctx, wait); err != nil {
			return err
		}
	}
	return nil
}

// PessimisticRollback releases the transaction's pessimistic locks on keys
// taken at or below forUpdateTS, and wakes their waiters.
func (s *Store) PessimisticRollback(ctx context.Context, keys [][]byte, startTS, forUpdateTS uint64) error {
	err := s.run(ctx, startTS, keys, false, func(b *Batch) error {
		return PessimisticRollback(s.eng, b, keys, startTS, forUpdateTS)
	})
	s.waits.WakeUp(keys)
	return err
}

// OnePhaseCommit commits req at a commit timestamp from nextTS, which it
// calls after marking the keys as committing. If another transaction's lock
// is in the way it waits up to wait for it as PessimisticLock does, then
// checks again. It returns the commit timestamp.
func (s *Store) OnePhaseCommit(ctx context.Context, req *PrewriteRequest, nextTS func() (uint64, error), wait time.Duration) (uint64, error) {
	keys := make([][]byte, len(req.Mutations))
	for i := range req.Mutations {
		keys[i] = req.Mutations[i].Key
	}
	for {
		var commitTS uint64
		var waiter *Waiter
		err := func() error {
			g, err := s.latches.Acquire(ctx, req.StartTS, keys)
			if err != nil {
				return err
			}
			defer s.latches.Release(g)
			sl, err := takeSlot(ctx)
			if err != nil {
				return err
			}
			defer sl.release()
			s.latches.MarkCommitting(g)
			ts, err := nextTS()
			if err != nil {
				return err
			}
			var b Batch
			err = OnePhaseCommit(s.reader(), &b, req, ts)
			var le *LockedError
			if errors.As(err, &le) && wait != 0 {
				waiter, err = s.waits.Register(le.Lock.Key, req.StartTS, le.Lock.StartTS)
				return err
			}
			if err != nil {
				return err
			}
			sl.release()
			if err := s.write(&b, s.Sync, nil); err != nil {
				return err
			}
			commitTS = ts
			return nil
		}()
		if err != nil {
			return 0, noWaitError(err)
		}
		if waiter == nil {
			s.waits.WakeUp(keys)
			return commitTS, nil
		}
		if err := waiter.Wait(ctx, wait); err != nil {
			return 0, err
		}
	}
}

// Prewrite runs the Prewrite command. A request that lets the store
// choose its commit ts (AsyncCommit, TryOnePC) marks its keys committing
// before it calls maxTS for the highest ts the store's readers have read
// at, so that a reader of those keys either raised it first or waits for
// the prewrite (see Latches). A one-phase commit wakes the keys' waiters.
func (s *Store) Prewrite(ctx context.Context, req *PrewriteRequest, maxTS func() uint64) (PrewriteResult, error) {
	if s.onePhaseOnly {
		return PrewriteResult{}, errors.New("mvcc: prewrite on a one-phase-only store")
	}
	choose := req.AsyncCommit || req.TryOnePC
	if choose && maxTS == nil {
		return PrewriteResult{}, errors.New("mvcc: an async-commit or 1PC prewrite needs the store's max ts")
	}
	keys := make([][]byte, len(req.Mutations))
	for i := range req.Mutations {
		keys[i] = req.Mutations[i].Key
	}
	res, err := func() (PrewriteResult, error) {
		g, err := s.latches.Acquire(ctx, req.StartTS, keys)
		if err != nil {
			return PrewriteResult{}, err
		}
		defer s.latches.Release(g)
		sl, err := takeSlot(ctx)
		if err != nil {
			return PrewriteResult{}, err
		}
		defer sl.release()
		var mts uint64
		if choose {
			s.latches.MarkCommitting(g)
			mts = maxTS()
		}
		var b Batch
		res, err := Prewrite(s.reader(), &b, req, mts)
		if err != nil {
			return PrewriteResult{}, err
		}
		if choose {
			// Ordinary locks (a fallback) commit at a ts the client takes
			// once they are written, above any reader's that could miss them.
			floor := uint64(math.MaxUint64)
			if ts := max(res.MinCommitTS, res.OnePCCommitTS); ts != 0 {
				floor = ts
			}
			s.latches.SetCommitFloor(g, floor)
		}
		sl.release()
		if b.Len() == 0 {
			return res, nil
		}
		return res, s.write(&b, s.Sync, nil)
	}()
	if err != nil {
		return PrewriteResult{}, err
	}
	if res.OnePCCommitTS != 0 && !res.Committed {
		s.waits.WakeUp(keys)
	}
	return res, nil
}

// Commit runs the Commit command and wakes the keys' waiters.
func (s *Store) Commit(ctx context.Context, keys [][]byte, startTS, commitTS uint64) error {
	err := s.run(ctx, startTS, keys, s.Sync, func(b *Batch) error {
		return Commit(s.eng, b, keys, startTS, commitTS)
	})
	s.waits.WakeUp(keys)
	return err
}

// Rollback runs the Rollback command and wakes the keys' waiters.
func (s *Store) Rollback(ctx context.Context, keys [][]byte, startTS uint64) error {
	err := s.run(ctx, startTS, keys, s.Sync, func(b *Batch) error {
		return Rollback(s.eng, b, keys, startTS)
	})
	s.waits.WakeUp(keys)
	return err
}

// CheckTxnStatus runs the CheckTxnStatus command and wakes the primary's
// waiters if it released the lock.
func (s *Store) CheckTxnStatus(ctx context.Context, req *CheckTxnStatusRequest) (TxnStatus, error) {
	var st TxnStatus
	err := s.run(ctx, req.LockTS, [][]byte{req.Primary}, s.Sync, func(b *Batch) error {
		var err error
		st, err = CheckTxnStatus(s.eng, b, req)
		return err
	})
	if st.State == TxnRolledBack && st.Action != ActionNone {
		s.waits.WakeUp([][]byte{req.Primary})
	}
	return st, err
}

// TxnHeartBeat runs the TxnHeartBeat command.
func (s *Store) TxnHeartBeat(ctx context.Context, primary []byte, startTS, adviseTTL uint64) (uint64, error) {
	var ttl uint64
	err := s.run(ctx, startTS, [][]byte{primary}, false, func(b *Batch) error {
		var err error
		ttl, err = TxnHeartBeat(s.eng, b, primary, startTS, adviseTTL)
		return err
	})
	return ttl, err
}

// Cleanup runs the Cleanup command and wakes the key's waiters.
func (s *Store) Cleanup(ctx context.Context, key []byte, startTS, currentTS uint64) error {
	err := s.run(ctx, startTS, [][]byte{key}, s.Sync, func(b *Batch) error {
		return Cleanup(s.eng, b, key, startTS, currentTS)
	})
	s.waits.WakeUp([][]byte{key})
	return err
}

// CheckSecondaryLocks runs the CheckSecondaryLocks command and wakes the
// keys' waiters.
func (s *Store) CheckSecondaryLocks(ctx context.Context, keys [][]byte, startTS uint64) (SecondaryLocks, error) {
	var res SecondaryLocks
	err := s.run(ctx, startTS, keys, s.Sync, func(b *Batch) error {
		var err error
		res, err = CheckSecondaryLocks(s.eng, b, keys, startTS)
		return err
	})
	s.waits.WakeUp(keys)
	return res, err
}

// ScanLocks returns the locks in [start, end) that keep accepts, at most
// limit (0: all); see ScanLocks. It takes no latches: a lock it returns
// may be gone by the time the caller acts on it.
func (s *Store) ScanLocks(start, end []byte, limit int, keep func(*LockInfo) bool) ([]LockInfo, error) {
	return ScanLocks(s.eng, start, end, limit, keep)
}

// ResolveLock runs the ResolveLock command and wakes the keys' waiters.
func (s *Store) ResolveLock(ctx context.Context, keys [][]byte, startTS, commitTS uint64) error {
	err := s.run(ctx, startTS, keys, s.Sync, func(b *Batch) error {
		return ResolveLock(s.eng, b, keys, startTS, commitTS)
	})
	s.waits.WakeUp(keys)
	return err
}

// DeleteRange drops the whole key range [start, end); see DeleteRange.
func (s *Store) DeleteRange(start, end []byte) error {
	var b Batch
	DeleteRange(&b, start, end)
	return s.write(&b, s.Sync, nil)
}

// CompactRange compacts on disk the records of the user keys in [start,
// end), in every column family, if the engine is a Compacter (else it does
// nothing): after DeleteRange, this gives the range's space back.
func (s *Store) CompactRange(ctx context.Context, start, end []byte) error {
	c, ok := s.eng.(Compacter)
	if !ok {
		return nil
	}
	lo, hi := encodeKey(start), encodeKey(end)
	for _, cf := range []CF{CFDefault, CFLock, CFWrite} {
		if err := c.CompactRange(ctx, cf, lo, hi); err != nil {
			return err
		}
	}
	return nil
}

// GC removes versions hidden below safePoint; see GC.
func (s *Store) GC(safePoint uint64) (GCStats, error) {
	return s.GCRange(nil, nil, safePoint)
}

// GCRange is GC over the keys in [start, end) (nil bounds are open).
func (s *Store) GCRange(start, end []byte, safePoint uint64) (GCStats, error) {
	return GCRange(s.eng, start, end, safePoint, func(b *Batch) error { return s.write(b, false, nil) })
}

// noWaitError reports a lock met when no wait was allowed as a lock wait
// timeout; other errors pass through.
func noWaitError(err error) error {
	var le *LockedError
	if errors.As(err, &le) {
		return fmt.Errorf("%w: %w", kv.ErrLockWaitTimeout, err)
	}
	return err
}

func sortedKeys(keys [][]byte) [][]byte {
	ks := slices.Clone(keys)
	slices.SortFunc(ks, bytes.Compare)
	return slices.CompactFunc(ks, bytes.Equal)
}
