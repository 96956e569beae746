package raftstore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/kvproto/pkg/metapb"
)

// runStale runs the commands for stale peers (testdata/stale):
//
//	isolate id=S               store S drops every Raft message it receives
//	heal id=S                  ... and no longer does
//	regions store=S            the regions store S holds
//	check-stale store=S        what the storage node does for a peer that
//	                           has not heard from a leader for long: give
//	                           it the region as PD knows it (the newest
//	                           configuration a store has), and destroy it
//	                           if removed
func (c *raftCluster) runStale(t *testing.T, td *datadriven.TestData) (string, bool) {
	var sid uint64
	switch td.Cmd {
	case "isolate", "heal":
		td.ScanArgs(t, "id", &sid)
		c.stores[sid].rs.isolated.Store(td.Cmd == "isolate")
		return "", true
	case "regions":
		td.ScanArgs(t, "store", &sid)
		var out []string
		for _, p := range c.stores[sid].rs.Peers() {
			out = append(out, regionString(p.Meta()))
		}
		return strings.Join(out, "\n"), true
	case "check-stale":
		td.ScanArgs(t, "store", &sid)
	default:
		return "", false
	}
	var out []string
	for _, p := range c.stores[sid].rs.Peers() {
		current := c.newestMeta(p.Meta().Id)
		if p.DestroyIfRemoved(current) {
			out = append(out, fmt.Sprintf("destroyed peer %d of region %d", p.self.Id, current.Id))
		}
	}
	return strings.Join(out, "\n"), true
}

// newestMeta is the region as PD knows it: the newest configuration any
// store reports. (The leader's own may be older for a moment after an
// election, until it applies what it committed.)
func (c *raftCluster) newestMeta(id uint64) *metapb.Region {
	var newest *metapb.Region
	for _, s := range c.stores {
		p := s.rs.Peer(id)
		if p == nil || !p.isInitialized() {
			continue
		}
		r := p.Meta()
		if newest == nil || r.GetRegionEpoch().GetConfVer() > newest.GetRegionEpoch().GetConfVer() {
			newest = r
		}
	}
	return newest
}
