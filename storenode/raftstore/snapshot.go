package raftstore

import (
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// generateSnapshot is peerStorage.Snapshot: the region's data at the
// applied index. Called by raft with mu held.
func (p *Peer) generateSnapshot() (raftpb.Snapshot, error) {
	if p.applying {
		return raftpb.Snapshot{}, raft.ErrSnapshotTemporarilyUnavailable
	}
	term, err := p.storage.Term(p.applied)
	if err != nil {
		return raftpb.Snapshot{}, err
	}
	data := raft_serverpb.RaftSnapshotData{Region: p.region}
	for _, cf := range dataCFs {
		lo, hi := dataBounds(cf, p.region.StartKey, p.region.EndKey)
		it, err := p.s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return raftpb.Snapshot{}, err
		}
		for it.First(); it.Valid(); it.Next() {
			data.Data = append(data.Data, &raft_serverpb.KeyValue{Key: slices.Clone(it.Key()), Value: slices.Clone(it.Value())})
			data.FileSize += uint64(len(it.Key()) + len(it.Value()))
		}
		if err := it.Close(); err != nil {
			return raftpb.Snapshot{}, err
		}
	}
	p.s.log.Info("generated snapshot", "region", p.region.Id, "index", p.applied, "keys", len(data.Data))
	return raftpb.Snapshot{Data: mustMarshal(&data), Metadata: raftpb.SnapshotMetadata{
		Index: p.applied, Term: term, ConfState: confStateOf(p.region)}}, nil
}

// persistSnapshot replaces the region's data and log with a snapshot's.
func (p *Peer) persistSnapshot(wb *pebble.Batch, snap raftpb.Snapshot) error {
	var data raft_serverpb.RaftSnapshotData
	if err := data.Unmarshal(snap.Data); err != nil {
		return err
	}
	region := data.Region
	for _, cf := range dataCFs {
		lo, hi := dataBounds(cf, region.StartKey, region.EndKey)
		if err := wb.DeleteRange(lo, hi, nil); err != nil {
			return err
		}
	}
	for _, kv := range data.Data {
		if err := wb.Set(kv.Key, kv.Value, nil); err != nil {
			return err
		}
	}
	id := region.Id
	if err := wb.DeleteRange(logKey(id, 0), logKey(id, snap.Metadata.Index+1), nil); err != nil {
		return err
	}
	state := raft_serverpb.RegionLocalState{State: raft_serverpb.PeerState_Normal, Region: region}
	apply := raft_serverpb.RaftApplyState{AppliedIndex: snap.Metadata.Index,
		TruncatedState: &raft_serverpb.RaftTruncatedState{Index: snap.Metadata.Index, Term: snap.Metadata.Term}}
	if err := wb.Set(regionStateKey(id), mustMarshal(&state), nil); err != nil {
		return err
	}
	return wb.Set(applyStateKey(id), mustMarshal(&apply), nil)
}

// afterSnapshot makes a persisted snapshot the peer's state in memory.
// Call with mu held.
func (p *Peer) afterSnapshot(snap raftpb.Snapshot) error {
	var data raft_serverpb.RaftSnapshotData
	if err := data.Unmarshal(snap.Data); err != nil {
		return err
	}
	if err := p.storage.ApplySnapshot(snap); err != nil {
		return err
	}
	p.region = data.Region
	p.initialized = true
	p.applied = snap.Metadata.Index
	p.lastIndex = snap.Metadata.Index
	p.publish()
	p.advanceApplied()
	p.s.SnapshotsApplied.Add(1)
	p.s.log.Info("applied snapshot", "region", p.region.Id, "index", snap.Metadata.Index, "keys", len(data.Data))
	return nil
}

// snapshotFits says whether a snapshot's region may be installed on p:
// its range must not overlap another initialized region here.
func (s *Store) snapshotFits(p *Peer, snap *raftpb.Snapshot) bool {
	var data raft_serverpb.RaftSnapshotData
	if snap == nil || data.Unmarshal(snap.Data) != nil || data.Region == nil {
		return false
	}
	for _, q := range s.Peers() {
		if q == p {
			continue
		}
		r := q.Meta()
		if q.isInitialized() && overlaps(r.StartKey, r.EndKey, data.Region.StartKey, data.Region.EndKey) {
			return false
		}
	}
	return true
}
