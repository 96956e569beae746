package storenode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
)

// This file holds the transaction commands: Percolator's, as TiKV serves
// them to client-go, each a thin translation onto the region's
// mvcc.Store, which holds the logic.

// KvPrewrite locks the transaction's mutations on this region's keys.
// Optimistic and pessimistic (pessimistic_actions) prewrites are served,
// and so are async commit and 1PC: the store chooses the commit ts above
// its max ts (concurrency.go) and answers it as min_commit_ts (async
// commit) or one_pc_commit_ts (committed at once), or falls back to
// ordinary locks and answers 0 when it would exceed max_commit_ts. Before
// the first of those in its term, the region's leader syncs max ts with
// PD; until it has, they are refused with max_timestamp_not_synced, and
// the client backs off and retries. Assertions are not checked.
func (s *Service) KvPrewrite(ctx context.Context, req *kvrpcpb.PrewriteRequest) (*kvrpcpb.PrewriteResponse, error) {
	ctx = s.scheduled(ctx)
	resp := &kvrpcpb.PrewriteResponse{}
	mreq, keys, err := prewriteRequest(req)
	if err != nil {
		resp.Errors = keyErrors(keyError(err))
		return resp, nil
	}
	r, rerr := s.txnRegion(ctx, req.GetContext(), keys...)
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	if mreq.AsyncCommit || mreq.TryOnePC {
		term := r.LeaderTerm()
		if rerr := s.cm.syncRegion(ctx, r.Meta().GetId(), term, s.TSO); rerr != nil {
			s.stats.notSynced.Add(1)
			resp.RegionError = rerr
			return resp, nil
		}
		if f, ok := r.(writeFloorSetter); ok {
			// Max ts now holds a timestamp from PD taken in this term.
			f.SetWriteFloor(term, s.cm.MaxTS()+1)
		}
	}
	if len(mreq.NotExist) > 0 || slices.ContainsFunc(mreq.Mutations, func(m kv.Mutation) bool { return m.Op == kv.OpInsert }) {
		// As TiKV: a key found absent stays absent for readers up to the
		// start ts.
		s.cm.observe(mreq.StartTS)
	}
	res, err := r.MVCC().Prewrite(ctx, mreq, s.cm.MaxTS)
	re, ke := failure(err)
	var rb *mvcc.RolledBackError
	if errors.As(err, &rb) {
		// TiKV reports a prewrite of a rolled back transaction as a write
		// conflict with itself.
		ke = &kvrpcpb.KeyError{Retryable: err.Error(), Conflict: &kvrpcpb.WriteConflict{
			StartTs: rb.StartTS, ConflictTs: rb.StartTS, ConflictCommitTs: rb.StartTS, Key: rb.Key,
			Reason: kvrpcpb.WriteConflict_SelfRolledBack}}
	} else if ke != nil && ke.Conflict != nil {
		ke.Conflict.Reason = kvrpcpb.WriteConflict_Optimistic
		if req.GetForUpdateTs() != 0 {
			ke.Conflict.Reason = kvrpcpb.WriteConflict_LazyUniquenessCheck
		}
	}
	if ke != nil && ke.Conflict != nil {
		ke.Conflict.Primary = req.GetPrimaryLock()
	}
	resp.RegionError, resp.Errors = re, keyErrors(ke)
	if err != nil {
		return resp, nil
	}
	// With try_one_pc only one_pc_commit_ts may be set: client-go fails a
	// 1PC prewrite answered with a min_commit_ts but no one_pc_commit_ts.
	switch {
	case req.GetTryOnePc():
		resp.OnePcCommitTs = res.OnePCCommitTS
	case req.GetUseAsyncCommit():
		resp.MinCommitTs = res.MinCommitTS
	}
	s.stats.count(mreq, res)
	return resp, nil
}

// prewriteStats counts the prewrites answered without an error, by how
// their transactions commit (metrics.go exports them).
type prewriteStats struct {
	twoPC, asyncCommit, onePC, fallback, notSynced atomic.Uint64
}

func (st *prewriteStats) count(req *mvcc.PrewriteRequest, res mvcc.PrewriteResult) {
	switch {
	case !req.AsyncCommit && !req.TryOnePC:
		st.twoPC.Add(1)
	case res.OnePCCommitTS != 0:
		st.onePC.Add(1)
	case res.MinCommitTS != 0:
		st.asyncCommit.Add(1)
	default:
		st.fallback.Add(1)
	}
}

// PrewriteStats counts the prewrites the service answered since it
// started, by commit protocol.
type PrewriteStats struct {
	// TwoPC: neither async commit nor 1PC asked (a KvCommit follows).
	TwoPC uint64
	// AsyncCommit: answered with a min_commit_ts; OnePC: with a
	// one_pc_commit_ts; Fallback: with neither (ordinary locks).
	AsyncCommit, OnePC, Fallback uint64
	// NotSynced: refused with max_timestamp_not_synced.
	NotSynced uint64
}

// PrewriteStats returns the counts so far.
func (s *Service) PrewriteStats() PrewriteStats {
	return PrewriteStats{TwoPC: s.stats.twoPC.Load(), AsyncCommit: s.stats.asyncCommit.Load(), OnePC: s.stats.onePC.Load(),
		Fallback: s.stats.fallback.Load(), NotSynced: s.stats.notSynced.Load()}
}

// prewriteRequest translates req for mvcc, with the keys it touches.
func prewriteRequest(req *kvrpcpb.PrewriteRequest) (*mvcc.PrewriteRequest, [][]byte, error) {
	mreq := &mvcc.PrewriteRequest{Primary: req.GetPrimaryLock(), StartTS: req.GetStartVersion(),
		ForUpdateTS: req.GetForUpdateTs(), LockTTL: req.GetLockTtl(), MinCommitTS: req.GetMinCommitTs(),
		TxnSize: req.GetTxnSize(), AsyncCommit: req.GetUseAsyncCommit(), Secondaries: req.GetSecondaries(),
		TryOnePC: req.GetTryOnePc(), MaxCommitTS: req.GetMaxCommitTs()}
	pessimistic := req.GetForUpdateTs() != 0
	actions := req.GetPessimisticActions()
	keys := make([][]byte, 0, len(req.GetMutations()))
	for i, m := range req.GetMutations() {
		keys = append(keys, m.GetKey())
		var op kv.Op
		switch m.GetOp() {
		case kvrpcpb.Op_Put:
			op = kv.OpPut
		case kvrpcpb.Op_Del:
			op = kv.OpDelete
		case kvrpcpb.Op_Lock:
			op = kv.OpLock
		case kvrpcpb.Op_Insert:
			op = kv.OpInsert
		case kvrpcpb.Op_CheckNotExists:
			mreq.NotExist = append(mreq.NotExist, m.GetKey())
			continue
		default:
			return nil, nil, fmt.Errorf("prewrite: unsupported mutation op %s", m.GetOp())
		}
		mreq.Mutations = append(mreq.Mutations, kv.Mutation{Op: op, Key: m.GetKey(), Value: m.GetValue()})
		if pessimistic {
			locked := i < len(actions) && actions[i] == kvrpcpb.PrewriteRequest_DO_PESSIMISTIC_CHECK
			mreq.Pessimistic = append(mreq.Pessimistic, locked)
		}
	}
	return mreq, keys, nil
}

// KvCommit commits the transaction's locks on keys at commit_version.
func (s *Service) KvCommit(ctx context.Context, req *kvrpcpb.CommitRequest) (*kvrpcpb.CommitResponse, error) {
	ctx = s.scheduled(ctx)
	resp := &kvrpcpb.CommitResponse{}
	if req.GetCommitVersion() <= req.GetStartVersion() {
		resp.Error = &kvrpcpb.KeyError{Abort: fmt.Sprintf("invalid transaction timestamps: commit ts %d is not above start ts %d",
			req.GetCommitVersion(), req.GetStartVersion())}
		return resp, nil
	}
	r, rerr := s.txnRegion(ctx, req.GetContext(), req.GetKeys()...)
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	if err := r.MVCC().Commit(ctx, req.GetKeys(), req.GetStartVersion(), req.GetCommitVersion()); err != nil {
		resp.RegionError, resp.Error = failure(err)
		return resp, nil
	}
	resp.CommitVersion = req.GetCommitVersion()
	return resp, nil
}

// KvPessimisticLock takes pessimistic locks on keys, waiting for other
// transactions' locks up to wait_timeout milliseconds (0: the store's
// WaitForLockTimeout, negative: not at all), never longer than
// WaitForLockTimeout: a lock still in the way then comes back as the
// locked error, and the client checks its holder and asks again. A wait
// that would close a cycle fails with the deadlock error. Only the Normal
// wake-up mode is served. With Pipelined, the locks are answered once
// proposed, before they apply (see pessimisticLock).
func (s *Service) KvPessimisticLock(ctx context.Context, req *kvrpcpb.PessimisticLockRequest) (*kvrpcpb.PessimisticLockResponse, error) {
	resp := &kvrpcpb.PessimisticLockResponse{}
	keys := make([][]byte, len(req.GetMutations()))
	for i, m := range req.GetMutations() {
		if m.GetOp() != kvrpcpb.Op_PessimisticLock {
			resp.Errors = keyErrors(&kvrpcpb.KeyError{Abort: fmt.Sprintf("pessimistic lock: unsupported op %s", m.GetOp())})
			return resp, nil
		}
		keys[i] = m.GetKey()
	}
	if mode := req.GetWakeUpMode(); mode != kvrpcpb.PessimisticLockWakeUpMode_WakeUpModeNormal {
		resp.Errors = keyErrors(&kvrpcpb.KeyError{Abort: fmt.Sprintf("pessimistic lock: wake-up mode %s is not supported", mode)})
		return resp, nil
	}
	r, rerr := s.txnRegion(ctx, req.GetContext(), keys...)
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	st := r.MVCC()
	mreq := &mvcc.PessimisticLockRequest{Keys: keys, Primary: req.GetPrimaryLock(), StartTS: req.GetStartVersion(),
		ForUpdateTS: req.GetForUpdateTs(), LockTTL: req.GetLockTtl(), MinCommitTS: req.GetMinCommitTs(),
		LockOnlyIfExists: req.GetLockOnlyIfExists()}
	if req.GetReturnValues() || req.GetCheckExistence() {
		// The values are read as the locks are decided, in the pass that
		// checks each key's records: once locked, no commit can land on a
		// key, and its newest committed version is what the transaction
		// will overwrite.
		resp.NotFounds = make([]bool, len(keys))
		if req.GetReturnValues() {
			resp.Values = make([][]byte, len(keys))
		}
		mreq.Value = lockedValues(keys, resp)
	}
	err := s.pessimisticLock(ctx, r, st, mreq, s.lockWait(req.GetWaitTimeout()))
	var le *mvcc.LockedError
	if errors.Is(err, kv.ErrLockWaitTimeout) && !errors.As(err, &le) {
		// The wait ran out: try once more, to answer with the lock still
		// in the way, if any.
		err = s.pessimisticLock(ctx, r, st, mreq, 0)
	}
	if err != nil {
		resp.Values, resp.NotFounds = nil, nil
		re, ke := failure(err)
		if ke != nil && ke.Conflict != nil {
			ke.Conflict.Primary = req.GetPrimaryLock()
			ke.Conflict.Reason = kvrpcpb.WriteConflict_PessimisticRetry
		}
		var dl *kv.DeadlockError
		if ke != nil && errors.As(err, &dl) {
			ke.Deadlock.WaitChain = waitChain(dl, st.Waits())
			for _, e := range ke.Deadlock.WaitChain {
				if e.WaitForTxn == dl.StartTS {
					ke.Deadlock.DeadlockKey = e.Key
				}
			}
		}
		resp.RegionError, resp.Errors = re, keyErrors(ke)
		return resp, nil
	}
	return resp, nil
}

// lockedValues returns the mvcc.PessimisticLockRequest.Value that fills
// resp's values (if it has room for them) and not-founds at every index
// of keys that holds key.
func lockedValues(keys [][]byte, resp *kvrpcpb.PessimisticLockResponse) func(key, value []byte, found bool) {
	set := func(i int, value []byte, found bool) {
		resp.NotFounds[i] = !found
		if resp.Values != nil {
			resp.Values[i] = value
		}
	}
	if len(keys) <= 8 {
		return func(key, value []byte, found bool) {
			for i, k := range keys {
				if bytes.Equal(k, key) {
					set(i, value, found)
				}
			}
		}
	}
	at := make(map[string][]int, len(keys))
	for i, k := range keys {
		at[string(k)] = append(at[string(k)], i)
	}
	return func(key, value []byte, found bool) {
		for _, i := range at[string(key)] {
			set(i, value, found)
		}
	}
}

// pessimisticLock takes req's locks on st, deciding in a slot of the
// scheduler. Pipelined, it returns as soon as raft has accepted the write
// that holds the last of them (mvcc.Hooks.Proposed), as TiKV's pipelined
// pessimistic lock answers: the command goes on meanwhile, holding its
// keys' latches until that write applies, so that the transaction's
// prewrite, or any other command on those keys, waits for it and finds
// the locks. If the write fails instead (the leader lost its leadership
// first) the locks are lost, and the transaction's prewrite fails on the
// missing lock (mvcc's "pessimistic lock not found", an abort, as TiKV's
// PessimisticLockNotFound is): it cannot commit without them. A request
// that fails, or waits for another transaction's lock after a first
// batch, is answered as before, when the command returns.
//
// A region that keeps its leader's pessimistic locks in memory
// (memLocker) decides and answers the lock where it is written, with no
// Raft round to pipeline: the request runs on the calling goroutine, as
// unpipelined, instead of handing it to another goroutine and waiting for
// it there (two goroutine switches per lock, on the leader's busiest
// path: docs/cluster-bench/README.md). If the region turns out to propose
// the locks after all, the answer waits for their write to apply.
func (s *Service) pessimisticLock(ctx context.Context, r Region, st *mvcc.Store, req *mvcc.PessimisticLockRequest, wait time.Duration) error {
	if !s.Pipelined || locksInMemory(r) {
		return st.PessimisticLock(s.scheduled(ctx), req, wait)
	}
	s.lockHandoffs.Add(1)
	proposed := make(chan struct{})
	hooks := &mvcc.Hooks{Scheduler: s.sched, Proposed: func() { close(proposed) }} // called at most once
	done := make(chan error, 1)
	run := func() { done <- st.PessimisticLock(mvcc.WithHooks(ctx, hooks), req, wait) }
	// On an idle worker if there is one: its stack has grown to a
	// command's depth already, where a new goroutine's is copied as it
	// grows (4% of a leader's CPU under oltp_write_only).
	select {
	case s.work <- run:
	default:
		go run()
	}
	select {
	case err := <-done:
		return err
	case <-proposed:
		return nil
	}
}

// memLocker is a Region whose leader may keep pessimistic locks in
// memory (raftstore.Peer).
type memLocker interface {
	LocksInMemory() bool
}

// locksInMemory says whether r would likely keep a pessimistic lock taken
// now in memory (memLocker's hint).
func locksInMemory(r Region) bool {
	m, ok := r.(memLocker)
	return ok && m.LocksInMemory()
}

// lockWait is how long a pessimistic lock request with wait_timeout ms
// may wait.
func (s *Service) lockWait(ms int64) time.Duration {
	limit := s.WaitForLockTimeout
	if limit <= 0 {
		limit = time.Second
	}
	switch {
	case ms < 0:
		return 0
	case ms == 0 || ms >= limit.Milliseconds():
		return limit
	}
	return time.Duration(ms) * time.Millisecond
}

// KVPessimisticRollback releases the transaction's pessimistic locks on
// keys taken at or below for_update_ts; with no keys, every such lock in
// the region (client-go's resolver does that for a dead transaction).
func (s *Service) KVPessimisticRollback(ctx context.Context, req *kvrpcpb.PessimisticRollbackRequest) (*kvrpcpb.PessimisticRollbackResponse, error) {
	ctx = s.scheduled(ctx)
	resp := &kvrpcpb.PessimisticRollbackResponse{}
	r, rerr := s.txnRegion(ctx, req.GetContext(), req.GetKeys()...)
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	st, startTS, forUpdateTS := r.MVCC(), req.GetStartVersion(), req.GetForUpdateTs()
	rollback := func(keys [][]byte) error { return st.PessimisticRollback(ctx, keys, startTS, forUpdateTS) }
	var err error
	if len(req.GetKeys()) > 0 {
		err = rollback(req.GetKeys())
	} else {
		err = regionLocks(r, func(l *mvcc.LockInfo) bool {
			return l.StartTS == startTS && l.Kind == mvcc.LockPessimistic && l.ForUpdateTS <= forUpdateTS
		}, rollback)
	}
	re, ke := failure(err)
	resp.RegionError, resp.Errors = re, keyErrors(ke)
	return resp, nil
}

// protectRollback raises max ts to startTS before a command that may
// write transaction startTS's rollback record, as TiKV does for its
// protected rollbacks (and Basalt's rollback records are all protected):
// no async-commit or 1PC transaction that chooses its commit ts after
// that can commit at the record's version. (One that chose it before
// keeps the rollback in its commit record: mvcc.Write.OverlappedRollback.)
func (s *Service) protectRollback(startTS uint64) { s.cm.observe(startTS) }

// KvBatchRollback rolls the transaction back on keys.
func (s *Service) KvBatchRollback(ctx context.Context, req *kvrpcpb.BatchRollbackRequest) (*kvrpcpb.BatchRollbackResponse, error) {
	ctx = s.scheduled(ctx)
	resp := &kvrpcpb.BatchRollbackResponse{}
	r, rerr := s.txnRegion(ctx, req.GetContext(), req.GetKeys()...)
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	s.protectRollback(req.GetStartVersion())
	resp.RegionError, resp.Error = failure(r.MVCC().Rollback(ctx, req.GetKeys(), req.GetStartVersion()))
	return resp, nil
}

// KvCleanup rolls the transaction back on key unless its lock is alive at
// current_ts (0: regardless). A committed transaction answers its commit
// ts.
func (s *Service) KvCleanup(ctx context.Context, req *kvrpcpb.CleanupRequest) (*kvrpcpb.CleanupResponse, error) {
	ctx = s.scheduled(ctx)
	resp := &kvrpcpb.CleanupResponse{}
	r, rerr := s.txnRegion(ctx, req.GetContext(), req.GetKey())
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	s.protectRollback(req.GetStartVersion())
	err := r.MVCC().Cleanup(ctx, req.GetKey(), req.GetStartVersion(), req.GetCurrentTs())
	var ce *mvcc.CommittedError
	if errors.As(err, &ce) {
		resp.CommitVersion = ce.CommitTS
		return resp, nil
	}
	resp.RegionError, resp.Error = failure(err)
	return resp, nil
}

// KvCheckTxnStatus decides a transaction's fate from its primary key,
// rolling back an expired one and pushing a live one's min commit ts
// past a reader's start ts (see mvcc.CheckTxnStatus). lock_ttl != 0 means
// alive, else commit_version != 0 committed, else rolled back. An
// async-commit primary is only reported, with its secondaries, unless
// force_sync_commit: the client then checks the secondaries.
//
// Max ts is raised to the caller's start ts, at which it reads, to the
// current ts and to the lock's start ts (see protectRollback), as TiKV
// does.
func (s *Service) KvCheckTxnStatus(ctx context.Context, req *kvrpcpb.CheckTxnStatusRequest) (*kvrpcpb.CheckTxnStatusResponse, error) {
	ctx = s.scheduled(ctx)
	resp := &kvrpcpb.CheckTxnStatusResponse{}
	r, rerr := s.txnRegion(ctx, req.GetContext(), req.GetPrimaryKey())
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	s.protectRollback(req.GetLockTs())
	s.cm.observe(req.GetCallerStartTs())
	s.cm.observe(req.GetCurrentTs())
	st, err := r.MVCC().CheckTxnStatus(ctx, &mvcc.CheckTxnStatusRequest{Primary: req.GetPrimaryKey(),
		LockTS: req.GetLockTs(), CallerStartTS: req.GetCallerStartTs(), CurrentTS: req.GetCurrentTs(),
		RollbackIfNotExist: req.GetRollbackIfNotExist(), ResolvingPessimisticLock: req.GetResolvingPessimisticLock(),
		VerifyIsPrimary: req.GetVerifyIsPrimary(), ForceSyncCommit: req.GetForceSyncCommit()})
	if err != nil {
		resp.RegionError, resp.Error = failure(err)
		if resp.Error != nil && resp.Error.TxnNotFound != nil {
			resp.Error.TxnNotFound = &kvrpcpb.TxnNotFound{StartTs: req.GetLockTs(), PrimaryKey: req.GetPrimaryKey()}
		}
		return resp, nil
	}
	switch st.State {
	case mvcc.TxnLocked:
		resp.LockTtl, resp.LockInfo = st.TTL, lockInfo(st.Lock)
	case mvcc.TxnCommitted:
		resp.CommitVersion = st.CommitTS
	}
	resp.Action = txnAction(st.Action)
	return resp, nil
}

func txnAction(a mvcc.TxnAction) kvrpcpb.Action {
	switch a {
	case mvcc.ActionTTLExpireRollback:
		return kvrpcpb.Action_TTLExpireRollback
	case mvcc.ActionLockNotExistRollback:
		return kvrpcpb.Action_LockNotExistRollback
	case mvcc.ActionMinCommitTSPushed:
		return kvrpcpb.Action_MinCommitTSPushed
	case mvcc.ActionTTLExpirePessimisticRollback:
		return kvrpcpb.Action_TTLExpirePessimisticRollback
	case mvcc.ActionLockNotExistDoNothing:
		return kvrpcpb.Action_LockNotExistDoNothing
	}
	return kvrpcpb.Action_NoAction
}

// KvCheckSecondaryLocks decides an async-commit transaction's fate from
// its secondaries: their locks, if all are locked; its commit ts, if one
// committed; neither if it rolled back (made final: a key the transaction
// never reached gets a rollback record, see protectRollback).
func (s *Service) KvCheckSecondaryLocks(ctx context.Context, req *kvrpcpb.CheckSecondaryLocksRequest) (*kvrpcpb.CheckSecondaryLocksResponse, error) {
	ctx = s.scheduled(ctx)
	resp := &kvrpcpb.CheckSecondaryLocksResponse{}
	r, rerr := s.txnRegion(ctx, req.GetContext(), req.GetKeys()...)
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	s.protectRollback(req.GetStartVersion())
	res, err := r.MVCC().CheckSecondaryLocks(ctx, req.GetKeys(), req.GetStartVersion())
	if err != nil {
		resp.RegionError, resp.Error = failure(err)
		return resp, nil
	}
	for i := range res.Locks {
		resp.Locks = append(resp.Locks, lockInfo(&res.Locks[i]))
	}
	resp.CommitTs = res.CommitTS
	return resp, nil
}

// KvResolveLock commits (commit_version != 0) or rolls back the locks of
// transaction start_version on keys or, with no keys, on every key of the
// region; with txn_infos, of each transaction listed there, every key of
// the region.
func (s *Service) KvResolveLock(ctx context.Context, req *kvrpcpb.ResolveLockRequest) (*kvrpcpb.ResolveLockResponse, error) {
	ctx = s.scheduled(ctx)
	resp := &kvrpcpb.ResolveLockResponse{}
	txns := []*kvrpcpb.TxnInfo{{Txn: req.GetStartVersion(), Status: req.GetCommitVersion()}}
	keys := req.GetKeys()
	if len(req.GetTxnInfos()) > 0 {
		txns, keys = req.GetTxnInfos(), nil
	}
	for _, t := range txns {
		if t.GetStatus() != 0 && t.GetStatus() <= t.GetTxn() {
			resp.Error = &kvrpcpb.KeyError{Abort: fmt.Sprintf("invalid transaction timestamps: commit ts %d is not above start ts %d",
				t.GetStatus(), t.GetTxn())}
			return resp, nil
		}
	}
	r, rerr := s.txnRegion(ctx, req.GetContext(), keys...)
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	st := r.MVCC()
	for _, t := range txns {
		startTS, commitTS := t.GetTxn(), t.GetStatus()
		resolve := func(keys [][]byte) error { return st.ResolveLock(ctx, keys, startTS, commitTS) }
		var err error
		if len(keys) > 0 {
			err = resolve(keys)
		} else {
			err = regionLocks(r, func(l *mvcc.LockInfo) bool { return l.StartTS == startTS }, resolve)
		}
		if err != nil {
			resp.RegionError, resp.Error = failure(err)
			return resp, nil
		}
	}
	return resp, nil
}

// resolveBatch is how many locks a region-wide resolve settles per
// command.
const resolveBatch = 256

// regionLocks hands the keys of the region's locks that keep accepts to
// do, in batches, in key order.
func regionLocks(r Region, keep func(*mvcc.LockInfo) bool, do func(keys [][]byte) error) error {
	lo, hi, _, err := clampRange(r.Meta(), nil, nil)
	if err != nil {
		return err
	}
	for {
		locks, err := r.MVCC().ScanLocks(lo, hi, resolveBatch, keep)
		if err != nil || len(locks) == 0 {
			return err
		}
		keys := make([][]byte, len(locks))
		for i := range locks {
			keys[i] = locks[i].Key
		}
		if err := do(keys); err != nil || len(locks) < resolveBatch {
			return err
		}
		lo = append(slices.Clip(keys[len(keys)-1]), 0)
	}
}

// KvTxnHeartBeat extends the TTL of the transaction's primary lock to
// advise_lock_ttl, if that is longer, and answers the TTL in force.
func (s *Service) KvTxnHeartBeat(ctx context.Context, req *kvrpcpb.TxnHeartBeatRequest) (*kvrpcpb.TxnHeartBeatResponse, error) {
	ctx = s.scheduled(ctx)
	resp := &kvrpcpb.TxnHeartBeatResponse{}
	r, rerr := s.txnRegion(ctx, req.GetContext(), req.GetPrimaryLock())
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	ttl, err := r.MVCC().TxnHeartBeat(ctx, req.GetPrimaryLock(), req.GetStartVersion(), req.GetAdviseLockTtl())
	if err != nil {
		resp.RegionError, resp.Error = failure(err)
		if resp.Error != nil && resp.Error.TxnNotFound != nil {
			resp.Error.TxnNotFound = &kvrpcpb.TxnNotFound{StartTs: req.GetStartVersion(), PrimaryKey: req.GetPrimaryLock()}
		}
		return resp, nil
	}
	resp.LockTtl = ttl
	return resp, nil
}

// KvDeleteRange drops every version and lock of the keys in [start_key,
// end_key), which must lie in the region (an empty end_key: the region's
// end, which must then be bounded). With notify_only it does nothing.
func (s *Service) KvDeleteRange(ctx context.Context, req *kvrpcpb.DeleteRangeRequest) (*kvrpcpb.DeleteRangeResponse, error) {
	resp := &kvrpcpb.DeleteRangeResponse{}
	r, rerr := s.txnRegion(ctx, req.GetContext(), req.GetStartKey())
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	meta := r.Meta()
	_, regionEnd, err := rawBounds(meta)
	if err != nil {
		resp.Error = err.Error()
		return resp, nil
	}
	end := req.GetEndKey()
	switch {
	case len(end) == 0 && regionEnd == nil:
		resp.Error = "delete range: the range has no end"
		return resp, nil
	case len(end) == 0:
		end = regionEnd
	case len(meta.GetEndKey()) > 0 && string(end) > string(regionEnd):
		resp.RegionError = keyNotInRegion(meta, end)
		return resp, nil
	}
	if req.GetNotifyOnly() || string(req.GetStartKey()) >= string(end) {
		return resp, nil
	}
	if err := r.MVCC().DeleteRange(req.GetStartKey(), end); err != nil {
		if resp.RegionError, _ = failure(err); resp.RegionError == nil {
			resp.Error = err.Error()
		}
	}
	return resp, nil
}

// KvGC removes the region's versions that no reader at or above
// safe_point can see.
func (s *Service) KvGC(ctx context.Context, req *kvrpcpb.GCRequest) (*kvrpcpb.GCResponse, error) {
	resp := &kvrpcpb.GCResponse{}
	r, rerr := s.txnRegion(ctx, req.GetContext())
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	lo, hi, _, err := clampRange(r.Meta(), nil, nil)
	if err == nil {
		_, err = r.MVCC().GCRange(lo, hi, req.GetSafePoint())
	}
	resp.RegionError, resp.Error = failure(err)
	return resp, nil
}
