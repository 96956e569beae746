package raftstore

import (
	"context"
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Peer is this store's replica of one region: a raft.RawNode and the
// region's metadata. Everything that touches the RawNode holds mu; the
// store's Ready loop is the only goroutine that persists, applies and
// advances it.
type Peer struct {
	s *Store

	mu      sync.Mutex
	rn      *raft.RawNode
	storage *peerStorage
	region  *metapb.Region // the applied metadata; replaced, never mutated
	self    *metapb.Peer
	// initialized: the peer holds the region's data (it was bootstrapped,
	// split off, or given a snapshot). A peer created by a message from a
	// new region's leader is not, until its first snapshot.
	initialized bool
	applied     uint64
	// appliedLogBytes: the bytes of applied entries still in memory
	// (maybeCompactLog), counted from this process's applies.
	appliedLogBytes uint64
	lastIndex       uint64 // the last log index persisted
	// termStart is the index of the first entry of the current term, when
	// this peer leads: commands must wait until it is applied, so that they
	// read every write committed by earlier leaders. termStartAt is when
	// the Ready loop saw this peer become leader, before the entry went out.
	termStart   uint64
	termStartAt int64
	// transferring: raft is handing this leader's leadership over (its
	// LeadTransferee is set). Until raft ends the transfer, the peer is not
	// leaseReady and its lease is not renewed: the transferee campaigns
	// with votes that ignore the lease (see lease.go).
	transferring bool
	// leaseFence: round trips begun at or before it do not renew the
	// lease (see lease.go).
	leaseFence int64
	leaderID   uint64
	// appliedCh is closed, and replaced, whenever applied advances.
	appliedCh chan struct{}
	nextID    uint64
	props     map[uint64]proposal
	reads     map[uint64]pendingRead
	destroyed bool
	// logDurable is closed once the Ready loop's log write that holds this
	// peer's last persisted Ready is committed: destroy waits for it, so
	// that what persist put in the iteration's batch cannot land after
	// destroy wiped the peer's log and hard state.
	logDurable chan struct{}
	// campaignUntil: a peer created by a split on its parent leader's
	// store campaigns on ticks until then, while its region has no leader.
	campaignUntil time.Time
	// removedPeers: peers this leader removed in the batch being applied,
	// to be told so (a removed peer may never get the entry that removes
	// it: the leader stops replicating to it).
	removedPeers []*metapb.Peer
	// applying: an apply batch is being built, not yet committed.
	applying bool
	// lockWrite: the batch being applied puts a lock (lockcf.go).
	lockWrite bool
	// deleted: compactions of the ranges the batch deletes, to queue once
	// it is committed (mvcc.Reclaimer).
	deleted []func(context.Context) error
	// splitResult: the regions a split applied in this batch created, and
	// the hard state of each one's peer here.
	splitResult []splitRegion
	// locks: the pessimistic locks this leader holds in memory, and
	// splitting: splits proposed and not yet done, during which it takes
	// none (see memlocks.go).
	locks     memLocks
	splitting int

	meta     atomic.Pointer[metapb.Region]
	isLeader atomic.Bool
	// leaderTerm: the term in which this peer last became leader.
	leaderTerm atomic.Uint64
	// leaseReady: this peer leads, has applied its term's first entry
	// (so it has applied everything committed before its term) and is not
	// transferring its leadership: it may serve commands, and reads while
	// its lease lasts (see lease.go). updateReadyLocked sets it; anything
	// that changes one of those conditions calls it, or clears it.
	leaseReady atomic.Bool
	// leaseUntil: the monotonic time (monoNow) at which the lease ends.
	leaseUntil atomic.Int64
	// renewStarted: when the last ReadIndex only to renew the lease began.
	renewStarted atomic.Int64
	// serving: initialized and not destroyed, readable without mu (the
	// store's lock is taken before peers' locks are, never after).
	serving atomic.Bool
	mvcc    atomic.Pointer[mvcc.Store]
	// writeFloor and writeFloorTerm: the floor of the region's write
	// filter, math.MaxUint64 unless this peer leads, and the term it was
	// set for (writefilter.go).
	writeFloor     atomic.Uint64
	writeFloorTerm atomic.Uint64
	// written counts the bytes applied to the region since its size was
	// last measured.
	written atomic.Uint64
	// flow: what was written since the last region heartbeat.
	flow flow
	// lastActive: when each other peer was last heard from (peer ID →
	// *atomic.Int64 of unix nanos), for the down peers of region heartbeats.
	lastActive sync.Map
}

func (s *Store) newPeer(region *metapb.Region, self *metapb.Peer, initialized bool, hs raftpb.HardState,
	truncIndex, truncTerm uint64, ents []raftpb.Entry, applied uint64) (*Peer, error) {
	p := &Peer{s: s, region: region, self: self, initialized: initialized,
		appliedCh: make(chan struct{}), props: map[uint64]proposal{}, reads: map[uint64]pendingRead{},
		nextID: uint64(time.Now().UnixNano())}
	p.locks.total = &s.memLockBytes
	p.writeFloor.Store(math.MaxUint64)
	ms := raft.NewMemoryStorage()
	if truncIndex > 0 {
		if err := ms.ApplySnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{
			Index: truncIndex, Term: truncTerm, ConfState: confStateOf(region)}}); err != nil {
			return nil, err
		}
	}
	if err := ms.Append(ents); err != nil {
		return nil, err
	}
	if err := ms.SetHardState(hs); err != nil {
		return nil, err
	}
	p.storage = &peerStorage{MemoryStorage: ms, p: p}
	p.lastIndex, _ = ms.LastIndex()
	p.applied = applied
	rn, err := raft.NewRawNode(&raft.Config{
		ID:              self.Id,
		ElectionTick:    s.cfg.ElectionTicks,
		HeartbeatTick:   s.cfg.HeartbeatTicks,
		Storage:         p.storage,
		Applied:         applied,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 256,
		CheckQuorum:     true,
		PreVote:         true,
		// ReadIndex asks a quorum: it is what renews a lease that lapsed.
		ReadOnlyOption: raft.ReadOnlySafe,
		// A command is decided on this peer's applied state; raft must not
		// forward it to a new leader that has more.
		DisableProposalForwarding: true,
		Logger:                    raftLogger{s.log.With("region", region.Id)},
	})
	if err != nil {
		return nil, err
	}
	p.rn = rn
	p.publish()
	return p, nil
}

// publish makes the applied region visible to request handlers, with an
// mvcc.Store whose writes carry its epoch. Call with mu held.
func (p *Peer) publish() {
	p.meta.Store(p.region)
	p.serving.Store(p.initialized && !p.destroyed)
	st, _ := mvcc.NewStore(&regionEngine{p: p, epoch: p.region.RegionEpoch}, mvcc.RealClock{},
		mvcc.Options{Latches: p.s.latches, Waits: p.s.waits, WriteTable: p.s.writeTable, WriteFloor: &p.writeFloor})
	p.mvcc.Store(st)
}

// Meta is the region as this peer last applied it.
func (p *Peer) Meta() *metapb.Region { return p.meta.Load() }

// MVCC runs transaction commands over the region (see storenode.Region).
func (p *Peer) MVCC() *mvcc.Store { return p.mvcc.Load() }

// IsLeader says whether this peer led the region at its last Ready.
func (p *Peer) IsLeader() bool { return p.isLeader.Load() }

// LeaderTerm is the Raft term in which this peer became the region's
// leader, or 0 if it does not lead it. A new term means a new leader, which
// must sync its store's max_ts with PD before async commit or 1PC.
func (p *Peer) LeaderTerm() uint64 {
	if !p.isLeader.Load() {
		return 0
	}
	return p.leaderTerm.Load()
}

func findPeer(r *metapb.Region, id uint64) *metapb.Peer {
	for _, pr := range r.GetPeers() {
		if pr.Id == id {
			return pr
		}
	}
	return nil
}

// notLeader is the region error for a request this peer cannot serve as
// leader.
func (p *Peer) notLeader() *RegionError {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notLeaderLocked()
}

// notLeaderLocked is notLeader for a caller holding mu.
func (p *Peer) notLeaderLocked() *RegionError {
	return NotLeader(p.region.Id, findPeer(p.region, p.leaderID))
}

// waitApplied blocks until index is applied, the context ends, or the peer
// loses leadership.
func (p *Peer) waitApplied(ctx context.Context, index uint64) error {
	for {
		p.mu.Lock()
		applied, ch, destroyed := p.applied, p.appliedCh, p.destroyed
		p.mu.Unlock()
		if applied >= index {
			return nil
		}
		if destroyed {
			return &RegionError{Err: &errorpb.Error{Message: "region removed",
				RegionNotFound: &errorpb.RegionNotFound{RegionId: p.Meta().Id}}}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ReadIndex waits until a read on this peer sees every write committed
// before the call.
//
// A leader whose lease holds (see lease.go) answers at once: it has
// applied everything committed before its term, every write acknowledged
// to a client was applied here first, and one committed but not yet
// applied still has its locks in place for readers to find. Otherwise the
// read goes through raft's ReadIndex, which asks a quorum, waits for that
// index to apply, and renews the lease.
func (p *Peer) ReadIndex(ctx context.Context) error {
	now := monoNow()
	if p.inLease(now) {
		p.maybeRenewLease(now)
		return nil
	}
	ch := make(chan uint64, 1)
	p.mu.Lock()
	if !p.isLeader.Load() || p.destroyed {
		p.mu.Unlock()
		return p.notLeader()
	}
	id := p.nextID
	p.nextID++
	p.reads[id] = pendingRead{ch: ch, at: now}
	p.rn.ReadIndex(binary.BigEndian.AppendUint64(nil, id))
	p.mu.Unlock()
	p.s.wake()
	t := time.NewTimer(readIndexTimeout)
	defer t.Stop()
	select {
	case index, ok := <-ch:
		if !ok {
			return p.notLeader()
		}
		return p.waitApplied(ctx, index)
	case <-t.C:
		p.mu.Lock()
		delete(p.reads, id)
		p.mu.Unlock()
		return p.notLeader()
	case <-ctx.Done():
		p.mu.Lock()
		delete(p.reads, id)
		p.mu.Unlock()
		return ctx.Err()
	}
}

// readIndexTimeout bounds a read's wait for its read index: a leader that
// cannot get one (it has not committed in its term, or lost its quorum)
// answers NotLeader, and the client retries elsewhere.
const readIndexTimeout = 2 * time.Second

// propose proposes cmd and waits for it to be applied. It does not give up
// while this peer leads: a command holds latches on its keys until its
// write is applied, and releasing them early, while the write could still
// apply, would let another command read around it.
//
// onProposed, if not nil, is called once raft has accepted the proposal
// into the leader's log, before it is replicated: the caller may answer
// then (a pipelined pessimistic lock), trusting the write to apply unless
// the leadership is lost. So it is not called, and the caller waits for
// the outcome, while a split is in flight: a write ordered after the
// split applies after it, and fails there on the changed epoch. A write
// decided on an epoch already gone fails here, unproposed.
func (p *Peer) propose(cmd *raft_cmdpb.RaftCmdRequest, onProposed func()) error {
	p.mu.Lock()
	if !p.leadsLocked() {
		p.mu.Unlock()
		return p.notLeader()
	}
	if cmd.AdminRequest == nil {
		if cmd.Header.GetRegionEpoch().GetVersion() != p.region.GetRegionEpoch().GetVersion() {
			err := p.epochChanged()
			p.mu.Unlock()
			return err
		}
		if p.splitting > 0 {
			onProposed = nil
		}
	}
	ch, err := p.proposeLocked(cmd)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	if onProposed != nil {
		onProposed()
	}
	p.s.wake()
	return <-ch
}

// proposeLocked proposes cmd and returns the channel its outcome will
// come on; the in-memory locks cmd writes are pending from now on (see
// memlocks.go). Call with mu held.
func (p *Peer) proposeLocked(cmd *raft_cmdpb.RaftCmdRequest) (chan error, error) {
	id := p.nextID
	p.nextID++
	at := monoNow()
	cmd.Header.Uuid = binary.BigEndian.AppendUint64(nil, id)
	cmd.Header.RegionId = p.region.Id
	cmd.Header.Peer = p.self
	data := mustMarshal(cmd)
	if err := p.rn.Propose(data); err != nil {
		return nil, p.notLeaderLocked()
	}
	p.locks.settle(cmd, settlePropose)
	p.s.proposals.Add(1)
	ch := make(chan error, 1)
	p.props[id] = proposal{done: ch, at: at}
	return ch, nil
}

// updateReadyLocked sets leaseReady from the conditions it stands for
// (see the field). It must be called whenever one of them may have come
// true: the peer applied entries, or a leader transfer ended without
// moving the leadership (raft ignored it, or gave it up after an
// election timeout). Nothing else sets leaseReady, so a leader that
// applies nothing more would otherwise never serve again. Call with mu
// held.
func (p *Peer) updateReadyLocked() {
	if p.destroyed || !p.isLeader.Load() || p.transferring || p.applied < p.termStart {
		p.leaseReady.Store(false)
		return
	}
	if p.leaseReady.Load() || p.rn.BasicStatus().RaftState != raft.StateLeader {
		return // ready already; or stepped down, which the next Ready tells
	}
	// The term's first entry committed after termStartAt: a quorum's
	// round trip. The fence keeps a lease given up for a transfer from
	// coming back this way.
	p.renewLease(p.termStartAt)
	p.leaseReady.Store(true)
}

// checkTransferLocked notices that raft ended a leader transfer this
// peer started (the transferee has not taken over: raft gave up after
// an election timeout, or the transferee left the configuration), and
// lets the peer serve again. Round trips begun during the transfer do
// not renew the lease. Call with mu held.
func (p *Peer) checkTransferLocked() {
	if !p.transferring || p.rn.BasicStatus().LeadTransferee != 0 {
		return
	}
	p.transferring = false
	p.endLease()
	p.updateReadyLocked()
}

// leadsLocked says whether raft itself, not just the last Ready, has this
// peer as the leader. Call with mu held.
func (p *Peer) leadsLocked() bool {
	return !p.destroyed && p.isLeader.Load() && p.rn.BasicStatus().RaftState == raft.StateLeader
}

// failPending ends every proposal and read waiting on this peer with
// err, when it stops leading. Call with mu held.
func (p *Peer) failPending(err error) {
	for id, pr := range p.props {
		pr.done <- err
		delete(p.props, id)
	}
	for id, r := range p.reads {
		if r.ch != nil {
			close(r.ch)
		}
		delete(p.reads, id)
	}
}
