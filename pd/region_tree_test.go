package pd

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/kvproto/pkg/metapb"
)

// TestRegionTree runs testdata/region_tree: the region directory's index.
//
//	put ID START END STORE,...   a region (- for an empty key), its leader
//	                             on the first store; prints what is left
//	search KEY / prev KEY        the region holding KEY / the one before it
//	scan START END [LIMIT]       the regions from START's up to END
//	counts                       peers and leaders per store
func TestRegionTree(t *testing.T) {
	tree := newRegionTree()
	key := func(s string) []byte {
		if s == "-" {
			return nil
		}
		return []byte(s)
	}
	show := func(rs ...*regionInfo) string {
		var b strings.Builder
		for _, r := range rs {
			if r == nil {
				b.WriteString("none\n")
				continue
			}
			fmt.Fprintf(&b, "%d [%q, %q)\n", r.meta.Id, r.meta.StartKey, r.meta.EndKey)
		}
		return b.String()
	}
	datadriven.RunTest(t, "testdata/region_tree", func(t *testing.T, td *datadriven.TestData) string {
		f := strings.Fields(td.Input)
		switch td.Cmd {
		case "put":
			id, _ := strconv.ParseUint(f[0], 10, 64)
			r := &metapb.Region{Id: id, StartKey: key(f[1]), EndKey: key(f[2])}
			for i, st := range strings.Split(f[3], ",") {
				sid, _ := strconv.ParseUint(st, 10, 64)
				r.Peers = append(r.Peers, &metapb.Peer{Id: id*10 + uint64(i), StoreId: sid})
			}
			tree.put(&regionInfo{meta: r, leader: r.Peers[0]})
			return show(tree.sorted...)
		case "search":
			return show(tree.search(key(f[0])))
		case "prev":
			return show(tree.prev(key(f[0])))
		case "scan":
			limit := 0
			if len(f) > 2 {
				limit, _ = strconv.Atoi(f[2])
			}
			return show(tree.scan(key(f[0]), key(f[1]), limit)...)
		case "counts":
			var b strings.Builder
			for st := uint64(1); st <= 4; st++ {
				fmt.Fprintf(&b, "store %d: %d peers, %d leaders\n", st, tree.peers[st], tree.leaders[st])
			}
			return b.String()
		}
		t.Fatalf("unknown command %s", td.Cmd)
		return ""
	})
}
