package storenode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Service is the tikvpb.TikvServer of a storage node: TiKV's transaction
// commands, as client-go sends them, run by store/mvcc on the regions this
// store leads.
//
// Every command first finds its region (Regions.Leader, from the request's
// context) and checks that its keys lie in it; a failure there is the
// response's region error, and the client refreshes its region cache and
// retries. Reads then wait for the region's read index; writes go through
// the region's mvcc.Store, which holds latches on their keys and replicates
// their batch. What went wrong in a command is the response's KeyError, in
// TiKV's terms (service_errors.go).
//
// This file holds the reads and the region plumbing, service_txn.go the
// transaction commands, service_batch.go the BatchCommands stream that
// carries them all by default.
//
// Async commit and 1PC are served as TiKV serves them: every read raises
// the store's max ts before it looks for locks, and a prewrite that may
// choose its commit ts chooses it above max ts (concurrency.go), once the
// region's leader has synced max ts with PD.
//
// Two worker pools bound the work in progress (pools.go): reads take a
// slot of the read pool once their data may be read, and transaction
// commands a slot of the scheduler while they decide their writes. A
// request whose context names another cluster is refused (CheckCluster).
//
// All methods are safe for concurrent use.
type Service struct {
	tikvpb.UnimplementedTikvServer

	storeID uint64
	regions Regions
	cm      *concurrencyManager
	stats   prewriteStats
	// WaitForLockTimeout bounds how long a pessimistic lock request waits
	// for another transaction's lock before it answers with that lock
	// (TiKV's pessimistic-txn.wait-for-lock-timeout): the client then
	// checks the holder's status, resolving it if it is dead, and asks
	// again. Set it before serving; zero means a second, TiKV's default.
	WaitForLockTimeout time.Duration
	// Pipelined answers a pessimistic lock request as soon as raft has
	// accepted the write that holds all of its locks, before it applies
	// (pessimistic-txn.pipelined; see KvPessimisticLock). Set it before
	// serving.
	Pipelined bool
	// TSO returns a fresh timestamp from PD. A region's new leader takes
	// one before its first async-commit or 1PC prewrite, to raise max ts
	// above every read its former leaders served. Set it before serving;
	// nil refuses async commit and 1PC (max_timestamp_not_synced, which
	// client-go retries until its backoff runs out).
	TSO func(ctx context.Context) (uint64, error)
	// ClusterID is the cluster's ID, from PD: a request whose context
	// names another (not 0) is refused. Set it before serving; 0 checks
	// nothing.
	ClusterID uint64

	reads *workerPool // readpool.unified.max-thread-count
	sched *workerPool // storage.scheduler-worker-pool-size
	hooks mvcc.Hooks  // for the write commands: the scheduler
	work  chan func() // BatchCommands requests for idle workers (service_batch.go)
	// handoffs counts the BatchCommands requests handed to a worker (the
	// rest were answered by the stream's receiving goroutine).
	handoffs atomic.Uint64
	// lockHandoffs counts the pessimistic lock requests run on another
	// goroutine to be answered once proposed (pessimisticLock).
	lockHandoffs atomic.Uint64
}

// NewService returns the service of store storeID over regions, configured
// as DefaultConfig says (see Configure).
func NewService(storeID uint64, regions Regions) *Service {
	s := &Service{storeID: storeID, regions: regions, cm: newConcurrencyManager()}
	s.Configure(DefaultConfig())
	s.startWorkers()
	return s
}

// Configure applies what cfg says of the service: its pools' sizes
// (readpool.unified.max-thread-count, storage.scheduler-worker-pool-size),
// pessimistic-txn.pipelined and pessimistic-txn.wait-for-lock-timeout.
// Call it before serving.
func (s *Service) Configure(cfg Config) {
	s.reads = newWorkerPool(cfg.ReadPool.Unified.MaxThreadCount)
	s.sched = newWorkerPool(cfg.Storage.SchedulerWorkerPoolSize)
	s.hooks = mvcc.Hooks{Scheduler: s.sched}
	s.Pipelined = cfg.Txn.Pipelined
	s.WaitForLockTimeout = cfg.Txn.WaitForLockTimeout.Duration
}

// CheckCluster is the unary interceptor that refuses a request whose
// context names a cluster other than this store's, as TiKV does: not with
// a response but with gRPC's InvalidArgument. A context without a cluster
// ID (0) passes, as do requests without a kvrpcpb.Context (Raft messages,
// the deadlock detector's). Batched requests are checked on their stream
// (checkBatchCluster).
func (s *Service) CheckCluster(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r, ok := req.(interface{ GetContext() *kvrpcpb.Context }); ok {
		if id := r.GetContext().GetClusterId(); id != 0 && s.ClusterID != 0 && id != s.ClusterID {
			return nil, status.Error(codes.InvalidArgument, "the cluster id of the request does not match the TiKV cluster")
		}
	}
	return handler(ctx, req)
}

// scheduled is ctx for a transaction command: it decides its writes in a
// slot of the scheduler (mvcc.Hooks).
func (s *Service) scheduled(ctx context.Context) context.Context {
	return mvcc.WithHooks(ctx, &s.hooks)
}

// region returns the region that ctx names, if this store leads it and
// every key lies in it; otherwise the region error to answer with.
func (s *Service) region(ctx *kvrpcpb.Context, keys ...[]byte) (Region, *errorpb.Error) {
	if ctx == nil {
		ctx = &kvrpcpb.Context{}
	}
	if p := ctx.GetPeer(); p != nil && p.StoreId != 0 && p.StoreId != s.storeID {
		return nil, &errorpb.Error{Message: fmt.Sprintf("store %d is not store %d", s.storeID, p.StoreId),
			StoreNotMatch: &errorpb.StoreNotMatch{RequestStoreId: p.StoreId, ActualStoreId: s.storeID}}
	}
	r, rerr := s.regions.Leader(ctx)
	if rerr != nil {
		return nil, rerr
	}
	if r == nil {
		return nil, &errorpb.Error{Message: "region not found",
			RegionNotFound: &errorpb.RegionNotFound{RegionId: ctx.GetRegionId()}}
	}
	meta := r.Meta()
	for _, k := range keys {
		if !inRegion(meta, k) {
			return nil, keyNotInRegion(meta, k)
		}
	}
	return r, nil
}

// txnRegion is region for a transaction command (prewrite, commit,
// pessimistic lock, check-txn-status, resolve ...), once the peer may read
// its applied state: as a read does, the command first passes ReadIndex
// (at once under the leader's lease). A new leader answers from its
// applied state only after applying what earlier terms committed: before,
// a check-txn-status could find the lock of a transaction whose commit
// the old leader had replicated but not yet applied, push its
// min_commit_ts past a reader's ts, and tell the reader to read around
// it, while the commit, applied next, made the transaction visible below
// that ts. TiKV's commands likewise read a snapshot taken after a read
// index or under the lease.
func (s *Service) txnRegion(ctx context.Context, rctx *kvrpcpb.Context, keys ...[]byte) (Region, *errorpb.Error) {
	r, rerr := s.region(rctx, keys...)
	if rerr != nil {
		return nil, rerr
	}
	if err := r.ReadIndex(ctx); err != nil {
		if re, _ := failure(err); re != nil {
			return nil, re
		}
		return nil, &errorpb.Error{Message: "read index: " + err.Error()}
	}
	return r, nil
}

// inRegion reports whether the raw key lies in the region, whose
// boundaries are encoded (codec.EncodeBytes; an empty end is +inf).
func inRegion(meta *metapb.Region, key []byte) bool {
	var buf [96]byte // a row or index key encodes in this without allocating
	enc := codec.EncodeBytes(buf[:0], key)
	return bytes.Compare(enc, meta.GetStartKey()) >= 0 &&
		(len(meta.GetEndKey()) == 0 || bytes.Compare(enc, meta.GetEndKey()) < 0)
}

// endInRegion reports whether the raw key may end a range of the
// region's keys: it lies in (start, end], or is empty (+inf, which the
// region's end bounds).
func endInRegion(meta *metapb.Region, key []byte) bool {
	if len(key) == 0 {
		return true
	}
	enc := codec.EncodeBytes(nil, key)
	return bytes.Compare(enc, meta.GetStartKey()) > 0 &&
		(len(meta.GetEndKey()) == 0 || bytes.Compare(enc, meta.GetEndKey()) <= 0)
}

func keyNotInRegion(meta *metapb.Region, key []byte) *errorpb.Error {
	return &errorpb.Error{Message: fmt.Sprintf("key %q is not in region %d", key, meta.GetId()),
		KeyNotInRegion: &errorpb.KeyNotInRegion{Key: key, RegionId: meta.GetId(),
			StartKey: meta.GetStartKey(), EndKey: meta.GetEndKey()}}
}

// rawBounds returns the region's boundaries as raw keys: start is never
// nil, end is nil for +inf.
func rawBounds(meta *metapb.Region) (start, end []byte, err error) {
	start, end = []byte{}, nil
	if len(meta.GetStartKey()) > 0 {
		if _, start, err = codec.DecodeBytes(meta.GetStartKey(), nil); err != nil {
			return nil, nil, fmt.Errorf("region %d: bad start key: %w", meta.GetId(), err)
		}
	}
	if len(meta.GetEndKey()) > 0 {
		if _, end, err = codec.DecodeBytes(meta.GetEndKey(), nil); err != nil {
			return nil, nil, fmt.Errorf("region %d: bad end key: %w", meta.GetId(), err)
		}
		if end == nil {
			end = []byte{}
		}
	}
	return start, end, nil
}

// clampRange intersects [start, end) (end nil: +inf) with the region's
// raw range; empty is true if nothing is left.
func clampRange(meta *metapb.Region, start, end []byte) (lo, hi []byte, empty bool, err error) {
	rs, re, err := rawBounds(meta)
	if err != nil {
		return nil, nil, false, err
	}
	lo, hi = start, end
	if lo == nil || bytes.Compare(lo, rs) < 0 {
		lo = rs
	}
	if re != nil && (hi == nil || bytes.Compare(hi, re) > 0) {
		hi = re
	}
	return lo, hi, hi != nil && bytes.Compare(lo, hi) >= 0, nil
}

// readLocks is what the client says about the locks its read may pass.
func readLocks(ctx *kvrpcpb.Context) *mvcc.ReadLocks {
	if len(ctx.GetResolvedLocks()) == 0 && len(ctx.GetCommittedLocks()) == 0 {
		return nil
	}
	return &mvcc.ReadLocks{Resolved: ctx.GetResolvedLocks(), Committed: ctx.GetCommittedLocks()}
}

// startRead waits until a read may see its data (wait: past any commit
// in flight on its keys), then for a slot of the read pool, which the
// caller releases once it has read; and then checks r's read index again.
// The waits may outlast this peer's lead: a commit in flight here ends
// when the leader steps down, unapplied, yet the next leader may still
// commit it (it is in that leader's log), below the read's ts. The read
// must then go to the new leader, not answer from this store's state
// (TestChaosStoreCutOff: a read checked under the lease, then held 1.2 s
// by such a commit, answered after its store had been cut off and
// replaced, missing transfers the new leader had committed).
func (s *Service) startRead(ctx context.Context, r Region, wait func() error) error {
	if err := wait(); err != nil {
		return err
	}
	if err := s.reads.Acquire(ctx); err != nil {
		return err
	}
	if err := r.ReadIndex(ctx); err != nil {
		s.reads.Release()
		return err
	}
	return nil
}

// KvGet reads a key at a version.
//
// A read takes a slot of the read pool once it may read: past the
// region's read index and any commit in flight on its keys.
func (s *Service) KvGet(ctx context.Context, req *kvrpcpb.GetRequest) (*kvrpcpb.GetResponse, error) {
	resp := &kvrpcpb.GetResponse{}
	s.kvGet(ctx, req, resp)
	return resp, nil
}

// kvGet is KvGet answering in resp, which the caller allocated (the
// stream's dispatch, with the response's wrappers in one allocation).
func (s *Service) kvGet(ctx context.Context, req *kvrpcpb.GetRequest, resp *kvrpcpb.GetResponse) {
	r, rerr := s.region(req.GetContext(), req.GetKey())
	if rerr != nil {
		resp.RegionError = rerr
		return
	}
	if err := r.ReadIndex(ctx); err != nil {
		resp.RegionError, resp.Error = failure(err)
		return
	}
	s.cm.observe(req.GetVersion()) // before the read waits for commits in flight
	st := r.MVCC()
	if err := s.startRead(ctx, r, func() error { return st.WaitRead(ctx, req.GetKey(), req.GetVersion()) }); err != nil {
		resp.RegionError, resp.Error = failure(err)
		return
	}
	defer s.reads.Release()
	readGet(ctx, r, req, resp)
}

// kvGetNow is kvGet if the get can be answered without waiting for
// anything: the region is led here under its lease (Regions.LeaderNow),
// no commit in flight on the key may land below the read's ts, and the
// read pool has a slot free. It then reads as kvGet would and reports
// true. Otherwise it reports false having answered nothing, and the
// caller runs kvGet, which waits where this would have had to (the
// stream's receiving goroutine answers gets itself this way, and hands
// only those that would wait to a worker: service_batch.go).
func (s *Service) kvGetNow(ctx context.Context, req *kvrpcpb.GetRequest, resp *kvrpcpb.GetResponse) bool {
	rctx := req.GetContext()
	if p := rctx.GetPeer(); p != nil && p.StoreId != 0 && p.StoreId != s.storeID {
		return false
	}
	r := s.regions.LeaderNow(rctx)
	if r == nil || !inRegion(r.Meta(), req.GetKey()) {
		return false
	}
	s.cm.observe(req.GetVersion()) // before it looks for commits in flight, as kvGet
	st := r.MVCC()
	if st.WaitRead(noWait, req.GetKey(), req.GetVersion()) != nil {
		return false // a commit in flight may land below the read
	}
	if !s.reads.TryAcquire() {
		return false
	}
	defer s.reads.Release()
	readGet(ctx, r, req, resp)
	return true
}

// noWait is a context that has ended: a wait given it (mvcc's WaitRead)
// returns nil if it need not wait and an error if it would.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// readGet is a get's read, once it may read r's data: past r's read
// index and any commit in flight on its key, in a slot of the read pool.
func readGet(ctx context.Context, r Region, req *kvrpcpb.GetRequest, resp *kvrpcpb.GetResponse) {
	v, err := r.MVCC().GetWith(ctx, req.GetKey(), req.GetVersion(), readLocks(req.GetContext()))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		resp.NotFound = true
	case err != nil:
		resp.RegionError, resp.Error = failure(err)
	default:
		resp.Value = v
		r.RecordRead(uint64(len(req.GetKey())+len(v)), 1)
	}
}

// KvBatchGet reads keys at a version. Absent keys are left out; a key
// hidden by a lock comes back as a pair with the lock as its error, as
// TiKV answers, so that the client resolves every lock at once.
func (s *Service) KvBatchGet(ctx context.Context, req *kvrpcpb.BatchGetRequest) (*kvrpcpb.BatchGetResponse, error) {
	resp := &kvrpcpb.BatchGetResponse{}
	r, rerr := s.region(req.GetContext(), req.GetKeys()...)
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	if err := r.ReadIndex(ctx); err != nil {
		resp.RegionError, resp.Error = failure(err)
		return resp, nil
	}
	s.cm.observe(req.GetVersion())
	st, rl := r.MVCC(), readLocks(req.GetContext())
	err := s.startRead(ctx, r, func() error {
		for _, k := range req.GetKeys() {
			if err := st.WaitRead(ctx, k, req.GetVersion()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		resp.RegionError, resp.Error = failure(err)
		return resp, nil
	}
	defer s.reads.Release()
	for _, k := range req.GetKeys() {
		v, err := st.GetWith(ctx, k, req.GetVersion(), rl)
		var le *mvcc.LockedError
		switch {
		case errors.Is(err, kv.ErrNotFound):
		case errors.As(err, &le):
			resp.Pairs = append(resp.Pairs, &kvrpcpb.KvPair{Key: k, Error: keyError(err)})
		case err != nil:
			resp.Pairs = nil
			resp.RegionError, resp.Error = failure(err)
			return resp, nil
		default:
			resp.Pairs = append(resp.Pairs, &kvrpcpb.KvPair{Key: k, Value: v})
		}
	}
	recordRead(r, resp.Pairs)
	return resp, nil
}

// recordRead counts the pairs a read answered from r (see
// Region.RecordRead); a pair holding a lock read nothing.
func recordRead(r Region, pairs []*kvrpcpb.KvPair) {
	var bytes, keys uint64
	for _, p := range pairs {
		if p.Error == nil {
			bytes += uint64(len(p.Key) + len(p.Value))
			keys++
		}
	}
	if keys > 0 {
		r.RecordRead(bytes, keys)
	}
}

// KvScan reads up to limit keys of the region at a version, from
// start_key up to end_key or, reversed, from start_key (exclusive) down to
// end_key; both bounds are cut to the region, and an empty end_key, or an
// empty start_key of a reverse scan, stands for the region's end. (TiKV
// reads an empty start_key of a reverse scan as the smallest key, which
// scans nothing; client-go's mock store reads it as this does. client-go
// sends it for an unbounded IterReverse, to the region that holds the
// empty key: the first.)
//
// A lock in the way fails the whole scan with it (the response level
// error, which the client resolves before it asks again): a partial batch
// would read as the end of the region.
func (s *Service) KvScan(ctx context.Context, req *kvrpcpb.ScanRequest) (*kvrpcpb.ScanResponse, error) {
	resp := &kvrpcpb.ScanResponse{}
	var pairs scanPairs
	s.kvScan(ctx, req, resp, &pairs)
	return resp, nil
}

// kvScan is KvScan into resp, whose pairs it makes with pairs. resp.Pairs,
// if it has room, is reused.
func (s *Service) kvScan(ctx context.Context, req *kvrpcpb.ScanRequest, resp *kvrpcpb.ScanResponse, pairs *scanPairs) {
	r, rerr := s.region(req.GetContext())
	if rerr != nil {
		resp.RegionError = rerr
		return
	}
	meta := r.Meta()
	lo, hi, from := req.GetStartKey(), req.GetEndKey(), req.GetStartKey()
	if req.GetReverse() {
		lo, hi = hi, lo
	}
	if len(hi) == 0 {
		hi = nil
	}
	if !req.GetReverse() && !inRegion(meta, from) || req.GetReverse() && !endInRegion(meta, from) {
		resp.RegionError = keyNotInRegion(meta, from)
		return
	}
	lo, hi, empty, err := clampRange(meta, lo, hi)
	if err != nil {
		resp.Error = keyError(err)
		return
	}
	if empty || req.GetLimit() == 0 {
		return
	}
	if err := r.ReadIndex(ctx); err != nil {
		resp.RegionError, resp.Error = failure(err)
		return
	}
	s.cm.observe(req.GetVersion())
	st := r.MVCC()
	if err := s.startRead(ctx, r, func() error { return st.WaitReadRange(ctx, lo, hi, req.GetVersion()) }); err != nil {
		resp.RegionError, resp.Error = failure(err)
		return
	}
	defer s.reads.Release()
	sc, err := st.ScanWith(ctx, lo, hi, req.GetVersion(), req.GetReverse(), readLocks(req.GetContext()))
	if err != nil {
		resp.RegionError, resp.Error = failure(err)
		return
	}
	defer sc.Close()
	limit := int(req.GetLimit())
	if sc.Valid() && cap(resp.Pairs) == 0 {
		resp.Pairs = make([]*kvrpcpb.KvPair, 0, min(limit, scanSlabMax))
	}
	for ; sc.Valid() && len(resp.Pairs) < limit; sc.Next() {
		v := sc.Value()
		if req.GetKeyOnly() {
			v = nil
		}
		resp.Pairs = append(resp.Pairs, pairs.add(sc.Key(), v, limit-len(resp.Pairs)))
	}
	if err := sc.Err(); err != nil {
		resp.Pairs = nil
		resp.RegionError, resp.Error = failure(err)
	}
	recordRead(r, resp.Pairs)
}

// scanPairs makes a scan's pairs in a few allocations rather than three
// per pair: the pairs come from slabs of KvPair values, their keys and
// values are copied into shared buffers. A slab or buffer that is full is
// left to the pairs that point into it and a larger one is made, so that
// nothing handed out moves. A scan of 100 rows of sysbench's tables makes
// 7 allocations instead of 300.
//
// A scanPairs that keeps its memory (a scanAnswer's, see
// service_batch.go) remembers every slab and buffer it made, and after
// reset hands them out again to the next scan, with no allocation and no
// zeroing: making them was 6% of the leader's CPU under oltp_read_only.
type scanPairs struct {
	slab []kvrpcpb.KvPair
	buf  []byte

	keep        bool
	slabs       [][]kvrpcpb.KvPair // made so far, with keep
	bufs        [][]byte
	nslab, nbuf int // of slabs and bufs, how many this scan has used
	kept        int // bytes of slabs and bufs
}

// scanBufMin and scanBufMax bound the size of a new buffer of keys and
// values: it doubles from the first to the last, or holds one pair that
// is larger.
const (
	scanBufMin = 4 << 10
	scanBufMax = 64 << 10
)

// scanSlabMin and scanSlabMax bound the pairs of a new slab: it doubles
// from the first to the last, or holds the pairs the scan has left.
const (
	scanSlabMin = 16
	scanSlabMax = 256
)

// add returns a pair holding copies of key and value (nil: none); left is
// how many pairs the scan may still add, this one included.
func (sp *scanPairs) add(key, value []byte, left int) *kvrpcpb.KvPair {
	if len(sp.slab) == cap(sp.slab) {
		sp.nextSlab(left)
	}
	sp.slab = sp.slab[:len(sp.slab)+1]
	p := &sp.slab[len(sp.slab)-1]
	*p = kvrpcpb.KvPair{Key: sp.copy(key)} // a kept slab holds an earlier scan's pair
	if value != nil {
		p.Value = sp.copy(value)
	}
	return p
}

// nextSlab makes sp.slab an empty slab: a kept one if there is one left,
// else a new one.
func (sp *scanPairs) nextSlab(left int) {
	if sp.nslab < len(sp.slabs) {
		sp.slab = sp.slabs[sp.nslab][:0]
		sp.nslab++
		return
	}
	sp.slab = make([]kvrpcpb.KvPair, 0, max(1, min(left, max(2*cap(sp.slab), scanSlabMin), scanSlabMax)))
	if sp.keep {
		sp.slabs = append(sp.slabs, sp.slab)
		sp.nslab++
		sp.kept += cap(sp.slab) * int(unsafe.Sizeof(kvrpcpb.KvPair{}))
	}
}

// copy returns a copy of b in sp's buffer, capped at its length.
func (sp *scanPairs) copy(b []byte) []byte {
	if len(b) > cap(sp.buf)-len(sp.buf) {
		sp.nextBuf(len(b))
	}
	start := len(sp.buf)
	sp.buf = append(sp.buf, b...)
	return sp.buf[start:len(sp.buf):len(sp.buf)]
}

// nextBuf makes sp.buf an empty buffer of at least n bytes: the next kept
// one if it is large enough (else a new one replaces it), or a new one.
func (sp *scanPairs) nextBuf(n int) {
	if sp.nbuf < len(sp.bufs) && cap(sp.bufs[sp.nbuf]) >= n {
		sp.buf = sp.bufs[sp.nbuf][:0]
		sp.nbuf++
		return
	}
	size := max(min(max(2*cap(sp.buf), scanBufMin), scanBufMax), n)
	sp.buf = make([]byte, 0, size)
	if !sp.keep {
		return
	}
	if sp.nbuf < len(sp.bufs) {
		sp.kept -= cap(sp.bufs[sp.nbuf])
		sp.bufs[sp.nbuf] = sp.buf
	} else {
		sp.bufs = append(sp.bufs, sp.buf)
	}
	sp.nbuf++
	sp.kept += size
}

// reset readies a scanPairs that keeps its memory for the next scan: the
// pairs it handed out must no longer be used.
func (sp *scanPairs) reset() {
	sp.slab, sp.buf = nil, nil
	sp.nslab, sp.nbuf = 0, 0
}

// KvScanLock lists the region's locks in [start_key, end_key) of
// transactions that started at or below max_version, up to limit (0: all),
// for GC's lock resolution.
func (s *Service) KvScanLock(ctx context.Context, req *kvrpcpb.ScanLockRequest) (*kvrpcpb.ScanLockResponse, error) {
	resp := &kvrpcpb.ScanLockResponse{}
	r, rerr := s.region(req.GetContext(), req.GetStartKey())
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	end := req.GetEndKey()
	if len(end) == 0 {
		end = nil
	}
	lo, hi, empty, err := clampRange(r.Meta(), req.GetStartKey(), end)
	if err != nil {
		resp.Error = keyError(err)
		return resp, nil
	}
	if empty {
		return resp, nil
	}
	if err := r.ReadIndex(ctx); err != nil {
		resp.RegionError, resp.Error = failure(err)
		return resp, nil
	}
	maxTS := req.GetMaxVersion()
	s.cm.observe(maxTS) // as TiKV: GC's lock scan reads the locks below its safe point
	if err := s.reads.Acquire(ctx); err != nil {
		resp.RegionError, resp.Error = failure(err)
		return resp, nil
	}
	defer s.reads.Release()
	locks, err := r.MVCC().ScanLocks(lo, hi, int(req.GetLimit()), func(l *mvcc.LockInfo) bool { return l.StartTS <= maxTS })
	if err != nil {
		resp.RegionError, resp.Error = failure(err)
		return resp, nil
	}
	for i := range locks {
		resp.Locks = append(resp.Locks, lockInfo(&locks[i]))
	}
	return resp, nil
}

// GetStoreSafeTS answers 0: this store keeps no resolved ts, so stale
// reads are never served from it. client-go asks every store every 2 s.
func (s *Service) GetStoreSafeTS(context.Context, *kvrpcpb.StoreSafeTSRequest) (*kvrpcpb.StoreSafeTSResponse, error) {
	return &kvrpcpb.StoreSafeTSResponse{}, nil
}

// SplitRegion splits the region at raw keys and returns the regions that
// result, boundaries encoded.
func (s *Service) SplitRegion(ctx context.Context, req *kvrpcpb.SplitRegionRequest) (*kvrpcpb.SplitRegionResponse, error) {
	resp := &kvrpcpb.SplitRegionResponse{}
	keys := req.GetSplitKeys()
	if len(keys) == 0 && len(req.GetSplitKey()) > 0 {
		keys = [][]byte{req.GetSplitKey()}
	}
	if len(keys) == 0 {
		resp.Errors = []*kvrpcpb.KeyError{{Abort: "split region: no split key"}}
		return resp, nil
	}
	r, rerr := s.region(req.GetContext(), keys...)
	if rerr != nil {
		resp.RegionError = rerr
		return resp, nil
	}
	regions, err := s.regions.Split(ctx, r, keys)
	if err != nil {
		re, ke := failure(err)
		resp.RegionError = re
		if ke != nil {
			resp.Errors = []*kvrpcpb.KeyError{ke}
		}
		return resp, nil
	}
	resp.Regions = regions
	if len(regions) == 2 {
		resp.Left, resp.Right = regions[0], regions[1]
	}
	return resp, nil
}
