package raftstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
	"go.etcd.io/raft/v3/raftpb"
)

// SplitIDs asks PD for the IDs of count new regions split off region
// (PD's AskBatchSplit).
type SplitIDs func(ctx context.Context, region *metapb.Region, count int) ([]*pdpb.SplitID, error)

// Split splits the region p leads at keys (encoded as region boundaries
// are: codec.EncodeBytes of the user key), asking PD for the new regions'
// IDs through ask. It returns the regions that result, in key order, once
// the split is applied here. Keys outside the region, or equal to its
// start, are skipped.
func (p *Peer) Split(ctx context.Context, splitKeys [][]byte, ask SplitIDs) ([]*metapb.Region, error) {
	region := p.Meta()
	var keys [][]byte
	for _, k := range splitKeys {
		if bytes.Compare(k, region.StartKey) <= 0 || (len(region.EndKey) > 0 && bytes.Compare(k, region.EndKey) >= 0) {
			continue
		}
		if n := len(keys); n > 0 && bytes.Compare(keys[n-1], k) >= 0 {
			if bytes.Equal(keys[n-1], k) {
				continue
			}
			return nil, fmt.Errorf("raftstore: split keys are not in order")
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return []*metapb.Region{region}, nil
	}
	ids, err := ask(ctx, region, len(keys))
	if err != nil {
		return nil, err
	}
	if len(ids) != len(keys) {
		return nil, fmt.Errorf("raftstore: PD gave %d split IDs for %d keys", len(ids), len(keys))
	}
	req := &raft_cmdpb.BatchSplitRequest{RightDerive: true}
	for i, k := range keys {
		req.Requests = append(req.Requests, &raft_cmdpb.SplitRequest{SplitKey: k,
			NewRegionId: ids[i].NewRegionId, NewPeerIds: ids[i].NewPeerIds})
	}
	cmd := &raft_cmdpb.RaftCmdRequest{Header: &raft_cmdpb.RaftRequestHeader{RegionEpoch: region.RegionEpoch},
		AdminRequest: &raft_cmdpb.AdminRequest{CmdType: raft_cmdpb.AdminCmdType_BatchSplit, Splits: req}}
	// No locks go to memory until the split is done, and those there go
	// into the log ahead of it: the new regions apply them.
	p.mu.Lock()
	p.splitting++
	p.flushLocksLocked()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.splitting--
		p.mu.Unlock()
	}()
	if err := p.propose(cmd, nil); err != nil {
		return nil, err
	}
	out := make([]*metapb.Region, 0, len(keys)+1)
	for _, sid := range ids {
		if q := p.s.Peer(sid.NewRegionId); q != nil {
			out = append(out, q.Meta())
		}
	}
	return append(out, p.Meta()), nil
}

// applySplit applies a BatchSplit: with right_derive (TiKV's default) the
// region keeps the rightmost range and each new region takes a range to
// its left. Every region's version rises by the number of new regions.
func (p *Peer) applySplit(wb *pebble.Batch, cmd *raft_cmdpb.RaftCmdRequest) (outcome, fatal error) {
	req := cmd.AdminRequest.Splits
	if cmd.Header.GetRegionEpoch().GetVersion() != p.region.RegionEpoch.Version {
		return &RegionError{Err: &errorpb.Error{Message: "split on a stale epoch",
			EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: []*metapb.Region{p.region}}}}, nil
	}
	parent := cloneRegion(p.region)
	parent.RegionEpoch.Version += uint64(len(req.Requests))
	start := p.region.StartKey
	var created []*metapb.Region
	for _, sr := range req.Requests {
		if len(sr.NewPeerIds) != len(p.region.Peers) {
			return fmt.Errorf("split names %d peers for %d", len(sr.NewPeerIds), len(p.region.Peers)), nil
		}
		nr := &metapb.Region{Id: sr.NewRegionId, StartKey: start, EndKey: sr.SplitKey,
			RegionEpoch: &metapb.RegionEpoch{ConfVer: parent.RegionEpoch.ConfVer, Version: parent.RegionEpoch.Version}}
		for i, pr := range p.region.Peers {
			nr.Peers = append(nr.Peers, &metapb.Peer{Id: sr.NewPeerIds[i], StoreId: pr.StoreId, Role: pr.Role})
		}
		created = append(created, nr)
		start = sr.SplitKey
	}
	parent.StartKey = start
	var result []splitRegion
	for _, nr := range created {
		if p.s.hasInitializedPeer(nr.Id) {
			continue
		}
		hs, create := p.s.splitPeerState(nr)
		if !create {
			// Its range's data stays behind from the parent, in no
			// region here: cleared, as TiKV's clear_extra_split_data
			// does (a snapshot clears it too, but the newer peer may be
			// destroyed before it gets one).
			for _, cf := range dataCFs {
				lo, hi := dataBounds(cf, nr.StartKey, nr.EndKey)
				if err := wb.DeleteRange(lo, hi, nil); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := writeInitialState(wb, nr, hs); err != nil {
			return nil, err
		}
		result = append(result, splitRegion{region: nr, hs: hs})
	}
	if err := writeRegionState(wb, parent); err != nil {
		return nil, err
	}
	p.region = parent
	p.splitResult = append(p.splitResult, result...) // one batch may apply several splits
	p.s.log.Info("split region", "region", parent.Id, "new_regions", len(created), "version", parent.RegionEpoch.Version)
	return nil, nil
}

func (s *Store) hasInitializedPeer(id uint64) bool {
	q := s.Peer(id)
	return q != nil && q.isInitialized()
}

// splitRegion is a region a split created, and the hard state its peer
// here starts with.
type splitRegion struct {
	region *metapb.Region
	hs     raftpb.HardState
}

// splitPeerState says whether the split creates its peer of region r
// here, and with which hard state. It does not if this store holds a
// newer peer of r (a message to it created it, uninitialized: r replaced
// the split's peer here since) or has destroyed the split's peer or a
// newer one (a tombstone), as TiKV skips a split region whose peer is not
// the one it expects or whose state exists already.
//
// The hard state: the log begins at initLogIndex in initLogTerm; but if a
// message from r's leader already created the same peer here,
// uninitialized, and it reached a later term or voted, that term and vote
// are kept. The peer may have voted in that term (an uninitialized peer
// grants votes: any log is as up to date as its empty one), and a fresh
// hard state would let it vote again in the same term, for another
// candidate. TiKV keeps the raft state such a peer persisted
// (init_raft_state reads it before it writes an initial one). Only what
// the uninitialized peer persisted counts: a vote it has not persisted
// was not sent (loop.go holds vote responses until the Ready is durable),
// and this peer's next Ready would not write it anyway. Called with the
// parent's mu held.
func (s *Store) splitPeerState(r *metapb.Region) (hs raftpb.HardState, create bool) {
	hs = initHardState
	self := findStorePeer(r, s.cfg.StoreID)
	if self == nil {
		return hs, true
	}
	s.mu.RLock()
	q := s.peers[r.Id]
	gone, removed := s.tombstones[r.Id]
	s.mu.RUnlock()
	if removed && gone >= self.Id {
		s.log.Info("split region's peer here was removed already", "region", r.Id, "peer", self.Id, "tombstone", gone)
		return hs, false
	}
	if q == nil {
		return hs, true
	}
	q.mu.Lock()
	had, _, _ := q.storage.InitialState()
	live, id := !q.destroyed && !q.initialized, q.self.Id
	q.mu.Unlock()
	switch {
	case live && id > self.Id:
		s.log.Info("split region has a newer peer here", "region", r.Id, "peer", self.Id, "newer_peer", id)
		return hs, false
	case live && id == self.Id && had.Term >= hs.Term:
		hs.Term, hs.Vote = had.Term, had.Vote
	}
	return hs, true
}

// splitCampaignWindow is how long a region's new peer on its parent
// leader's store keeps campaigning while the region has no leader.
const splitCampaignWindow = 2 * time.Second

// createSplitPeers starts the peers of the regions a split created here
// (those splitPeerState let it). A peer of the same ID that a new
// region's leader already created by message, before this store applied
// the split, is replaced, its term and vote kept (splitPeerState). If
// parent leads, the new peers campaign at once, as TiKV's do, so that the
// new regions have leaders without waiting for an election timeout.
// Called with parent.mu held.
func (s *Store) createSplitPeers(parent *Peer, regions []splitRegion) error {
	leader := parent.isLeader.Load()
	for _, sr := range regions {
		r := sr.region
		if s.hasInitializedPeer(r.Id) {
			continue
		}
		self := findStorePeer(r, s.cfg.StoreID)
		p, err := s.newPeer(r, self, true, sr.hs, initLogIndex, initLogTerm, nil, initLogIndex)
		if err != nil {
			return err
		}
		if leader {
			// The other stores may not have applied the split yet, and
			// drop the votes; campaign again until they have.
			_ = p.rn.Campaign()
			p.campaignUntil = time.Now().Add(splitCampaignWindow)
		}
		s.mu.Lock()
		old := s.peers[r.Id]
		s.peers[r.Id] = p
		s.mu.Unlock()
		if old != nil {
			old.mu.Lock()
			old.destroyed = true
			old.failPending(errStale("replaced by the split that created its region"))
			old.mu.Unlock()
		}
	}
	s.wake()
	return nil
}

// MiddleKey returns the encoded user key in the middle of the region's
// data, counted in the write column family, for a split by size (PD's
// APPROXIMATE and SCAN policies); nil if the region has fewer than two
// keys.
func (p *Peer) MiddleKey() []byte {
	r := p.Meta()
	lo, hi := dataBounds(byte(mvcc.CFWrite), r.StartKey, r.EndKey)
	count := func(stopAt int) (int, []byte) {
		it, err := p.s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return 0, nil
		}
		defer it.Close()
		n := 0
		var prev []byte
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()[1:]
			if len(k) < 8 {
				continue
			}
			user := k[:len(k)-8]
			if prev != nil && bytes.Equal(prev, user) {
				continue
			}
			prev = append(prev[:0], user...)
			if n == stopAt {
				return n, prev
			}
			n++
		}
		return n, nil
	}
	total, _ := count(-1)
	if total < 2 {
		return nil
	}
	_, mid := count(total / 2)
	return mid
}

// SplitKeys returns where to split the region so that each part holds
// about splitSize bytes, if it holds more than maxSize; nil otherwise. It
// measures the write column family (where short values are inline), and
// is skipped, returning nil at once, until about splitSize/16 bytes were
// written to the region since it last measured (TiKV's
// region-split-check-diff).
func (p *Peer) SplitKeys(splitSize, maxSize uint64) [][]byte {
	if p.written.Load() < splitSize/16 {
		return nil
	}
	p.written.Store(0)
	r := p.Meta()
	lo, hi := dataBounds(byte(mvcc.CFWrite), r.StartKey, r.EndKey)
	it, err := p.s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil
	}
	defer it.Close()
	var total, part uint64
	var keys [][]byte
	var prev []byte
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[1:]
		if len(k) < 8 {
			continue
		}
		user := k[:len(k)-8]
		if !bytes.Equal(prev, user) {
			if part >= splitSize {
				keys = append(keys, bytes.Clone(user))
				part = 0
			}
			prev = append(prev[:0], user...)
		}
		n := uint64(len(it.Key()) + len(it.Value()))
		total += n
		part += n
	}
	if total <= maxSize {
		return nil
	}
	return keys
}
