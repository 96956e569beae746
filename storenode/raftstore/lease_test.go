package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/datadriven"
)

// runLease runs the commands for leases (testdata/lease):
//
//	stall id=S                 stop store S's Ready loop, as a stuck disk
//	                           would, and drop the messages it receives, as
//	                           a network partition would
//	resume id=S                let it go on
//	idle for=D                 do nothing for a duration
//	put-elsewhere region=R not=S k=v ...
//	                           a write on the region's leader, once a store
//	                           other than S leads it
//	read region=R store=S key=K
//	                           a read on store S's peer, as the service does
//	                           one: ReadIndex, then the applied data
func (c *raftCluster) runLease(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	switch td.Cmd {
	case "stall":
		ch := make(chan struct{})
		rs := c.stores[arg("id")].rs
		rs.paused.Store(&ch)
		rs.isolated.Store(true)
		return "", true
	case "resume":
		rs := c.stores[arg("id")].rs
		rs.isolated.Store(false)
		if ch := rs.paused.Swap(nil); ch != nil {
			close(*ch)
		}
		rs.wake()
		return "", true
	case "idle":
		var d string
		td.ScanArgs(t, "for", &d)
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(dur)
		return "", true
	case "put-elsewhere":
		id, not := arg("region"), arg("not")
		var leader *Peer
		for deadline := time.Now().Add(10 * time.Second); leader == nil && time.Now().Before(deadline); {
			for sid, s := range c.stores {
				if p := s.rs.Peer(id); sid != not && p != nil && p.IsLeader() && p.isInitialized() {
					leader = p
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		if leader == nil {
			return "error: no other store leads the region", true
		}
		var b mvcc.Batch
		for _, a := range td.CmdArgs {
			if a.Key != "region" && a.Key != "not" {
				b.Put(mvcc.CFDefault, codec.EncodeBytes(nil, []byte(a.Key)), []byte(a.Vals[0]))
			}
		}
		if err := leader.MVCC().Engine().Write(&b, true); err != nil {
			return "error: " + err.Error(), true
		}
		return "", true
	case "read":
		var key string
		td.ScanArgs(t, "key", &key)
		p := c.stores[arg("store")].rs.Peer(arg("region"))
		if p == nil {
			return "error: no peer", true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.ReadIndex(ctx); err != nil {
			var re *RegionError
			if errors.As(err, &re) && re.Err.NotLeader != nil {
				return "not leader", true
			}
			return "error: " + err.Error(), true
		}
		v, err := p.MVCC().Engine().Get(mvcc.CFDefault, codec.EncodeBytes(nil, []byte(key)))
		switch {
		case err != nil:
			return "error: " + err.Error(), true
		case v == nil:
			return "(none)", true
		}
		return string(v), true
	}
	return "", false
}
