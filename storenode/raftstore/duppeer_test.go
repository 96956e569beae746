package raftstore

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
)

// runDupPeer runs the commands for peer changes that would give a store a
// second peer of a region (testdata/duppeer):
//
//	add-peer region=R store=S id=N type=learner|voter [unchecked] [conf-ver=V]
//	                           propose adding peer N on store S as it is
//	                           asked, without looking whether S has a
//	                           peer of R already: what a retry does whose
//	                           first try was applied after all (the
//	                           proposer was told NotLeader, and the new
//	                           leader had yet to apply the first add when
//	                           the retry looked); unchecked, the leader
//	                           proposes it without checking either, as if
//	                           its region did not show the first add yet,
//	                           and only the apply can refuse it; with
//	                           conf-ver, proposed on that conf_ver of the
//	                           region's epoch instead of the leader's
//	destroy-peer-async region=R store=S
//	                           destroy S's peer of R (as a tombstone
//	                           message or PD's removal would) on a
//	                           goroutine, and return once it holds the
//	                           peer's lock (its Sync write may be held)
//	match region=R peer=N      after 300ms, whether the leader's Match
//	                           for peer N is its last index
func (c *raftCluster) runDupPeer(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	switch td.Cmd {
	case "destroy-peer-async":
		p := c.stores[arg("store")].rs.Peer(arg("region"))
		locked := make(chan struct{})
		go func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			close(locked)
			if err := p.destroy(); err != nil {
				t.Error(err)
			}
		}()
		<-locked
		return "", true
	case "match":
		region, peer := arg("region"), arg("peer")
		time.Sleep(300 * time.Millisecond)
		l := c.leader(region)
		l.mu.Lock()
		defer l.mu.Unlock()
		st := l.rn.Status()
		if m, last := st.Progress[peer].Match, l.lastIndex; m < last {
			return fmt.Sprintf("peer %d: %d behind the leader's last index", peer, last-m), true
		}
		return fmt.Sprintf("peer %d: at the leader's last index", peer), true
	case "add-peer":
	default:
		return "", false
	}
	var region, sid, id uint64
	var typ string
	td.ScanArgs(t, "region", &region)
	td.ScanArgs(t, "store", &sid)
	td.ScanArgs(t, "id", &id)
	td.ScanArgs(t, "type", &typ)
	ch := &raft_cmdpb.ChangePeerRequest{ChangeType: eraftpb.ConfChangeType_AddLearnerNode,
		Peer: &metapb.Peer{Id: id, StoreId: sid, Role: metapb.PeerRole_Learner}}
	if typ == "voter" {
		ch.ChangeType, ch.Peer.Role = eraftpb.ConfChangeType_AddNode, metapb.PeerRole_Voter
	}
	err := c.retryOnLeaderChange(region, func(p *Peer) (bool, error) {
		var epoch *metapb.RegionEpoch
		if td.HasArg("conf-ver") {
			e := *p.Meta().RegionEpoch
			td.ScanArgs(t, "conf-ver", &e.ConfVer)
			epoch = &e
		}
		return false, p.changePeers([]*raft_cmdpb.ChangePeerRequest{ch}, !td.HasArg("unchecked"), epoch)
	})
	var re *RegionError
	switch {
	case errors.As(err, &re) && re.Err.EpochNotMatch != nil:
		return fmt.Sprintf("epoch not match: %s", re.Err.Message), true
	case err != nil:
		return fmt.Sprintf("error: %v", err), true
	}
	return "", true
}

// TestFindStorePeerNewest: a region written before checkOnePeerPerStore
// may list two peers on a store; the store holds the newer.
func TestFindStorePeerNewest(t *testing.T) {
	r := &metapb.Region{Peers: []*metapb.Peer{{Id: 102, StoreId: 1}, {Id: 104, StoreId: 3}, {Id: 103, StoreId: 2}, {Id: 105, StoreId: 3}}}
	if p := findStorePeer(r, 3); p.GetId() != 105 {
		t.Fatalf("store 3: peer %d, want 105", p.GetId())
	}
	if p := findStorePeer(r, 2); p.GetId() != 103 {
		t.Fatalf("store 2: peer %d, want 103", p.GetId())
	}
	if p := findStorePeer(r, 4); p != nil {
		t.Fatalf("store 4: peer %d, want none", p.GetId())
	}
}
