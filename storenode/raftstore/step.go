package raftstore

import (
	"bytes"
	"sync/atomic"

	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// RefuseLeadership makes the store, which is stopping, refuse the
// leadership of every region that a leader tries to transfer to it
// (MsgTimeoutNow is dropped): when several stores stop at once, their
// leaders then go only to stores that stay, rather than from one stopping
// store to the next. Elections are not refused.
func (s *Store) RefuseLeadership() { s.refusingLeadership.Store(true) }

// Step delivers a Raft message from another store. Messages for a region
// this store does not hold create its peer, uninitialized, when they come
// from a leader (a new replica gets its data by snapshot), unless the
// peer was removed here or another region here still covers the range (a
// split this store has yet to apply will create it).
func (s *Store) Step(msg *raft_serverpb.RaftMessage) {
	to, from := msg.GetToPeer(), msg.GetFromPeer()
	if to.GetStoreId() != s.cfg.StoreID || msg.Message == nil || from == nil || s.isolated.Load() ||
		msg.RegionId == s.droppedRegion.Load() {
		return
	}
	if msg.IsTombstone {
		s.destroyRemoved(msg)
		return
	}
	m, ok := fromEraft(msg.Message)
	if !ok {
		return
	}
	if m.Type == raftpb.MsgTimeoutNow && s.refusingLeadership.Load() {
		// A leader hands this store its region; a stopping store would
		// only hand it on again (or take it down with it).
		return
	}
	s.notePeer(from)
	p := s.Peer(msg.RegionId)
	if p != nil && to.Id > p.self.Id {
		// The region removed this store's peer and has since added
		// the store again, as a new peer: the old one is stale.
		p = s.destroyStale(p, to.Id)
	}
	if p == nil {
		var ok bool
		if p, ok = s.maybeCreatePeer(msg, m); !ok {
			return
		}
	}
	// A peer the region dropped while its store was down still talks
	// from its old configuration: tell it it was removed.
	if r := p.Meta(); p.isInitialized() && findPeer(r, from.Id) == nil &&
		msg.GetRegionEpoch().GetConfVer() < r.GetRegionEpoch().GetConfVer() {
		s.trans.sendTombstones(r, p.self, []*metapb.Peer{from})
		return
	}
	at, ok := p.lastActive.Load(from.Id)
	if !ok {
		at, _ = p.lastActive.LoadOrStore(from.Id, new(atomic.Int64))
	}
	at.(*atomic.Int64).Store(time.Now().UnixNano()) // no allocation per message
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed || p.self.Id != to.Id {
		return
	}
	if m.Type == raftpb.MsgSnap && !s.snapshotFits(p, m.Snapshot) {
		return
	}
	if s.voteRefused(&m) {
		return
	}
	if err := p.rn.Step(m); err != nil {
		return
	}
	if p.leaseReady.Load() && p.rn.BasicStatus().RaftState != raft.StateLeader {
		p.leaseReady.Store(false) // the Ready loop will tell the rest
		p.endLease()
	}
	s.wake()
}

func (s *Store) maybeCreatePeer(msg *raft_serverpb.RaftMessage, m raftpb.Message) (*Peer, bool) {
	switch m.Type {
	case raftpb.MsgApp, raftpb.MsgHeartbeat, raftpb.MsgSnap:
	default:
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.peers[msg.RegionId]; p != nil {
		return p, true
	}
	if id, ok := s.tombstones[msg.RegionId]; ok && id >= msg.ToPeer.Id {
		return nil, false
	}
	for _, q := range s.peers {
		r := q.Meta()
		if q.isInitialized() && overlaps(r.StartKey, r.EndKey, msg.StartKey, msg.EndKey) {
			return nil, false
		}
	}
	p, err := s.createUninitializedLocked(msg.RegionId, msg.ToPeer)
	if err != nil {
		s.log.Warn("cannot create peer", "region", msg.RegionId, "err", err)
		return nil, false
	}
	s.log.Info("created peer by message", "region", msg.RegionId, "peer", msg.ToPeer.Id)
	return p, true
}

// createUninitializedLocked creates peer self of region id, which holds
// no data until its first snapshot. Call with s.mu held.
func (s *Store) createUninitializedLocked(id uint64, self *metapb.Peer) (*Peer, error) {
	region := &metapb.Region{Id: id, RegionEpoch: &metapb.RegionEpoch{}, Peers: []*metapb.Peer{self}}
	// Recorded before the peer can vote, so that a restart reloads it with
	// the votes it cast (its hard state) instead of making it anew.
	state := raft_serverpb.RegionLocalState{State: raft_serverpb.PeerState_Applying, Region: region}
	if err := s.db.Set(regionStateKey(region.Id), mustMarshal(&state), pebble.Sync); err != nil {
		return nil, err
	}
	p, err := s.newPeer(region, self, false, raftpb.HardState{}, 0, 0, nil, 0)
	if err != nil {
		return nil, err
	}
	s.peers[id] = p
	return p, nil
}

// overlaps says whether [s1, e1) and [s2, e2) share a key; an empty end
// is +inf.
func overlaps(s1, e1, s2, e2 []byte) bool {
	return (len(e2) == 0 || bytes.Compare(s1, e2) < 0) && (len(e1) == 0 || bytes.Compare(s2, e1) < 0)
}

// notePeer remembers where a peer lives, for answering it.
func (s *Store) notePeer(p *metapb.Peer) {
	if _, ok := s.peerCache.Load(p.Id); !ok {
		s.peerCache.Store(p.Id, p)
	}
}

// knownPeer returns a peer learned from a message, or nil.
func (s *Store) knownPeer(id uint64) *metapb.Peer {
	if v, ok := s.peerCache.Load(id); ok {
		return v.(*metapb.Peer)
	}
	return nil
}

// destroyStale destroys p, which a message to a newer peer of its region
// on this store (peer ID newer) shows to be stale, and returns nil; or
// returns p if it has meanwhile been replaced or destroyed otherwise.
func (s *Store) destroyStale(p *Peer, newer uint64) *Peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		return nil
	}
	s.log.Info("destroying stale peer", "region", p.region.Id, "peer", p.self.Id, "newer_peer", newer)
	if err := p.destroy(); err != nil {
		s.log.Warn("cannot destroy stale peer", "region", p.region.Id, "err", err)
		return p
	}
	return nil
}

// LeaderSilence is how long this peer, which does not lead its region,
// has not heard from a leader (since the store started, if it never has);
// zero for a leader.
func (p *Peer) LeaderSilence() time.Duration {
	if p.IsLeader() {
		return 0
	}
	p.mu.Lock()
	lead := p.leaderID
	p.mu.Unlock()
	last := p.s.startedAtWall
	if v, ok := p.lastActive.Load(lead); ok && lead != 0 {
		if at := time.Unix(0, v.(*atomic.Int64).Load()); at.After(last) {
			last = at
		}
	}
	return time.Since(last)
}

// DestroyIfRemoved destroys p if current, the region as PD knows it, has
// a newer configuration without p: the region removed p while this store
// could not hear of it (a learner is never told), and nothing will ever
// talk to p again. It says whether it did.
func (p *Peer) DestroyIfRemoved(current *metapb.Region) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed || current.GetId() != p.region.Id ||
		current.GetRegionEpoch().GetConfVer() <= p.region.GetRegionEpoch().GetConfVer() {
		return false
	}
	for _, q := range current.Peers {
		if q.StoreId == p.self.StoreId && q.Id <= p.self.Id {
			return false // still a member (or PD has yet to learn better)
		}
	}
	p.s.log.Info("destroying peer its region removed", "region", p.region.Id, "peer", p.self.Id)
	if err := p.destroy(); err != nil {
		p.s.log.Warn("cannot destroy removed peer", "region", p.region.Id, "err", err)
		return false
	}
	return true
}

// destroyRemoved destroys the peer a tombstone message names, if the
// message's epoch shows a configuration at least as new as the peer's
// (it cannot be an old message about an earlier incarnation).
func (s *Store) destroyRemoved(msg *raft_serverpb.RaftMessage) {
	p := s.Peer(msg.RegionId)
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed || p.self.Id != msg.ToPeer.Id ||
		msg.GetRegionEpoch().GetConfVer() < p.region.GetRegionEpoch().GetConfVer() {
		return
	}
	if findPeer(p.region, p.self.Id) != nil && msg.GetRegionEpoch().GetConfVer() == p.region.GetRegionEpoch().GetConfVer() {
		return // this peer's own view still has it: not a removal it missed
	}
	if err := p.destroy(); err != nil {
		s.log.Warn("cannot destroy removed peer", "region", msg.RegionId, "err", err)
	}
}
