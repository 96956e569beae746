package raftstore

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/datadriven"
)

// runWriteFilter runs the commands of testdata/writefilter (writefilter.go):
//
//	write-floor region=R       each store's floor of the region's write
//	                           filter (its term is remembered)
//	set-write-floor region=R store=S floor=F [old-term]
//	                           Peer.SetWriteFloor on S's peer, for the term
//	                           in which it leads (0 if it does not), or for
//	                           the term of S's floor that write-floor saw
//	                           last
//	one-pc region=R start=TS max-ts=TS [pessimistic] k=v ...
//	                           an optimistic 1PC prewrite of those puts on
//	                           the leader, the store's max ts as given
//	                           (pessimistic: of keys the transaction locked
//	                           at TS)
func (c *raftCluster) runWriteFilter(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	switch td.Cmd {
	case "write-floor":
		var out []string
		for _, sid := range slices.Sorted(maps.Keys(c.stores)) {
			p := c.stores[sid].rs.Peer(arg("region"))
			if p == nil {
				continue
			}
			p.mu.Lock()
			floor, term := p.writeFloor.Load(), p.writeFloorTerm.Load()
			p.mu.Unlock()
			if floor == math.MaxUint64 {
				out = append(out, fmt.Sprintf("store %d: off", sid))
				continue
			}
			if c.floorTerms == nil {
				c.floorTerms = map[uint64]uint64{}
			}
			c.floorTerms[sid] = term
			out = append(out, fmt.Sprintf("store %d: floor %d", sid, floor))
		}
		return strings.Join(out, "\n"), true
	case "set-write-floor":
		p := c.stores[arg("store")].rs.Peer(arg("region"))
		term := p.LeaderTerm()
		if td.HasArg("old-term") {
			term = c.floorTerms[arg("store")]
		}
		p.SetWriteFloor(term, arg("floor"))
		return "", true
	case "one-pc":
		req := &mvcc.PrewriteRequest{StartTS: arg("start"), LockTTL: 3000, TryOnePC: true}
		pessimistic := td.HasArg("pessimistic")
		if pessimistic {
			req.ForUpdateTS = req.StartTS
		}
		for _, a := range td.CmdArgs {
			if a.Key == "region" || a.Key == "start" || a.Key == "max-ts" || a.Key == "pessimistic" {
				continue
			}
			if req.Primary == nil {
				req.Primary = []byte(a.Key)
			}
			req.Mutations = append(req.Mutations, kv.Mutation{Op: kv.OpPut, Key: []byte(a.Key), Value: []byte(a.Vals[0])})
			req.Pessimistic = append(req.Pessimistic, pessimistic)
		}
		maxTS := arg("max-ts")
		res, err := c.readyLeader(t, arg("region")).MVCC().Prewrite(context.Background(), req, func() uint64 { return maxTS })
		if err != nil {
			return "error: " + err.Error(), true
		}
		return fmt.Sprintf("committed at %d", res.OnePCCommitTS), true
	}
	return "", false
}
