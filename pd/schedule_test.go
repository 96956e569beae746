package pd

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/kvproto/pkg/metapb"
)

// TestSchedule runs the scripts in testdata/schedule*: a cluster's state
// in, the scheduling steps out. The commands:
//
//	cluster max-replicas=N    start over: no stores, no regions
//	store ID [down|offline|tombstone] ...
//	                          add stores (one per line), in that state
//	region ID peers=S,S,... [learners=S,...] [leader=S]
//	                          add regions (one per line): a voter on each
//	                          store of peers, a learner on each of
//	                          learners, the leader on store leader
//	step ID                   the next step of one region
//	converge [max=N]          apply steps to the regions, round after
//	                          round (each region once per round, in ID
//	                          order), until none is left; print the steps
//	                          taken and then each store's regions and
//	                          leaders
//
// A region's peers have IDs region*10+i; new peers count from 1001. Rewrite the expected output with -rewrite.
func TestSchedule(t *testing.T) {
	datadriven.Walk(t, "testdata/schedule", func(t *testing.T, path string) {
		h := &schedHarness{}
		datadriven.RunTest(t, path, h.run)
	})
}

type schedHarness struct {
	maxReplicas int
	stores      map[uint64]*schedStore
	regions     map[uint64]*schedRegion
	nextPeer    uint64
}

type schedRegion struct {
	meta   *metapb.Region
	leader *metapb.Peer
}

func (h *schedHarness) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "cluster":
		h.maxReplicas = 3
		if arg, ok := td.Arg("max-replicas"); ok {
			h.maxReplicas, _ = strconv.Atoi(arg.SingleVal(t))
		}
		h.stores, h.regions, h.nextPeer = map[uint64]*schedStore{}, map[uint64]*schedRegion{}, 1000
		return "ok\n"
	case "store":
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			f := strings.Fields(line)
			id, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
			s := &schedStore{id: id, state: metapb.StoreState_Up}
			for _, w := range f[1:] {
				switch w {
				case "down":
					s.down = true
				case "offline":
					s.state = metapb.StoreState_Offline
				case "tombstone":
					s.state = metapb.StoreState_Tombstone
				default:
					t.Fatalf("%s: unknown store state %q", td.Pos, w)
				}
			}
			h.stores[id] = s
		}
		return "ok\n"
	case "region":
		for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			h.addRegion(t, td, line)
		}
		return "ok\n"
	case "step":
		id, _ := strconv.ParseUint(td.CmdArgs[0].Key, 10, 64)
		r := h.regions[id]
		if r == nil {
			t.Fatalf("%s: no region %d", td.Pos, id)
		}
		s, _, err := h.view().nextStep(r.meta, r.leader, h.newPeerID)
		if err != nil {
			t.Fatal(err)
		}
		return s.String() + "\n"
	case "converge":
		max := 100
		if arg, ok := td.Arg("max"); ok {
			max, _ = strconv.Atoi(arg.SingleVal(t))
		}
		return h.converge(max)
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

func (h *schedHarness) newPeerID() (uint64, error) {
	h.nextPeer++
	return h.nextPeer, nil
}

func (h *schedHarness) addRegion(t *testing.T, td *datadriven.TestData, line string) {
	f := strings.Fields(line)
	id, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", td.Pos, err)
	}
	r := &schedRegion{meta: &metapb.Region{Id: id, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1}}}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		for _, sid := range strings.Split(v, ",") {
			store, err := strconv.ParseUint(sid, 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", td.Pos, err)
			}
			switch k {
			case "peers", "learners":
				p := &metapb.Peer{Id: id*10 + uint64(len(r.meta.Peers)), StoreId: store}
				if k == "learners" {
					p.Role = metapb.PeerRole_Learner
				}
				r.meta.Peers = append(r.meta.Peers, p)
			case "leader":
				for _, p := range r.meta.Peers {
					if p.StoreId == store {
						r.leader = p
					}
				}
			default:
				t.Fatalf("%s: unknown region field %q", td.Pos, k)
			}
		}
	}
	h.regions[id] = r
}

// view is the scheduling snapshot of the harness's cluster.
func (h *schedHarness) view() *schedView {
	v := &schedView{maxReplicas: h.maxReplicas, stores: map[uint64]*schedStore{}}
	for id, s := range h.stores {
		c := *s
		c.regions, c.leaders = 0, 0
		v.stores[id] = &c
	}
	for _, r := range h.regions {
		for _, p := range r.meta.Peers {
			if s, ok := v.stores[p.StoreId]; ok {
				s.regions++
			}
		}
		if r.leader != nil {
			if s, ok := v.stores[r.leader.StoreId]; ok {
				s.leaders++
			}
		}
	}
	return v
}

func (h *schedHarness) sortedRegions() []*schedRegion {
	out := make([]*schedRegion, 0, len(h.regions))
	for _, r := range h.regions {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].meta.Id < out[j].meta.Id })
	return out
}

// converge applies steps as a store would, until none is left.
func (h *schedHarness) converge(maxRounds int) string {
	counts := map[string]int{}
	rounds := 0
	for ; rounds < maxRounds; rounds++ {
		moved := false
		for _, r := range h.sortedRegions() {
			s, _, err := h.view().nextStep(r.meta, r.leader, h.newPeerID)
			if err != nil || s == nil {
				continue
			}
			moved = true
			kind := strings.Fields(s.String())[0]
			counts[kind]++
			applyStep(r, s)
		}
		if !moved {
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rounds: %d\n", rounds)
	var kinds []string
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "%s: %d\n", k, counts[k])
	}
	v := h.view()
	for _, s := range v.sortedStores() {
		fmt.Fprintf(&b, "store %d: %d regions, %d leaders\n", s.id, s.regions, s.leaders)
	}
	for _, r := range h.sortedRegions() {
		if n := voters(r.meta); n != h.maxReplicas {
			fmt.Fprintf(&b, "region %d has %d voters\n", r.meta.Id, n)
		}
	}
	return b.String()
}

func voters(r *metapb.Region) int {
	n := 0
	for _, p := range r.Peers {
		if !isLearner(p) {
			n++
		}
	}
	return n
}

// applyStep changes a region as a store carrying out s would.
func applyStep(r *schedRegion, s *step) {
	m := r.meta
	switch {
	case s.addLearner != nil:
		m.Peers = append(m.Peers, s.addLearner)
		m.RegionEpoch.ConfVer++
	case s.promote != nil:
		for _, p := range m.Peers {
			if p.Id == s.promote.Id {
				p.Role = metapb.PeerRole_Voter
			}
		}
		m.RegionEpoch.ConfVer++
	case s.remove != nil:
		for i, p := range m.Peers {
			if p.Id == s.remove.Id {
				m.Peers = append(m.Peers[:i], m.Peers[i+1:]...)
				break
			}
		}
		m.RegionEpoch.ConfVer++
	case s.transferLeader != nil:
		r.leader = s.transferLeader
	}
}
