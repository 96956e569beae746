package storenode

import (
	"context"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
)

// storeHeartbeats reports the store's stats to PD every
// raftstore.pd-store-heartbeat-tick-interval.
func (n *Node) storeHeartbeats(ctx context.Context) {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.Raft.PDStoreHeartbeatInterval.Duration)
	defer t.Stop()
	last := time.Now()
	for {
		now := time.Now()
		capacity, avail := diskStats(n.cfg.Storage.DataDir)
		stats := &pdpb.StoreStats{StoreId: n.storeID, Capacity: capacity, Available: avail,
			StartTime: uint32(n.started.Unix()),
			Interval:  &pdpb.TimeInterval{StartTimestamp: uint64(last.Unix()), EndTimestamp: uint64(now.Unix())}}
		stats.RegionCount = uint32(len(n.rs.Peers()))
		f := n.rs.Flow()
		stats.BytesWritten, stats.KeysWritten, stats.BytesRead, stats.KeysRead = f.BytesWritten, f.KeysWritten, f.BytesRead, f.KeysRead
		if m := n.eng.Metrics(); m != nil {
			stats.UsedSize = m.DiskSpaceUsage()
		}
		last = now
		if _, err := n.pd.storeHeartbeat(ctx, stats); err != nil && ctx.Err() == nil {
			n.log.Warn("store heartbeat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reported is what the last region heartbeat said of a region.
type reported struct {
	version, confVer, leader uint64
	at                       time.Time
}

// regionHeartbeats reports every region this store leads on PD's region
// heartbeat stream: at once when its epoch or leadership changes, and
// every raftstore.pd-heartbeat-tick-interval otherwise. PD's operators
// come back on the same stream.
func (n *Node) regionHeartbeats(ctx context.Context) {
	defer n.wg.Done()
	for ctx.Err() == nil {
		if err := n.heartbeatStream(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("region heartbeat stream failed", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (n *Node) heartbeatStream(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pd := n.pd.pd()
	if pd == nil {
		return n.pd.connect(ctx) // the caller comes back
	}
	stream, err := pd.RegionHeartbeat(sctx)
	if err != nil {
		_ = n.pd.connect(ctx) // to find the leader again; the next attempt reports a failure
		return err
	}
	errc := make(chan error, 1)
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			if resp.GetHeader().GetError() != nil {
				continue
			}
			go n.runOperator(ctx, resp)
		}
	}()
	last := map[uint64]reported{}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		now := time.Now()
		for _, p := range n.rs.Peers() {
			st, ok := p.Stats()
			if !ok {
				continue
			}
			e := st.Region.RegionEpoch
			prev := last[st.Region.Id]
			if prev.version == e.Version && prev.confVer == e.ConfVer && prev.leader == st.Leader.Id &&
				now.Sub(prev.at) < n.cfg.Raft.PDHeartbeatInterval.Duration {
				continue
			}
			req := &pdpb.RegionHeartbeatRequest{Header: n.pd.header(), Region: st.Region, Leader: st.Leader,
				DownPeers: st.Down, PendingPeers: st.Pending, ApproximateSize: st.ApproximateSize,
				BytesWritten: st.BytesWritten, KeysWritten: st.KeysWritten, BytesRead: st.BytesRead, KeysRead: st.KeysRead,
				Term: st.Term, Interval: &pdpb.TimeInterval{StartTimestamp: uint64(prev.at.Unix()), EndTimestamp: uint64(now.Unix())}}
			if err := stream.Send(req); err != nil {
				return err
			}
			last[st.Region.Id] = reported{version: e.Version, confVer: e.ConfVer, leader: st.Leader.Id, at: now}
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case <-t.C:
		}
	}
}

// runOperator carries out an operator PD sent for a region this store
// leads, if the region is still as PD saw it.
func (n *Node) runOperator(ctx context.Context, resp *pdpb.RegionHeartbeatResponse) {
	p := n.rs.Peer(resp.RegionId)
	if p == nil || !p.IsLeader() {
		return
	}
	r := p.Meta()
	if e := resp.RegionEpoch; e != nil && (e.Version != r.RegionEpoch.Version || e.ConfVer != r.RegionEpoch.ConfVer) {
		return
	}
	var err error
	switch {
	case resp.ChangePeer != nil:
		err = p.ChangePeers([]*raft_cmdpb.ChangePeerRequest{{ChangeType: resp.ChangePeer.ChangeType, Peer: resp.ChangePeer.Peer}})
	case resp.ChangePeerV2 != nil:
		var chs []*raft_cmdpb.ChangePeerRequest
		for _, c := range resp.ChangePeerV2.Changes {
			chs = append(chs, &raft_cmdpb.ChangePeerRequest{ChangeType: c.ChangeType, Peer: c.Peer})
		}
		err = p.ChangePeers(chs)
	case resp.TransferLeader != nil:
		p.TransferLeader(resp.TransferLeader.Peer)
	case resp.SplitRegion != nil:
		keys := resp.SplitRegion.Keys
		if resp.SplitRegion.Policy != pdpb.CheckPolicy_USEKEY {
			keys = nil
			if k := p.MiddleKey(); k != nil {
				keys = [][]byte{k}
			}
		}
		if len(keys) > 0 {
			var regions []*metapb.Region
			regions, err = p.Split(ctx, keys, n.pd.askBatchSplit)
			if err == nil {
				err = n.pd.reportBatchSplit(ctx, regions)
			}
		}
	}
	if err != nil && ctx.Err() == nil {
		n.log.Info("operator not carried out", "region", resp.RegionId, "err", err)
	}
}

// every runs f every interval until ctx ends, for one of the node's
// background loops.
func (n *Node) every(ctx context.Context, interval time.Duration, f func()) {
	defer n.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f()
	}
}

// staleChecks asks PD about each peer that has not heard from a leader
// for abnormal-leader-missing-duration, every
// peer-stale-state-check-interval (TiKV's names), and destroys it if its
// region removed it: a learner removed while its store was down is never
// told otherwise.
func (n *Node) staleChecks(ctx context.Context) {
	n.every(ctx, n.cfg.Raft.PeerStaleStateCheckInterval.Duration, func() {
		for _, p := range n.rs.Peers() {
			if p.LeaderSilence() < n.cfg.Raft.AbnormalLeaderMissingDuration.Duration {
				continue
			}
			if r, err := n.pd.getRegionByID(ctx, p.Meta().Id); err == nil && r != nil {
				p.DestroyIfRemoved(r)
			}
		}
	})
}

// splitChecks splits the regions this store leads that grew past
// coprocessor.region-max-size into parts of about region-split-size,
// every raftstore.split-region-check-tick-interval, with IDs from PD.
func (n *Node) splitChecks(ctx context.Context) {
	n.every(ctx, n.cfg.Raft.SplitCheckInterval.Duration, func() {
		for _, p := range n.rs.Peers() {
			if !p.IsLeader() {
				continue
			}
			keys := p.SplitKeys(uint64(n.cfg.Copr.RegionSplitSize), uint64(n.cfg.Copr.RegionMaxSize))
			if len(keys) == 0 {
				continue
			}
			regions, err := p.Split(ctx, keys, n.pd.askBatchSplit)
			if err == nil {
				err = n.pd.reportBatchSplit(ctx, regions)
			}
			if err != nil && ctx.Err() == nil {
				n.log.Info("split check: split failed", "region", p.Meta().Id, "err", err)
			}
		}
	})
}
