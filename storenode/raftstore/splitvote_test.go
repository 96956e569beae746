package raftstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/kvproto/pkg/metapb"
	"go.etcd.io/raft/v3/raftpb"
)

// runSplitVote runs the commands for a split's new peer that replaces an
// uninitialized one a message created (testdata/splitvote):
//
//	drop-region store=S region=R
//	                           store S drops every Raft message of region
//	                           R; undrop-region store=S ends it
//	create-peer store=S region=R peer=N
//	                           create peer N of region R on S,
//	                           uninitialized, as a message from R's leader
//	                           does (here even though a region S holds
//	                           covers R's range: as if S's peer of it were
//	                           still waiting for its snapshot)
//	vote store=S region=R term=T candidate=N [persisted]
//	                           S's peer of R gets a vote request from N in
//	                           term T, N's log at the initial position;
//	                           prints raft's term and vote after it (once
//	                           persisted, if asked)
//	hard-state store=S region=R
//	                           once S's peer of R is initialized: the hard
//	                           state on S's disk
//	destroy-peer store=S region=R
//	                           destroy S's peer of R, as a tombstone
//	                           message or PD's removal would
//	wait-version store=S region=R version=V
//	                           until S's peer of R has applied version V
//	show-store store=S         show's lines of store S
func (c *raftCluster) runSplitVote(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	switch td.Cmd {
	case "drop-region":
		c.stores[arg("store")].rs.droppedRegion.Store(arg("region"))
		return "", true
	case "undrop-region":
		c.stores[arg("store")].rs.droppedRegion.Store(0)
		return "", true
	case "create-peer":
		rs := c.stores[arg("store")].rs
		rs.mu.Lock()
		_, err := rs.createUninitializedLocked(arg("region"), &metapb.Peer{Id: arg("peer"), StoreId: rs.cfg.StoreID})
		rs.mu.Unlock()
		if err != nil {
			return "error: " + err.Error(), true
		}
		return "", true
	case "vote":
		rs := c.stores[arg("store")].rs
		p := rs.Peer(arg("region"))
		if p == nil {
			return "error: no peer", true
		}
		cand := arg("candidate")
		p.mu.Lock()
		err := p.rn.Step(raftpb.Message{Type: raftpb.MsgVote, From: cand, To: p.self.Id, Term: arg("term"),
			LogTerm: initLogTerm, Index: initLogIndex})
		hs := p.rn.BasicStatus().HardState
		p.mu.Unlock()
		if err != nil {
			return "error: " + err.Error(), true
		}
		rs.wake()
		if td.HasArg("persisted") {
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				p.mu.Lock()
				had, _, _ := p.storage.InitialState()
				p.mu.Unlock()
				if had.Term == hs.Term && had.Vote == hs.Vote {
					break
				}
				if time.Now().After(deadline) {
					return "error: the vote was not persisted", true
				}
			}
		}
		return fmt.Sprintf("term %d vote %d", hs.Term, hs.Vote), true
	case "destroy-peer":
		p := c.stores[arg("store")].rs.Peer(arg("region"))
		p.mu.Lock()
		defer p.mu.Unlock()
		if err := p.destroy(); err != nil {
			return "error: " + err.Error(), true
		}
		return "", true
	case "wait-version":
		rs, region, version := c.stores[arg("store")].rs, arg("region"), arg("version")
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if p := rs.Peer(region); p != nil && p.Meta().GetRegionEpoch().GetVersion() >= version {
				p.mu.Lock() // held while the split's peers are created
				p.mu.Unlock()
				return "", true
			}
			if time.Now().After(deadline) {
				return "error: not applied", true
			}
		}
	case "show-store":
		sid := arg("store")
		out := c.show()
		var b strings.Builder
		in := false
		for _, line := range strings.SplitAfter(out, "\n") {
			if strings.HasPrefix(line, "store ") {
				in = line == fmt.Sprintf("store %d:\n", sid)
			}
			if in {
				b.WriteString(line)
			}
		}
		return b.String(), true
	case "hard-state":
		rs := c.stores[arg("store")].rs
		region := arg("region")
		for deadline := time.Now().Add(10 * time.Second); !rs.hasInitializedPeer(region); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				return "error: no initialized peer", true
			}
		}
		var hs raftpb.HardState
		if _, err := getProto(rs.db, hardStateKey(region), &hs); err != nil {
			return "error: " + err.Error(), true
		}
		return fmt.Sprintf("term %d vote %d commit %d", hs.Term, hs.Vote, hs.Commit), true
	}
	return "", false
}
