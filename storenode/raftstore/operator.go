package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// ChangePeers proposes a change of the region's peers, as PD's
// change_peer and change_peer_v2 operators ask; one change is a simple
// configuration change, several enter and (automatically) leave a joint
// configuration. It returns once the change is applied here, or fails if
// raft refused it (another change is still in flight) or it did not apply
// within confChangeTimeout.
//
// A new leader first applies its term's first entry: until then raft
// counts every entry of its log as a possible configuration change still
// pending, and drops a new one silently (an empty entry takes its place).
func (p *Peer) ChangePeers(changes []*raft_cmdpb.ChangePeerRequest) error {
	return p.changePeers(changes, true, nil)
}

// changePeers is ChangePeers; checkFirst off skips the check, made when
// the change applies, that no store gets a second peer of the region, and
// epoch, if not nil, is the region epoch the change is proposed on instead
// of the region's (tests).
func (p *Peer) changePeers(changes []*raft_cmdpb.ChangePeerRequest, checkFirst bool, epoch *metapb.RegionEpoch) error {
	timeout := time.NewTimer(confChangeTimeout)
	defer timeout.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), confChangeTimeout)
	defer cancel()
	p.mu.Lock()
	termStart := p.termStart
	p.mu.Unlock()
	if err := p.waitApplied(ctx, termStart); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("raftstore: the leader did not apply its term's first entry in time")
		}
		return err
	}
	ch, err := p.proposeConfChange(changes, checkFirst, epoch)
	for errors.Is(err, errNotAdvanced) {
		select {
		case <-time.After(time.Millisecond):
		case <-timeout.C:
			return errors.New("raftstore: the leader did not advance past its applied entries in time")
		}
		ch, err = p.proposeConfChange(changes, checkFirst, epoch)
	}
	if err != nil {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-timeout.C:
		return errors.New("raftstore: the peer change did not apply in time (raft may have dropped it)")
	}
}

// errNotAdvanced: raft does not count as applied yet what the peer applied
// (the Ready loop advances it after applying).
var errNotAdvanced = errors.New("raftstore: raft is not advanced to the applied index yet")

// confChangeTimeout bounds ChangePeers' wait. Raft drops a change proposed
// while another is unapplied; PD asks again.
const confChangeTimeout = 5 * time.Second

func (p *Peer) proposeConfChange(changes []*raft_cmdpb.ChangePeerRequest, checkFirst bool, epoch *metapb.RegionEpoch) (chan error, error) {
	if len(changes) > 1 {
		// Several changes at once enter a joint configuration, which the
		// region's metadata cannot record yet: a restart in the middle
		// would leave raft unable to leave it. PD then changes one peer at
		// a time.
		return nil, errors.New("raftstore: joint configuration changes are not supported yet")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leadsLocked() {
		return nil, p.notLeaderLocked()
	}
	if p.applied < p.termStart { // led again since ChangePeers waited
		return nil, errStale("raftstore: the leader has not applied its term's first entry")
	}
	// Raft counts an entry as applied only at the loop's Advance, after
	// handleCommitted applied it and answered its proposer. A change
	// proposed in between, right after the previous one returned, finds
	// raft's pendingConfIndex above raft's applied index, and raft drops
	// it silently (an empty entry takes its place): wait for Advance.
	if p.rn.BasicStatus().Applied < p.applied {
		return nil, errNotAdvanced
	}
	// Checked again when it applies, against the region as it is then.
	if err := checkOnePeerPerStore(p.region, changes); err != nil && checkFirst {
		return nil, err
	}
	if epoch == nil {
		epoch = p.region.RegionEpoch // checked again when it applies (checkConfVer)
	}
	id := p.nextID
	p.nextID++
	cmd := &raft_cmdpb.RaftCmdRequest{Header: &raft_cmdpb.RaftRequestHeader{RegionId: p.region.Id, Peer: p.self,
		RegionEpoch: epoch, Uuid: binary.BigEndian.AppendUint64(nil, id)},
		AdminRequest: &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_ChangePeerV2,
			ChangePeerV2: &raft_cmdpb.ChangePeerV2Request{Changes: changes}}}
	cc := raftpb.ConfChangeV2{Context: mustMarshal(cmd)}
	for _, ch := range changes {
		if ch.GetPeer() == nil {
			return nil, errors.New("raftstore: a peer change names no peer")
		}
		var t raftpb.ConfChangeType
		switch ch.ChangeType {
		case eraftpb.ConfChangeType_AddNode:
			t = raftpb.ConfChangeAddNode
		case eraftpb.ConfChangeType_AddLearnerNode:
			t = raftpb.ConfChangeAddLearnerNode
		case eraftpb.ConfChangeType_RemoveNode:
			t = raftpb.ConfChangeRemoveNode
			if ch.Peer.Id == p.self.Id {
				// The leader does not remove itself: PD transfers the
				// leader away first.
				return nil, errors.New("raftstore: the leader cannot remove itself")
			}
		default:
			return nil, errors.New("raftstore: unknown peer change type")
		}
		cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: t, NodeID: ch.Peer.Id})
	}
	if err := p.rn.ProposeConfChange(cc); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	p.props[id] = proposal{done: done, at: monoNow()}
	p.s.wake()
	return done, nil
}

// TransferLeader asks raft to hand the region's leadership to peer to.
// A transfer to this peer itself, or to a peer raft cannot hand over to
// (a learner, one not in its configuration), changes nothing: raft
// ignores it, and the peer goes on serving.
func (p *Peer) TransferLeader(to *metapb.Peer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isLeader.Load() && !p.destroyed && to.GetId() != p.self.Id {
		// The in-memory locks go into the log first: raft hands over
		// only to a peer that has the whole log, and drops proposals
		// once the transfer has begun.
		p.flushLocksLocked()
		p.rn.TransferLeader(to.GetId())
		if p.rn.BasicStatus().LeadTransferee != 0 {
			// The transferee campaigns without waiting out this
			// leader's lease: stop serving reads from it now, and
			// commands until the transfer ends (checkTransferLocked).
			// Its messages leave only with the next Ready, which
			// needs mu.
			p.transferring = true
			p.endLease()
		}
		p.checkTransferLocked() // raft may have given up one in progress
		p.updateReadyLocked()
	}
	p.s.wake()
}

// peerDownDuration: a peer not heard from for this long is reported down
// to PD (TiKV's max-peer-down-duration).
const peerDownDuration = 10 * time.Minute

// RegionStats is what a region heartbeat reports of a region this store
// leads.
type RegionStats struct {
	Region  *metapb.Region
	Leader  *metapb.Peer
	Term    uint64
	Pending []*metapb.Peer
	Down    []*pdpb.PeerStats
	// ApproximateSize is the region's data size in bytes, as Pebble
	// estimates it from its files.
	ApproximateSize uint64
	// Flow since the last call.
	Flow
}

// Flow is what was written and read, for PD's heartbeats: bytes (all
// column families) and keys (committed versions) written, bytes (keys and
// values) and keys read by the service.
type Flow struct {
	BytesWritten, KeysWritten uint64
	BytesRead, KeysRead       uint64
}

// flow counts a Flow; readers take the counts and reset them.
type flow struct {
	bytesWritten, keysWritten atomic.Uint64
	bytesRead, keysRead       atomic.Uint64
}

// take returns the counts and resets them.
func (f *flow) take() Flow {
	return Flow{BytesWritten: f.bytesWritten.Swap(0), KeysWritten: f.keysWritten.Swap(0),
		BytesRead: f.bytesRead.Swap(0), KeysRead: f.keysRead.Swap(0)}
}

// Flow returns what the store's regions wrote and read since the last
// call.
func (s *Store) Flow() Flow { return s.flow.take() }

// RecordRead counts a read the service answered from the region: bytes of
// keys and values, and keys.
func (p *Peer) RecordRead(bytes, keys uint64) {
	p.flow.bytesRead.Add(bytes)
	p.flow.keysRead.Add(keys)
	p.s.flow.bytesRead.Add(bytes)
	p.s.flow.keysRead.Add(keys)
}

// Stats returns the region's heartbeat, if this peer leads it.
func (p *Peer) Stats() (RegionStats, bool) {
	p.mu.Lock()
	if !p.isLeader.Load() || p.destroyed {
		p.mu.Unlock()
		return RegionStats{}, false
	}
	st := RegionStats{Region: p.region, Leader: p.self, Term: p.rn.BasicStatus().Term}
	now := time.Now()
	p.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if id == p.self.Id {
			return
		}
		peer := findPeer(p.region, id)
		if peer == nil {
			return
		}
		if pr.State == tracker.StateSnapshot || pr.Match == 0 {
			st.Pending = append(st.Pending, peer)
		}
		if v, ok := p.lastActive.Load(id); ok {
			if d := now.Sub(time.Unix(0, v.(*atomic.Int64).Load())); d > peerDownDuration {
				st.Down = append(st.Down, &pdpb.PeerStats{Peer: peer, DownSeconds: uint64(d.Seconds())})
			}
		}
	})
	region := p.region
	p.mu.Unlock()
	st.Flow = p.flow.take()
	for _, cf := range dataCFs {
		lo, hi := dataBounds(cf, region.StartKey, region.EndKey)
		if n, err := p.s.db.EstimateDiskUsage(lo, hi); err == nil {
			st.ApproximateSize += n
		}
	}
	return st, true
}
