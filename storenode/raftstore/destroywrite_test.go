package raftstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
)

// runDestroyWrite runs the commands for a peer destroyed while the Ready
// loop's log write that holds its entries is built and not yet committed
// (testdata/destroywrite):
//
//	hold-log-write store=S region=R
//	                           store S's Ready loop stops, once, between
//	                           building and committing a log write that
//	                           holds entries or a hard state of region R
//	wait-log-write store=S     until it has stopped there
//	release-log-write store=S  let it commit
//	raft-keys region=R store=S once S has no peer of R: the raft log
//	                           entries and hard state S's Pebble holds for
//	                           R, after waiting up to 1s for some to show
func (c *raftCluster) runDestroyWrite(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	st := &c.destroyWrite
	switch td.Cmd {
	case "hold-log-write":
		region := arg("region")
		st.held, st.release = make(chan struct{}), make(chan struct{})
		held, release := st.held, st.release
		once := false
		hook := func(at loopPoint, rps []readyPeer) {
			if once || at != logWritesBuilt {
				return
			}
			for _, rp := range rps {
				if rp.p.Meta().Id == region && (len(rp.rd.Entries) > 0 || !raft.IsEmptyHardState(rp.rd.HardState)) {
					once = true
					close(held)
					<-release
					return
				}
			}
		}
		c.stores[arg("store")].rs.loopHook.Store(&hook)
		return "", true
	case "wait-log-write":
		select {
		case <-st.held:
			return "", true
		case <-time.After(10 * time.Second):
			return "error: the log write was not held", true
		}
	case "release-log-write":
		close(st.release)
		c.stores[arg("store")].rs.loopHook.Store(nil)
		return "", true
	case "raft-keys":
	default:
		return "", false
	}
	region, rs := arg("region"), c.stores[arg("store")].rs
	deadline := time.Now().Add(10 * time.Second)
	for rs.Peer(region) != nil {
		if time.Now().After(deadline) {
			return "error: the peer is still there", true
		}
		time.Sleep(10 * time.Millisecond)
	}
	var entries, hard int
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		entries, hard = 0, 0
		it, err := rs.db.NewIter(&pebble.IterOptions{LowerBound: logKey(region, 0), UpperBound: applyStateKey(region)})
		if err != nil {
			return "error: " + err.Error(), true
		}
		for it.First(); it.Valid(); it.Next() {
			if it.Key()[9] == logSuffix {
				entries++
			} else {
				hard++
			}
		}
		if err := it.Close(); err != nil {
			return "error: " + err.Error(), true
		}
		if entries+hard > 0 {
			break
		}
	}
	return fmt.Sprintf("log entries: %d, hard state: %t", entries, hard > 0), true
}

// destroyWriteState is what destroywrite_test.go's commands leave running.
type destroyWriteState struct {
	held, release chan struct{}
}
