package raftstore

import (
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"go.etcd.io/raft/v3/raftpb"
)

// runConfChange runs the commands for peer changes proposed one right
// after another (testdata/confchange):
//
//	hold-advance store=S region=R
//	                           store S's Ready loop stops, once, after
//	                           applying a configuration change of region
//	                           R and before advancing raft past it
//	wait-advance store=S       until it has stopped there
//	release-advance store=S    let it advance
//	change-peer-async region=R store=S type=T
//	                           change-peer on a goroutine, waiting 200ms
//	                           (for it to be proposed) before returning;
//	                           change-peer-result prints its outcome
func (c *raftCluster) runConfChange(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	st := &c.confChange
	switch td.Cmd {
	case "hold-advance":
		region := arg("region")
		st.held, st.release = make(chan struct{}), make(chan struct{})
		held, release := st.held, st.release
		once := false
		hook := func(at loopPoint, rps []readyPeer) {
			if once || at != appliedAll {
				return
			}
			for _, rp := range rps {
				if rp.p.Meta().Id != region {
					continue
				}
				for _, e := range rp.rd.CommittedEntries {
					if e.Type == raftpb.EntryConfChangeV2 {
						once = true
						close(held)
						<-release
						return
					}
				}
			}
		}
		c.stores[arg("store")].rs.loopHook.Store(&hook)
		return "", true
	case "wait-advance":
		select {
		case <-st.held:
			return "", true
		case <-time.After(10 * time.Second):
			return "error: the loop was not held", true
		}
	case "release-advance":
		close(st.release)
		c.stores[arg("store")].rs.loopHook.Store(nil)
		return "", true
	case "change-peer-async":
		var typ string
		td.ScanArgs(t, "type", &typ)
		region, sid := arg("region"), arg("store")
		st.out = make(chan string, 1)
		go func() {
			if err := c.changePeer(region, sid, typ); err != nil {
				st.out <- "error: " + err.Error()
				return
			}
			st.out <- "ok"
		}()
		time.Sleep(200 * time.Millisecond)
		return "", true
	case "change-peer-result":
		return <-st.out, true
	}
	return "", false
}

// confChangeState is what confchange_test.go's commands leave running.
type confChangeState struct {
	held, release chan struct{}
	out           chan string
}
