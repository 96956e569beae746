package raftstore

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
)

// runDupPeer runs the commands for peer changes that would give a store a
// second peer of a region (testdata/duppeer):
//
//	add-peer region=R store=S id=N type=learner|voter [unchecked]
//	                           propose adding peer N on store S as it is
//	                           asked, without looking whether S has a
//	                           peer of R already: what a retry does whose
//	                           first try was applied after all (the
//	                           proposer was told NotLeader, and the new
//	                           leader had yet to apply the first add when
//	                           the retry looked); unchecked, the leader
//	                           proposes it without checking either, as if
//	                           its region did not show the first add yet,
//	                           and only the apply can refuse it
func (c *raftCluster) runDupPeer(t *testing.T, td *datadriven.TestData) (string, bool) {
	if td.Cmd != "add-peer" {
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
		return false, p.changePeers([]*raft_cmdpb.ChangePeerRequest{ch}, !td.HasArg("unchecked"))
	})
	if err != nil {
		return fmt.Sprintf("error: %v", err), true
	}
	return "", true
}
