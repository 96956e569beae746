package raftstore

import (
	"bytes"
	"context"
	"fmt"
	"github.com/basalt-db/basalt/store/mvcc"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// result is a proposal's outcome, delivered once the apply batch is
// durable in memory.
type result struct {
	id  uint64
	err error
}

// handleCommitted applies a Ready's committed entries: one Pebble batch
// (with the new applied index) per peer, committed under the peer's lock so
// that a snapshot generated under it sees exactly the applied state.
func (p *Peer) handleCommitted(rd *raft.Ready) error {
	if len(rd.CommittedEntries) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		return nil
	}
	wb := p.s.db.NewBatch()
	defer wb.Close()
	defer func() {
		if p.lockWrite { // a lock put is in wb: committed now, or failed
			p.lockWrite = false
			p.s.lockCF.end()
		}
	}()
	p.deleted = nil
	// Until the batch is committed, p.applied runs ahead of Pebble: raft
	// (on a configuration change) may ask for a snapshot meanwhile.
	p.applying = true
	defer func() { p.applying = false }()
	var results []result
	var removed, changed bool
	var written []*raft_cmdpb.RaftCmdRequest // applied writes: their keys leave the in-memory locks once committed
	for i := range rd.CommittedEntries {
		e := &rd.CommittedEntries[i]
		if e.Index <= p.applied {
			continue
		}
		p.applied = e.Index
		p.appliedLogBytes += uint64(len(e.Data))
		switch e.Type {
		case raftpb.EntryNormal:
			if len(e.Data) == 0 {
				continue // a new leader's empty entry
			}
			var cmd raft_cmdpb.RaftCmdRequest
			if err := cmd.Unmarshal(e.Data); err != nil {
				return fmt.Errorf("raftstore: region %d: bad entry %d: %w", p.region.Id, e.Index, err)
			}
			r := result{id: propID(cmd.Header)}
			switch {
			case cmd.AdminRequest != nil:
				var err error
				r.err, err = p.applyAdmin(wb, &cmd)
				if err != nil {
					return err
				}
				changed = true
			default:
				r.err = p.applyWrite(wb, &cmd)
				if r.err == nil {
					written = append(written, &cmd)
				} else {
					p.locks.settle(&cmd, settleFailed)
				}
			}
			results = append(results, r)
		case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
			var cc raftpb.ConfChangeV2
			if e.Type == raftpb.EntryConfChange {
				var v1 raftpb.ConfChange
				if err := v1.Unmarshal(e.Data); err != nil {
					return err
				}
				cc = v1.AsV2()
			} else if err := cc.Unmarshal(e.Data); err != nil {
				return err
			}
			r, self, err := p.applyConfChange(wb, cc)
			if err != nil {
				return err
			}
			results = append(results, r)
			removed = removed || self
			changed = true
		}
	}
	if err := p.maybeCompactLog(wb); err != nil {
		return err
	}
	apply := raft_serverpb.RaftApplyState{AppliedIndex: p.applied}
	first, _ := p.storage.FirstIndex()
	apply.TruncatedState = &raft_serverpb.RaftTruncatedState{Index: first - 1}
	apply.TruncatedState.Term, _ = p.storage.Term(first - 1)
	if err := wb.Set(applyStateKey(p.region.Id), mustMarshal(&apply), nil); err != nil {
		return err
	}
	if err := wb.Commit(pebble.NoSync); err != nil {
		return err
	}
	for _, cmd := range written {
		p.locks.settle(cmd, settleApplied) // the applied data has what replaces them
	}
	p.s.reclaim.Queue(p.deleted...)
	p.deleted = nil
	if changed {
		p.publish()
	}
	if removed := p.removedPeers; removed != nil {
		p.removedPeers = nil
		p.s.trans.sendTombstones(p.region, p.self, removed)
	}
	if split := p.splitResult; split != nil {
		p.splitResult = nil
		if err := p.s.createSplitPeers(p, split); err != nil {
			return err
		}
	}
	for _, r := range results {
		if pr, ok := p.props[r.id]; ok {
			p.renewLease(pr.at)
			pr.done <- r.err
			delete(p.props, r.id)
		}
	}
	p.checkTransferLocked() // a removed transferee ends the transfer
	p.updateReadyLocked()
	p.advanceApplied()
	if removed {
		return p.destroy()
	}
	return nil
}

func propID(h *raft_cmdpb.RaftRequestHeader) uint64 {
	if len(h.GetUuid()) != 8 {
		return 0
	}
	return beUint64(h.Uuid)
}

// applyWrite applies a transaction command's write batch, unless the
// region's key range changed since the leader decided it.
func (p *Peer) applyWrite(wb *pebble.Batch, cmd *raft_cmdpb.RaftCmdRequest) error {
	if cmd.Header.GetRegionEpoch().GetVersion() != p.region.GetRegionEpoch().GetVersion() {
		return p.epochChanged()
	}
	for _, req := range cmd.Requests {
		var err error
		switch req.CmdType {
		case raft_cmdpb.CmdType_Put:
			if req.Put.Cf == "lock" && !p.lockWrite {
				p.lockWrite = true // ended once the batch is committed (handleCommitted)
				p.s.lockCF.begin()
			}
			err = wb.Set(append([]byte{cfByte(req.Put.Cf)}, req.Put.Key...), req.Put.Value, nil)
			n := uint64(len(req.Put.Key) + len(req.Put.Value))
			p.written.Add(n)
			p.flow.bytesWritten.Add(n)
			p.s.flow.bytesWritten.Add(n)
			if req.Put.Cf == "write" { // a committed version: one key written
				p.flow.keysWritten.Add(1)
				p.s.flow.keysWritten.Add(1)
			}
		case raft_cmdpb.CmdType_Delete:
			if req.Delete.Cf == "lock" && !p.lockWrite && p.s.lockCF.empty() {
				// No lock is in Pebble, nor on its way there (lockcf.go:
				// a lock put, in this batch or another, ends empty first):
				// the delete would remove nothing. A 1PC commit deletes the
				// pessimistic locks it replaces, which the leader kept in
				// memory (memlocks.go): three tombstones per oltp_write_only
				// transaction in every replica's memtable, for keys Pebble
				// never held.
				p.s.lockDeletesSkipped.Add(1)
				continue
			}
			p.s.lockDeletes.Add(1)
			err = wb.Delete(append([]byte{cfByte(req.Delete.Cf)}, req.Delete.Key...), nil)
		case raft_cmdpb.CmdType_DeleteRange:
			dr := req.DeleteRange
			lo, hi := dataBounds(cfByte(dr.Cf), dr.StartKey, dr.EndKey)
			if err = wb.DeleteRange(lo, hi, nil); err == nil {
				cf, start, end := mvcc.CF(cfByte(dr.Cf)), dr.StartKey, dr.EndKey
				if len(end) == 0 {
					end = nil // to the end of the keys
				}
				p.deleted = append(p.deleted, func(ctx context.Context) error { return p.s.eng.CompactRange(ctx, cf, start, end) })
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// epochChanged is the error of a write decided on an earlier version of
// the region (before a split) than the one applied now. Call with mu
// held.
func (p *Peer) epochChanged() *RegionError {
	return &RegionError{Err: &errorpb.Error{Message: "epoch changed while the command was in flight",
		EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: []*metapb.Region{p.region}}}}
}

// applyAdmin applies an admin command. It returns the command's outcome
// for its proposer, and an error only if the store cannot go on.
func (p *Peer) applyAdmin(wb *pebble.Batch, cmd *raft_cmdpb.RaftCmdRequest) (outcome, fatal error) {
	switch {
	case cmd.AdminRequest.Splits != nil:
		return p.applySplit(wb, cmd)
	}
	return fmt.Errorf("raftstore: unsupported admin command %s", cmd.AdminRequest.CmdType), nil
}

// applyConfChange applies a change of the region's peers, carried in the
// entry's context as a RaftCmdRequest with a ChangePeerV2Request. It
// reports whether this peer was removed.
func (p *Peer) applyConfChange(wb *pebble.Batch, cc raftpb.ConfChangeV2) (r result, removedSelf bool, err error) {
	region := cloneRegion(p.region)
	if len(cc.Context) > 0 {
		var cmd raft_cmdpb.RaftCmdRequest
		if err := cmd.Unmarshal(cc.Context); err != nil {
			return r, false, err
		}
		r.id = propID(cmd.Header)
		// Refused on every replica alike (they apply it to the same
		// region): raft's configuration stays as it is too.
		if err := p.checkConfVer(cmd.Header); err != nil {
			r.err = err
			return r, false, nil
		}
		if err := checkOnePeerPerStore(region, cmd.AdminRequest.GetChangePeerV2().GetChanges()); err != nil {
			r.err = err
			return r, false, nil
		}
		for _, ch := range cmd.AdminRequest.GetChangePeerV2().GetChanges() {
			peer := ch.Peer
			i := slices.IndexFunc(region.Peers, func(x *metapb.Peer) bool { return x.Id == peer.Id })
			switch ch.ChangeType {
			case eraftpb.ConfChangeType_AddNode:
				if i >= 0 {
					region.Peers[i].Role = metapb.PeerRole_Voter
				} else {
					region.Peers = append(region.Peers, &metapb.Peer{Id: peer.Id, StoreId: peer.StoreId})
				}
			case eraftpb.ConfChangeType_AddLearnerNode:
				if i >= 0 {
					region.Peers[i].Role = metapb.PeerRole_Learner
				} else {
					region.Peers = append(region.Peers, &metapb.Peer{Id: peer.Id, StoreId: peer.StoreId, Role: metapb.PeerRole_Learner})
				}
			case eraftpb.ConfChangeType_RemoveNode:
				if i >= 0 {
					region.Peers = slices.Delete(region.Peers, i, i+1)
				}
				removedSelf = removedSelf || peer.Id == p.self.Id
				if peer.Id != p.self.Id && p.isLeader.Load() {
					p.removedPeers = append(p.removedPeers, peer)
				}
			}
			region.RegionEpoch.ConfVer++
		}
	}
	p.rn.ApplyConfChange(cc)
	p.region = region
	state := raft_serverpb.RegionLocalState{State: raft_serverpb.PeerState_Normal, Region: region}
	if err := wb.Set(regionStateKey(region.Id), mustMarshal(&state), nil); err != nil {
		return r, false, err
	}
	p.s.log.Info("changed peers", "region", region.Id, "peers", peersString(region), "conf_ver", region.RegionEpoch.ConfVer)
	return r, removedSelf, nil
}

// checkConfVer refuses, when it applies, a peer change proposed on
// another configuration of the region than the one applied now (its
// header's conf_ver differs), as TiKV's check_region_epoch does for
// ChangePeer and ChangePeerV2: the change was decided on peers that are no
// longer the region's. It depends only on the region as applied so far,
// so every replica decides alike. (A split is checked against the
// version, in applySplit; a leader transfer is a raft message, not an
// entry, and applies nothing.) Call with mu held.
func (p *Peer) checkConfVer(h *raft_cmdpb.RaftRequestHeader) error {
	cur := p.region.GetRegionEpoch()
	if e := h.GetRegionEpoch(); e == nil || e.ConfVer != cur.GetConfVer() {
		return &RegionError{Err: &errorpb.Error{
			Message:       fmt.Sprintf("peer change on a stale epoch: conf_ver %d, region %d has %d", e.GetConfVer(), p.region.Id, cur.GetConfVer()),
			EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: []*metapb.Region{p.region}}}}
	}
	return nil
}

// DuplicatePeerError refuses a peer change that would give a store a
// second peer of a region (TiKV's "can't add duplicated peer").
type DuplicatePeerError struct {
	Region, Store, Existing uint64
}

func (e *DuplicatePeerError) Error() string {
	return fmt.Sprintf("raftstore: store %d already has peer %d of region %d", e.Store, e.Existing, e.Region)
}

// checkOnePeerPerStore refuses changes that add a peer on a store that
// already holds another peer of region. A store holds one peer of a
// region: the newer replaces the older on its first message, so the older
// stays in the configuration as a dead member (a dead voter, once
// promoted), and a restart loaded the store's state as the older one's
// (findStorePeer found the first). Such a change comes from a retry whose
// first try was applied after all (see testdata/duppeer); PD asks again
// if it must.
func checkOnePeerPerStore(region *metapb.Region, changes []*raft_cmdpb.ChangePeerRequest) error {
	for _, ch := range changes {
		if ch.ChangeType != eraftpb.ConfChangeType_AddNode && ch.ChangeType != eraftpb.ConfChangeType_AddLearnerNode {
			continue
		}
		for _, pr := range region.Peers {
			if pr.StoreId == ch.GetPeer().GetStoreId() && pr.Id != ch.GetPeer().GetId() {
				return &DuplicatePeerError{Region: region.Id, Store: pr.StoreId, Existing: pr.Id}
			}
		}
	}
	return nil
}

func peersString(r *metapb.Region) string {
	var b bytes.Buffer
	for i, pr := range r.Peers {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d@%d", pr.Id, pr.StoreId)
		if pr.Role == metapb.PeerRole_Learner {
			b.WriteString("(learner)")
		}
	}
	return b.String()
}

func cloneRegion(r *metapb.Region) *metapb.Region {
	c := *r
	e := *r.RegionEpoch
	c.RegionEpoch = &e
	c.Peers = make([]*metapb.Peer, len(r.Peers))
	for i, pr := range r.Peers {
		cp := *pr
		c.Peers[i] = &cp
	}
	return &c
}

// destroy removes a peer that its region dropped: its data range (no
// other region here can overlap it), its log and state, leaving a
// tombstone. If the Ready loop's log write that holds the peer's last
// Ready is still to commit, it waits for it (at most one log write, no
// lock taken), so as to wipe what it writes too (see persist). Call with
// mu held.
func (p *Peer) destroy() error {
	if p.logDurable != nil {
		<-p.logDurable
	}
	p.locks.clear()
	id := p.region.Id
	wb := p.s.db.NewBatch()
	defer wb.Close()
	// A peer still waiting for its first snapshot holds no data, and its
	// region has no range yet (an empty range would be every key).
	for _, cf := range dataCFs {
		if !p.initialized {
			break
		}
		lo, hi := dataBounds(cf, p.region.StartKey, p.region.EndKey)
		if err := wb.DeleteRange(lo, hi, nil); err != nil {
			return err
		}
	}
	if err := wb.DeleteRange(regionPrefix(id), hardStateKey(id), nil); err != nil {
		return err
	}
	if err := wb.Delete(hardStateKey(id), nil); err != nil {
		return err
	}
	if err := wb.Delete(applyStateKey(id), nil); err != nil {
		return err
	}
	state := raft_serverpb.RegionLocalState{State: raft_serverpb.PeerState_Tombstone, Region: p.region}
	if err := wb.Set(regionStateKey(id), mustMarshal(&state), nil); err != nil {
		return err
	}
	if err := wb.Commit(pebble.Sync); err != nil {
		return err
	}
	p.destroyed = true
	p.serving.Store(false)
	p.isLeader.Store(false)
	p.dropWriteFloorLocked()
	p.leaseReady.Store(false)
	p.endLease()
	p.failPending(&RegionError{Err: &errorpb.Error{Message: "region removed from this store",
		RegionNotFound: &errorpb.RegionNotFound{RegionId: id}}})
	p.advanceApplied()
	p.s.mu.Lock()
	if p.s.peers[id] == p {
		delete(p.s.peers, id)
	}
	// Never lowered: a store must not take back a peer it destroyed.
	p.s.tombstones[id] = max(p.s.tombstones[id], p.self.Id)
	p.s.mu.Unlock()
	p.s.log.Info("removed peer", "region", id, "peer", p.self.Id)
	return nil
}

// raftLogGCThreshold is how many applied entries a peer keeps before
// it compacts its log (TiKV's raft-log-gc-threshold). The entries a log
// holds live in memory, so this and raftLogCacheBytes, not the count
// limit, bound a store's memory in the usual case.
const raftLogGCThreshold = 50

// raftLogCacheBytes: once the applied entries a peer keeps in memory hold
// this many bytes, it compacts them all, whatever their count. Large
// entries (transactions of many keys) would otherwise keep up to
// raftLogGCThreshold of them for each of a store's regions: with a
// thousand regions and 4 MiB transactions spread over them, half a GiB.
const raftLogCacheBytes = 64 << 10

// maybeCompactLog drops applied entries from memory now, and from Pebble
// in wb, which also records the new truncated state. A leader keeps what
// its slowest follower still needs, up to raftstore.raft-log-gc-count-limit
// entries or raftstore.raft-log-gc-size-limit bytes; past either, that
// follower will get a snapshot. A follower keeps only the last
// raftLogGCThreshold entries, none once they hold raftLogCacheBytes (should
// it lead, a lagging peer gets a snapshot). Call with mu held.
func (p *Peer) maybeCompactLog(wb *pebble.Batch) error {
	first, _ := p.storage.FirstIndex()
	limit := p.s.cfg.LogGCCountLimit
	threshold := min(uint64(raftLogGCThreshold), limit)
	big := p.appliedLogBytes >= raftLogCacheBytes
	if p.applied < first || p.applied-first < threshold && !big {
		return nil
	}
	to := p.applied - threshold/2
	if big {
		to = p.applied
	}
	if p.isLeader.Load() {
		p.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
			if id != p.self.Id && pr.Match < to {
				to = pr.Match
			}
		})
		if p.applied-first >= limit {
			to = max(to, p.applied-limit/2)
		}
		if p.appliedLogBytes >= p.s.cfg.LogGCSizeLimit {
			to = p.applied
		}
	}
	if to < first {
		return nil
	}
	if err := p.forgetLogBytes(first, to); err != nil {
		return err
	}
	if err := p.storage.Compact(to); err != nil {
		return err
	}
	// One point deletion per entry, as TiKV's raft log GC does, rather
	// than a range deletion: Pebble fragments every range deletion of a
	// memtable again each time one is added, for the next read of any
	// key, and a log compacted every few dozen writes put thousands of
	// them in each memtable. Under sysbench's single-row updates that
	// re-fragmenting took 59% of the leader's CPU. The entries below
	// first are gone already: each compaction deleted them with the
	// truncated state that says so, in one batch.
	for i := first; i <= to; i++ {
		if err := wb.Delete(logKey(p.region.Id, i), nil); err != nil {
			return err
		}
	}
	return nil
}

// forgetLogBytes takes the entries [first, to], about to be compacted,
// out of appliedLogBytes. Call with mu held.
func (p *Peer) forgetLogBytes(first, to uint64) error {
	if to >= p.applied {
		p.appliedLogBytes = 0
		return nil
	}
	ents, err := p.storage.Entries(first, to+1, math.MaxUint64)
	if err != nil {
		return err
	}
	for i := range ents {
		p.appliedLogBytes -= min(p.appliedLogBytes, uint64(len(ents[i].Data)))
	}
	return nil
}
