package raftstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// runRegain runs the commands for a leader that loses its region and
// wins it back between two Readys (testdata/regain):
//
//	regain-unseen region=R store=S
//	                           with S's Ready loop paused (pause-loop),
//	                           wait until another store leads the region in
//	                           a higher term and S's peer follows it (the
//	                           leader's messages step into it, the loop
//	                           takes no Ready); then hand S's peer the
//	                           leadership back as a leader transfer does
//	                           (MsgTimeoutNow), send its vote requests as
//	                           its loop would, and wait until the votes
//	                           make it leader, still without a Ready
//	leader-term region=R store=S
//	                           whether S's LeaderTerm is the term of the
//	                           last Ready its loop handled, once it has
//	                           handled one in raft's current term
//	in-lease region=R store=S  once S's peer serves commands (it leads and
//	                           applied its term's first entry), whether
//	                           its lease holds now
func (c *raftCluster) runRegain(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	switch td.Cmd {
	case "regain-unseen":
		sid := arg("store")
		p := c.stores[sid].rs.Peer(arg("region"))
		first := p.leaderTerm.Load()
		// Another store leads, in a higher term, and S's peer follows it.
		var other *Peer
		var st raft.BasicStatus
		deadline := time.Now().Add(10 * time.Second)
		for other == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			p.mu.Lock()
			st = p.rn.BasicStatus()
			p.mu.Unlock()
			if st.RaftState != raft.StateFollower || st.Lead == 0 || st.Term <= first {
				continue
			}
			for osid, s := range c.stores {
				if q := s.rs.Peer(arg("region")); osid != sid && q != nil && q.self.Id == st.Lead && q.IsLeader() {
					other = q
				}
			}
		}
		if other == nil {
			return fmt.Sprintf("error: store %d's peer does not follow another leader: %+v", sid, st), true
		}
		// The entries S's peer got from the new leader, which make its log
		// as long as the leader's: the leader's empty entry of its term
		// (in the leader's first MsgApp, which its peer on S stepped
		// before anything else from it).
		other.mu.Lock()
		last, lastTerm := other.lastIndex, other.rn.BasicStatus().Term
		other.mu.Unlock()
		p.mu.Lock()
		// The new leader transfers the leadership to S's peer, which
		// campaigns at once (raft's hup(campaignTransfer)).
		err := p.rn.Step(raftpb.Message{Type: raftpb.MsgTimeoutNow, From: other.self.Id, To: p.self.Id, Term: st.Term})
		st2 := p.rn.BasicStatus()
		var votes []raftpb.Message
		for _, q := range p.region.Peers {
			if q.Id != p.self.Id {
				votes = append(votes, raftpb.Message{Type: raftpb.MsgVote, From: p.self.Id, To: q.Id, Term: st2.Term,
					LogTerm: lastTerm, Index: last, Context: []byte(campaignTransfer)})
			}
		}
		p.mu.Unlock()
		if err != nil || st2.RaftState != raft.StateCandidate {
			return fmt.Sprintf("error: no campaign: %v %+v", err, st2), true
		}
		c.stores[sid].rs.trans.send(p, votes)
		for time.Now().Before(deadline) {
			p.mu.Lock()
			st = p.rn.BasicStatus()
			p.mu.Unlock()
			if st.RaftState == raft.StateLeader {
				if st.Term < first+2 {
					return fmt.Sprintf("error: store %d leads in term %d, its last Ready's was %d", sid, st.Term, first), true
				}
				// (2 terms on, or more if stores 2 and 3 needed more
				// than one election.)
				return fmt.Sprintf("store %d leads again, in a later term", sid), true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return fmt.Sprintf("error: store %d did not win: %+v", sid, st), true
	case "in-lease":
		p := c.stores[arg("store")].rs.Peer(arg("region"))
		if !waitFor(p.leaseReady.Load) {
			return "not serving", true
		}
		if p.inLease(monoNow()) {
			return "in lease", true
		}
		return "no lease", true
	case "leader-term":
		p := c.stores[arg("store")].rs.Peer(arg("region"))
		// Once the loop has handled a Ready in raft's current term (resume
		// returns at once): the hard state it persisted, and what it did
		// with it, under the same lock.
		var hs raftpb.HardState
		var lt uint64
		waitFor(func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			hs, _, _ = p.storage.MemoryStorage.InitialState() // the last Ready's
			lt = p.LeaderTerm()
			return hs.Term == p.rn.BasicStatus().Term
		})
		switch {
		case lt == 0:
			return "not leader", true
		case lt == hs.Term:
			return "current", true
		}
		return fmt.Sprintf("%d behind the term of its last Ready", hs.Term-lt), true
	}
	return "", false
}
