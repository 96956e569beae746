// Package raftstore is the replication layer of a storage node: one Raft
// group (go.etcd.io/raft/v3) per region, all of a store's regions driven
// by one Ready loop over one Pebble database.
//
// Each loop iteration collects the Ready of every region that has one,
// writes all their log entries and hard states in one Pebble batch (synced
// when raftstore.sync-log is on: group commit across regions), sends their
// messages, applies their committed entries, and advances them. What does
// not depend on the write overlaps it (loop.go): a leader's appends go out
// before it, and entries already durable apply during it; acknowledgements
// and votes wait for it, and a leader counts its own copy of an entry
// towards the quorum only once written.
//
// Commands are raft_cmdpb.RaftCmdRequests, as in TiKV: a transaction
// command's write batch (decided on the leader by store/mvcc, so that
// followers apply bytes), or an admin command (split). Configuration
// changes travel as raft's ConfChangeV2 with a ChangePeerV2Request in
// their context. A snapshot's raft_serverpb.RaftSnapshotData carries the
// region; its data travels over tikvpb's Snapshot stream and is ingested
// as SSTs (snapshot.go).
package raftstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/store/mvcc"
	storepebble "github.com/basalt-db/basalt/store/pebble"
	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
)

// Config configures a Store.
type Config struct {
	StoreID uint64
	Engine  *storepebble.Engine
	// SyncLog fsyncs each Ready batch of log entries before their
	// messages go out and their commands apply.
	SyncLog bool
	// Tick is Raft's base tick; a leader heartbeats every HeartbeatTicks
	// and a follower campaigns after ElectionTicks without one.
	Tick           time.Duration
	HeartbeatTicks int
	ElectionTicks  int
	// MaxLeaderLease is how long after a quorum's answer a leader serves
	// reads without asking again (TiKV's raft-store-max-leader-lease);
	// zero means, and more than it is refused, 90% of (ElectionTicks-2)
	// ticks (see lease.go).
	MaxLeaderLease time.Duration
	// LogGCCountLimit: a peer compacts its log once it holds more applied
	// entries than this, keeping the newer half for slow followers.
	LogGCCountLimit uint64
	// LogGCSizeLimit: a leader compacts its log once its applied entries
	// hold this many bytes, even if a slow follower still needs them
	// (that follower then gets a snapshot); zero means 1 MiB.
	LogGCSizeLimit uint64
	// StorePoolSize goroutines build and write a Ready's raft logs, and
	// ApplyPoolSize apply committed entries, each taking a share of the
	// regions with work (TiKV's raftstore.store-pool-size and
	// apply-pool-size); zero means one.
	StorePoolSize int
	ApplyPoolSize int
	// RaftConnNum is how many connections carry Raft messages to each
	// other store (TiKV's server.grpc-raft-conn-num); zero means one.
	RaftConnNum int
	// SnapChunkSize bounds the data of one chunk of a snapshot sent; zero
	// means 1 MiB.
	SnapChunkSize int
	// InMemoryLocks keeps a leader's pessimistic locks in memory instead
	// of proposing them through Raft (TiKV's pessimistic-txn.in-memory;
	// see memlocks.go).
	InMemoryLocks bool
	// Resolve returns the gRPC address of a store.
	Resolve func(ctx context.Context, storeID uint64) (string, error)
	Logger  *slog.Logger
}

// Store is one storage node's replicas.
type Store struct {
	cfg     Config
	log     *slog.Logger
	eng     *storepebble.Engine
	db      *pebble.DB
	latches *mvcc.Latches
	waits   *mvcc.WaitManager
	trans   *transport
	// writeTable: the recent writes of the regions this store leads, for
	// their conflict checks (writefilter.go).
	writeTable *mvcc.WriteTable

	mu    sync.RWMutex
	peers map[uint64]*Peer // by region ID
	// tombstones: regions whose peer here was removed, and that peer's ID;
	// messages to it, or to an older peer, are dropped.
	tombstones map[uint64]uint64
	// peerCache: peer ID → *metapb.Peer, for every peer a message came
	// from.
	peerCache sync.Map

	// SnapshotsApplied counts the snapshots this store's peers installed.
	SnapshotsApplied atomic.Int64

	// loopPeers is the Ready loop's list of peers, reused each iteration.
	loopPeers []*Peer

	maxLease time.Duration
	// flow: what the store's regions wrote since the last store heartbeat.
	flow flow
	// memLockWrites and memLockFlushes: see MemLockStats; proposals and
	// logSyncs: see LogStats.
	memLockWrites, memLockFlushes atomic.Uint64
	proposals, logSyncs           atomic.Uint64
	// lockDeletes and lockDeletesSkipped: the lock column family's deletes
	// applied into Pebble, and those skipped as Pebble held no lock (apply.go).
	lockDeletes, lockDeletesSkipped atomic.Uint64
	// memLockBytes: the bytes of all its peers' in-memory locks.
	memLockBytes atomic.Int64
	// startedAt: when Start was called (monoNow).
	startedAt     atomic.Int64
	startedAtWall time.Time
	// paused, when set, stalls the Ready loop until the channel closes
	// (tests only).
	paused atomic.Pointer[chan struct{}]
	// refusingLeadership: the store is stopping (RefuseLeadership), and
	// takes no region's leadership by transfer.
	refusingLeadership atomic.Bool
	// isolated drops every Raft message that arrives, and droppedRegion
	// those of one region, if not zero (tests only).
	isolated      atomic.Bool
	droppedRegion atomic.Uint64
	// loopHook, when set, is called with an iteration's Readys at each of
	// the points of handleReady that tests stop the loop at (tests only).
	loopHook atomic.Pointer[func(loopPoint, []readyPeer)]

	// reclaim compacts the ranges a DeleteRange applied here deleted, so
	// that their space comes back (see mvcc.Reclaimer).
	reclaim *mvcc.Reclaimer

	wakeCh  chan struct{}
	stopCh  chan struct{}
	stopped chan struct{}
	// logWriter: the loop's log writes that overlap its applies go to
	// the goroutine that serves it (runLogWriter) while the loop runs.
	logWriter chan logWriteJob

	// lockCF: whether Pebble holds no lock, for reads to skip looking
	// (lockcf.go); lockCFDone is closed when its checks have stopped.
	lockCF     *lockCF
	lockCFDone chan struct{}
}

// ErrStopped is returned for work given to a stopped store.
var ErrStopped = errors.New("raftstore: store is stopped")

// NewStore opens the replicas persisted in cfg.Engine.
func NewStore(cfg Config) (*Store, error) {
	if cfg.LogGCSizeLimit == 0 {
		cfg.LogGCSizeLimit = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{cfg: cfg, log: cfg.Logger, eng: cfg.Engine, db: cfg.Engine.DB(),
		latches: mvcc.NewLatches(), waits: mvcc.NewWaitManager(mvcc.RealClock{}), writeTable: mvcc.NewWriteTable(),
		peers: map[uint64]*Peer{}, tombstones: map[uint64]uint64{},
		wakeCh: make(chan struct{}, 1), stopCh: make(chan struct{}), stopped: make(chan struct{}),
		lockCF: newLockCF(), lockCFDone: make(chan struct{})}
	if cfg.ElectionTicks <= cfg.HeartbeatTicks || cfg.ElectionTicks < 3 || cfg.Tick <= 0 {
		return nil, fmt.Errorf("raftstore: election timeout of %d ticks of %v is too short (heartbeat: %d ticks)",
			cfg.ElectionTicks, cfg.Tick, cfg.HeartbeatTicks)
	}
	s.maxLease = defaultMaxLease(cfg)
	if cfg.MaxLeaderLease > s.maxLease {
		return nil, fmt.Errorf("raftstore: a leader lease of %v is longer than the election timeout allows (at most %v)",
			cfg.MaxLeaderLease, s.maxLease)
	}
	if cfg.MaxLeaderLease > 0 {
		s.maxLease = cfg.MaxLeaderLease
	}
	s.startedAt.Store(monoNow())
	s.trans = newTransport(s)
	pps, err := loadPeers(s.db)
	if err != nil {
		return nil, err
	}
	for _, pp := range pps {
		region := pp.state.Region
		self := findStorePeer(region, cfg.StoreID)
		if self == nil {
			return nil, fmt.Errorf("raftstore: region %d has no peer on store %d", region.Id, cfg.StoreID)
		}
		initialized := pp.state.State == raft_serverpb.PeerState_Normal
		tr := pp.apply.GetTruncatedState()
		p, err := s.newPeer(region, self, initialized, pp.hard, tr.GetIndex(), tr.GetTerm(), pp.ents, pp.apply.AppliedIndex)
		if err != nil {
			return nil, fmt.Errorf("raftstore: region %d: %w", region.Id, err)
		}
		s.peers[region.Id] = p
	}
	if err := s.loadTombstones(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) loadTombstones() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{raftPrefix}, UpperBound: []byte{raftPrefix + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) != 10 || k[9] != regionSuffix {
			continue
		}
		var st raft_serverpb.RegionLocalState
		if err := st.Unmarshal(it.Value()); err != nil {
			return err
		}
		if st.State == raft_serverpb.PeerState_Tombstone {
			if p := findStorePeer(st.Region, s.cfg.StoreID); p != nil {
				s.tombstones[st.Region.Id] = p.Id
			}
		}
	}
	return nil
}

// findStorePeer returns region r's peer on the store, nil if none. A
// region lists one peer per store (checkOnePeerPerStore), but one written
// before that check may list two; the store then holds the newer one (a
// message to it replaced the older), so that is the one returned, for a
// restart to load the store's state as the peer that wrote it.
func findStorePeer(r *metapb.Region, storeID uint64) *metapb.Peer {
	var found *metapb.Peer
	for _, p := range r.GetPeers() {
		if p.StoreId == storeID && (found == nil || p.Id > found.Id) {
			found = p
		}
	}
	return found
}

// IsEmpty says whether the store holds no region (a new store, which may
// bootstrap the cluster).
func (s *Store) IsEmpty() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.peers) == 0 && len(s.tombstones) == 0
}

// Bootstrap creates the cluster's first region on this store, with one
// peer here, marked as prepared for bootstrapping (see
// PreparedBootstrap). Call it before Start, on an empty store.
func (s *Store) Bootstrap(region *metapb.Region) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := writeInitialState(b, region, initHardState); err != nil {
		return err
	}
	if err := b.Set(prepareBootstrapKey, binary.BigEndian.AppendUint64(nil, region.Id), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	self := findStorePeer(region, s.cfg.StoreID)
	p, err := s.newPeer(region, self, true, initHardState, initLogIndex, initLogTerm, nil, initLogIndex)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.peers[region.Id] = p
	s.mu.Unlock()
	return nil
}

// Start runs the Ready loop and the ticker.
func (s *Store) Start() {
	s.startedAt.Store(monoNow())
	s.startedAtWall = time.Now()
	// A region with a single voter elects itself at once rather than
	// after an election timeout.
	for _, p := range s.Peers() {
		p.mu.Lock()
		if cs := confStateOf(p.region); p.initialized && len(cs.Voters) == 1 && cs.Voters[0] == p.self.Id {
			_ = p.rn.Campaign()
		}
		p.mu.Unlock()
	}
	s.reclaim = mvcc.StartReclaimer(func(err error) { s.log.Warn("cannot compact a deleted range", "err", err) })
	go s.loop()
	go s.checkLockCF()
}

// Stop stops the loops and the transport. Proposals still waiting fail.
func (s *Store) Stop() {
	select {
	case <-s.stopCh:
		return
	default:
	}
	close(s.stopCh)
	<-s.stopped
	<-s.lockCFDone // no scan of the engine after Stop
	if s.reclaim != nil {
		s.reclaim.Stop()
	}
	s.trans.close()
	for _, p := range s.Peers() {
		p.mu.Lock()
		p.failPending(&RegionError{Err: &errorpb.Error{Message: "store is stopping",
			ServerIsBusy: &errorpb.ServerIsBusy{Reason: "store is stopping"}}})
		p.mu.Unlock()
	}
}

// Peers returns the store's peers, in region ID order.
func (s *Store) Peers() []*Peer {
	ps := s.appendPeers(nil)
	sort.Slice(ps, func(i, j int) bool { return ps[i].Meta().Id < ps[j].Meta().Id })
	return ps
}

// appendPeers appends the store's peers to ps, in no order: for the Ready
// loop, which visits them all on every tick and wake-up.
func (s *Store) appendPeers(ps []*Peer) []*Peer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, p := range s.peers {
		ps = append(ps, p)
	}
	return ps
}

// Peer returns the store's peer of region id, or nil.
func (s *Store) Peer(id uint64) *Peer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.peers[id]
}

// wake makes the Ready loop run soon.
func (s *Store) wake() {
	select {
	case s.wakeCh <- struct{}{}:
	default:
	}
}

// Leader checks a request's context against the region it names (see
// storenode.Regions) and returns the peer that leads it here.
func (s *Store) Leader(ctx *kvrpcpb.Context) (*Peer, *errorpb.Error) {
	id := ctx.GetRegionId()
	p := s.Peer(id)
	if p == nil || !p.isInitialized() {
		return nil, &errorpb.Error{Message: fmt.Sprintf("region %d is not found", id),
			RegionNotFound: &errorpb.RegionNotFound{RegionId: id}}
	}
	if sid := ctx.GetPeer().GetStoreId(); sid != 0 && sid != s.cfg.StoreID {
		return nil, &errorpb.Error{Message: "store not match",
			StoreNotMatch: &errorpb.StoreNotMatch{RequestStoreId: sid, ActualStoreId: s.cfg.StoreID}}
	}
	if !p.IsLeader() {
		return nil, p.notLeader().Err
	}
	region := p.Meta()
	// Data commands are checked against the region's version, as TiKV
	// checks them: a configuration change does not move any key.
	if ctx.GetRegionEpoch().GetVersion() != region.GetRegionEpoch().GetVersion() {
		return nil, &errorpb.Error{Message: fmt.Sprintf("epoch not match for region %d", id),
			EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: s.ledRegionsAround(region)}}
	}
	// A new leader serves commands only once it has applied everything
	// committed before its term.
	if p.leaseReady.Load() {
		return p, nil
	}
	p.mu.Lock()
	termStart := p.termStart
	p.mu.Unlock()
	wctx, cancel := context.WithTimeout(context.Background(), readIndexTimeout)
	defer cancel()
	if err := p.waitApplied(wctx, termStart); err != nil {
		var re *RegionError
		if errors.As(err, &re) {
			return nil, re.Err
		}
		return nil, &errorpb.Error{Message: "leader is not ready",
			ServerIsBusy: &errorpb.ServerIsBusy{Reason: "leader has not applied its log yet"}}
	}
	return p, nil
}

// LeaderNow is Leader for a read that must not wait: the peer, if the
// context names a region this store leads at the context's epoch, whose
// peer has applied its earlier terms' log and holds its lease now (and
// renews it as ReadIndex would). A read may then go ahead at once, as one
// past Leader and ReadIndex would. Otherwise nil, without an error: the
// caller takes the path that waits, Leader then ReadIndex, which says
// what is wrong.
func (s *Store) LeaderNow(ctx *kvrpcpb.Context) *Peer {
	p := s.Peer(ctx.GetRegionId())
	if p == nil || !p.isInitialized() || !p.IsLeader() {
		return nil
	}
	if sid := ctx.GetPeer().GetStoreId(); sid != 0 && sid != s.cfg.StoreID {
		return nil
	}
	if ctx.GetRegionEpoch().GetVersion() != p.Meta().GetRegionEpoch().GetVersion() {
		return nil
	}
	now := monoNow()
	if !p.inLease(now) { // (inLease implies leaseReady)
		return nil
	}
	p.maybeRenewLease(now)
	return p
}

// ledRegionsAround returns region and the regions next to it that this
// store leads, for EpochNotMatch: the client trusts them, with this store
// as their leader.
func (s *Store) ledRegionsAround(region *metapb.Region) []*metapb.Region {
	out := []*metapb.Region{region}
	for _, p := range s.Peers() {
		r := p.Meta()
		if r.Id == region.Id || !p.IsLeader() || !p.isInitialized() {
			continue
		}
		if bytes.Equal(r.StartKey, region.EndKey) || bytes.Equal(r.EndKey, region.StartKey) {
			out = append(out, r)
		}
	}
	return out
}

func (p *Peer) isInitialized() bool { return p.serving.Load() }

// PreparedBootstrap returns the region Bootstrap wrote, if PD has not yet
// been told about it (ClearPrepareBootstrap): a store that stopped in
// between must offer it again, or drop it if another store bootstrapped
// the cluster meanwhile.
func (s *Store) PreparedBootstrap() (regionID uint64, ok bool, err error) {
	v, closer, err := s.db.Get(prepareBootstrapKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, fmt.Errorf("raftstore: bad prepared bootstrap record %x", v)
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// ClearPrepareBootstrap records that PD knows the region Bootstrap wrote.
func (s *Store) ClearPrepareBootstrap() error {
	return s.db.Delete(prepareBootstrapKey, pebble.Sync)
}

// DropBootstrap removes a region this store wrote for bootstrapping, when
// another store bootstrapped the cluster first. Call it before Start.
func (s *Store) DropBootstrap(regionID uint64) error {
	s.mu.Lock()
	delete(s.peers, regionID)
	s.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(regionPrefix(regionID), regionPrefix(regionID+1), nil); err != nil {
		return err
	}
	if err := b.Delete(prepareBootstrapKey, nil); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

// Waits is the store's lock waits, shared by all its regions.
func (s *Store) Waits() *mvcc.WaitManager { return s.waits }
