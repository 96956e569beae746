package raftstore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Raft's first log position in a region created by bootstrap or split, as
// TiKV's RAFT_INIT_LOG_INDEX and _TERM: every peer of such a region starts
// from the same applied state at index 5, so a peer added later can only
// be given the region by snapshot.
const (
	initLogIndex = 5
	initLogTerm  = 5
)

// peerStorage is raft.Storage for one peer: the entries not yet compacted
// are kept in memory (raft.MemoryStorage), and persisted in Pebble by the
// store's Ready loop, which reloads them on restart. It answers two
// questions MemoryStorage cannot: the configuration as of the applied
// index (InitialState), and a snapshot of the region's data (Snapshot).
type peerStorage struct {
	*raft.MemoryStorage
	p *Peer
}

// InitialState returns the persisted hard state and the configuration of
// the region as applied: raft is restarted with Applied set, so it does
// not replay the configuration changes below it.
func (s *peerStorage) InitialState() (raftpb.HardState, raftpb.ConfState, error) {
	hs, _, err := s.MemoryStorage.InitialState()
	if !s.p.initialized {
		// A peer waiting for its first snapshot knows no configuration.
		return hs, raftpb.ConfState{}, err
	}
	return hs, confStateOf(s.p.region), err
}

// Snapshot returns a snapshot of the region at its applied index: its
// metadata, with the data pinned for the transport to stream (see
// snapshot.go). Raft calls it, under the peer's lock, when a follower
// needs entries this peer has compacted away; the apply step commits under
// the same lock, so the data pinned here is exactly the applied state.
func (s *peerStorage) Snapshot() (raftpb.Snapshot, error) {
	return s.p.generateSnapshot()
}

// confStateOf is the Raft configuration that region's peers make.
func confStateOf(r *metapb.Region) raftpb.ConfState {
	var cs raftpb.ConfState
	for _, p := range r.GetPeers() {
		if p.Role == metapb.PeerRole_Learner {
			cs.Learners = append(cs.Learners, p.Id)
		} else {
			cs.Voters = append(cs.Voters, p.Id)
		}
	}
	return cs
}

// persistedPeer is what a store reloads of one region at restart.
type persistedPeer struct {
	state raft_serverpb.RegionLocalState
	apply raft_serverpb.RaftApplyState
	hard  raftpb.HardState
	ents  []raftpb.Entry
}

func getProto(db *pebble.DB, key []byte, m interface{ Unmarshal([]byte) error }) (bool, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	if err := m.Unmarshal(v); err != nil {
		return false, fmt.Errorf("raftstore: bad record %q: %w", key, err)
	}
	return true, nil
}

// loadPeers reads every region this store holds a live peer of.
func loadPeers(db *pebble.DB) ([]*persistedPeer, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{raftPrefix}, UpperBound: []byte{raftPrefix + 1}})
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) == 10 && k[9] == regionSuffix {
			ids = append(ids, beUint64(k[1:9]))
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	var out []*persistedPeer
	for _, id := range ids {
		pp := &persistedPeer{}
		if _, err := getProto(db, regionStateKey(id), &pp.state); err != nil {
			return nil, err
		}
		if pp.state.State == raft_serverpb.PeerState_Tombstone {
			continue
		}
		if _, err := getProto(db, applyStateKey(id), &pp.apply); err != nil {
			return nil, err
		}
		if _, err := getProto(db, hardStateKey(id), &pp.hard); err != nil {
			return nil, err
		}
		raiseToSnapshot(&pp.hard, &pp.apply)
		first := pp.apply.GetTruncatedState().GetIndex() + 1
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: logKey(id, first), UpperBound: append(regionPrefix(id), logSuffix+1)})
		if err != nil {
			return nil, err
		}
		for it.First(); it.Valid(); it.Next() {
			var e raftpb.Entry
			if err := e.Unmarshal(it.Value()); err != nil {
				it.Close()
				return nil, fmt.Errorf("raftstore: region %d: bad log entry: %w", id, err)
			}
			if want := first + uint64(len(pp.ents)); e.Index != want {
				it.Close()
				return nil, fmt.Errorf("raftstore: region %d: log has a gap at %d", id, want)
			}
			pp.ents = append(pp.ents, e)
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
		out = append(out, pp)
	}
	return out, nil
}

// raiseToSnapshot brings a hard state up to the snapshot a crash left it
// behind: a snapshot is installed by an ingestion (snapshot.go), durable at
// once, and the hard state of its Ready follows in the Ready loop's batch.
// Raft refuses a commit index below its log's first index, or below the
// applied index; what is applied is committed, so the hard state commits
// it. A term below the snapshot's moves up to it, with no vote: a vote in
// that term would have been written with that term.
func raiseToSnapshot(hs *raftpb.HardState, apply *raft_serverpb.RaftApplyState) {
	if hs.Commit < apply.AppliedIndex {
		hs.Commit = apply.AppliedIndex
	}
	if t := apply.GetTruncatedState().GetTerm(); hs.Term < t {
		hs.Term, hs.Vote = t, 0
	}
}

func beUint64(b []byte) uint64 {
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

func mustMarshal(m interface{ Marshal() ([]byte, error) }) []byte {
	b, err := m.Marshal()
	if err != nil {
		panic(err) // generated protobuf marshalling cannot fail
	}
	return b
}

// writeInitialState writes, into b, the state of a peer of a region that
// starts at the initial log position: bootstrap and split.
func writeInitialState(b *pebble.Batch, region *metapb.Region, hard raftpb.HardState) error {
	id := region.Id
	state := raft_serverpb.RegionLocalState{State: raft_serverpb.PeerState_Normal, Region: region}
	apply := raft_serverpb.RaftApplyState{AppliedIndex: initLogIndex,
		TruncatedState: &raft_serverpb.RaftTruncatedState{Index: initLogIndex, Term: initLogTerm}}
	if err := b.Set(regionStateKey(id), mustMarshal(&state), nil); err != nil {
		return err
	}
	if err := b.Set(applyStateKey(id), mustMarshal(&apply), nil); err != nil {
		return err
	}
	return b.Set(hardStateKey(id), mustMarshal(&hard), nil)
}

// initHardState is the hard state of a region's log as it begins: empty,
// at initLogIndex in initLogTerm, as TiKV's does.
var initHardState = raftpb.HardState{Term: initLogTerm, Commit: initLogIndex}

func writeRegionState(b *pebble.Batch, region *metapb.Region) error {
	state := raft_serverpb.RegionLocalState{State: raft_serverpb.PeerState_Normal, Region: region}
	return b.Set(regionStateKey(region.Id), mustMarshal(&state), nil)
}
