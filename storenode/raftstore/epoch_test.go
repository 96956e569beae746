package raftstore

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// runEpoch runs the commands for admin commands checked against the
// region's epoch when they apply (testdata/epoch):
//
//	raft-config region=R       each store's raft configuration of the
//	                           region (voters, learners), as its RawNode
//	                           has it
func (c *raftCluster) runEpoch(t *testing.T, td *datadriven.TestData) (string, bool) {
	switch td.Cmd {
	case "raft-config":
	default:
		return "", false
	}
	var region uint64
	td.ScanArgs(t, "region", &region)
	var out []string
	for _, sid := range slices.Sorted(maps.Keys(c.stores)) {
		p := c.stores[sid].rs.Peer(region)
		if p == nil {
			continue
		}
		p.mu.Lock()
		cfg := p.rn.Status().Config
		p.mu.Unlock()
		voters := slices.Sorted(maps.Keys(cfg.Voters[0]))
		learners := slices.Sorted(maps.Keys(cfg.Learners))
		out = append(out, fmt.Sprintf("store %d: voters %v learners %v", sid, voters, learners))
	}
	return strings.Join(out, "\n"), true
}
