package pd_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
)

// sim is a small store simulator, as PD's own: stores that send store
// and region heartbeats to a `basalt pd` and carry out the operators its
// answers hold (add a learner, promote it, remove a peer, transfer the
// leader, split at keys), as their Raft groups would.
type sim struct {
	t       *testing.T
	raw     pdpb.PDClient
	h       *pdpb.RequestHeader
	mu      sync.Mutex
	stores  map[uint64]*simStore
	regions map[uint64]*simRegion
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type simStore struct {
	id     uint64
	alive  bool
	stream pdpb.PD_RegionHeartbeatClient
}

type simRegion struct {
	meta   *metapb.Region
	leader *metapb.Peer
}

func newSim(t *testing.T, raw pdpb.PDClient, clusterID uint64) *sim {
	s := &sim{t: t, raw: raw, h: &pdpb.RequestHeader{ClusterId: clusterID},
		stores: map[uint64]*simStore{}, regions: map[uint64]*simRegion{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { s.cancel(); s.wg.Wait() })
	return s
}

func (s *sim) allocID(n uint32) uint64 {
	r, err := s.raw.AllocID(s.ctx, &pdpb.AllocIDRequest{Header: s.h, Count: n})
	if err != nil || r.Header.GetError() != nil {
		s.t.Fatalf("AllocID: %v %v", r, err)
	}
	return r.Id
}

// addStore registers a store and starts its heartbeats.
func (s *sim) addStore(id uint64) {
	r, err := s.raw.PutStore(s.ctx, &pdpb.PutStoreRequest{Header: s.h,
		Store: &metapb.Store{Id: id, Address: fmt.Sprintf("127.0.0.1:%d", 20000+id)}})
	if err != nil || r.Header.GetError() != nil {
		s.t.Fatalf("PutStore: %v %v", r, err)
	}
	s.startStore(id)
}

func (s *sim) startStore(id uint64) {
	stream, err := s.raw.RegionHeartbeat(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	st := &simStore{id: id, alive: true, stream: stream}
	s.mu.Lock()
	s.stores[id] = st
	s.mu.Unlock()
	s.wg.Add(2)
	go s.receive(st)
	go s.heartbeat(st)
}

// stop stops a store's heartbeats; the regions it led elect a leader on
// a live store, as Raft would.
func (s *sim) stop(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stores[id].alive = false
	for _, r := range s.regions {
		if r.leader.StoreId != id {
			continue
		}
		for _, p := range r.meta.Peers {
			if st := s.stores[p.StoreId]; st != nil && st.alive && p.Role != metapb.PeerRole_Learner {
				r.leader = p
				break
			}
		}
	}
}

func (s *sim) heartbeat(st *simStore) {
	defer s.wg.Done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		if !st.alive {
			s.mu.Unlock()
			return
		}
		var reqs []*pdpb.RegionHeartbeatRequest
		for _, r := range s.regions {
			if r.leader.StoreId == st.id {
				reqs = append(reqs, &pdpb.RegionHeartbeatRequest{Header: s.h, Region: cloneRegion(r.meta),
					Leader: r.leader, ApproximateSize: 96})
			}
		}
		s.mu.Unlock()
		if _, err := s.raw.StoreHeartbeat(s.ctx, &pdpb.StoreHeartbeatRequest{Header: s.h,
			Stats: &pdpb.StoreStats{StoreId: st.id, RegionCount: uint32(len(reqs))}}); err != nil && s.ctx.Err() == nil {
			s.t.Errorf("store heartbeat: %v", err)
			return
		}
		for _, req := range reqs {
			if err := st.stream.Send(req); err != nil {
				return
			}
		}
	}
}

// receive carries out the operators a store's stream brings.
func (s *sim) receive(st *simStore) {
	defer s.wg.Done()
	for {
		resp, err := st.stream.Recv()
		if err != nil {
			if s.ctx.Err() == nil {
				s.t.Logf("store %d: region heartbeat stream: %v", st.id, err)
			}
			return
		}
		s.mu.Lock()
		r := s.regions[resp.RegionId]
		// A dead store's peer cannot take leadership.
		deadTarget := resp.TransferLeader != nil && !s.stores[resp.TransferLeader.Peer.StoreId].alive
		if r != nil && st.alive && !deadTarget && epochEqual(r.meta.RegionEpoch, resp.RegionEpoch) {
			if resp.SplitRegion != nil {
				s.split(r, resp.SplitRegion)
			} else {
				applyOperator(r, resp)
			}
		}
		s.mu.Unlock()
	}
}

// split carries out a split at keys as TiKV does: IDs from AskBatchSplit,
// the new regions to the left, the old one keeping the rightmost range,
// every version raised by the number of new regions. The caller holds
// s.mu.
func (s *sim) split(r *simRegion, op *pdpb.SplitRegion) {
	if op.Policy != pdpb.CheckPolicy_USEKEY {
		s.t.Errorf("the simulator splits only at keys, not by %v", op.Policy)
		return
	}
	resp, err := s.raw.AskBatchSplit(s.ctx, &pdpb.AskBatchSplitRequest{Header: s.h, Region: cloneRegion(r.meta),
		SplitCount: uint32(len(op.Keys))})
	if err != nil || resp.Header.GetError() != nil || len(resp.Ids) != len(op.Keys) {
		s.t.Errorf("AskBatchSplit: %v %v", resp, err)
		return
	}
	version := r.meta.RegionEpoch.Version + uint64(len(op.Keys))
	start := r.meta.StartKey
	for i, key := range op.Keys {
		m := &metapb.Region{Id: resp.Ids[i].NewRegionId, StartKey: start, EndKey: key,
			RegionEpoch: &metapb.RegionEpoch{ConfVer: r.meta.RegionEpoch.ConfVer, Version: version}}
		var leader *metapb.Peer
		for j, p := range r.meta.Peers {
			np := &metapb.Peer{Id: resp.Ids[i].NewPeerIds[j], StoreId: p.StoreId, Role: p.Role}
			m.Peers = append(m.Peers, np)
			if p.Id == r.leader.Id {
				leader = np
			}
		}
		s.regions[m.Id] = &simRegion{meta: m, leader: leader}
		start = key
	}
	r.meta.StartKey, r.meta.RegionEpoch.Version = start, version
}

func epochEqual(a, b *metapb.RegionEpoch) bool {
	return a.GetConfVer() == b.GetConfVer() && a.GetVersion() == b.GetVersion()
}

func applyOperator(r *simRegion, resp *pdpb.RegionHeartbeatResponse) {
	m := r.meta
	switch {
	case resp.ChangePeer != nil:
		p := resp.ChangePeer.Peer
		switch resp.ChangePeer.ChangeType {
		case eraftpb.ConfChangeType_AddLearnerNode:
			for _, x := range m.Peers {
				if x.StoreId == p.StoreId {
					return
				}
			}
			m.Peers = append(m.Peers, &metapb.Peer{Id: p.Id, StoreId: p.StoreId, Role: metapb.PeerRole_Learner})
		case eraftpb.ConfChangeType_AddNode:
			for _, x := range m.Peers {
				if x.Id == p.Id {
					x.Role = metapb.PeerRole_Voter
				}
			}
		case eraftpb.ConfChangeType_RemoveNode:
			if p.Id == r.leader.Id {
				return // a leader does not remove itself
			}
			for i, x := range m.Peers {
				if x.Id == p.Id {
					m.Peers = append(m.Peers[:i], m.Peers[i+1:]...)
					break
				}
			}
		}
		m.RegionEpoch.ConfVer++
	case resp.TransferLeader != nil:
		for _, x := range m.Peers {
			if x.Id == resp.TransferLeader.Peer.Id && x.Role != metapb.PeerRole_Learner {
				r.leader = x
			}
		}
	}
}

func cloneRegion(m *metapb.Region) *metapb.Region {
	b, _ := m.Marshal()
	out := &metapb.Region{}
	out.Unmarshal(b)
	return out
}

// counts returns each store's regions and leaders, and the number of
// regions whose voters are not exactly want, live, on distinct stores.
func (s *sim) counts(want int) (regions, leaders map[uint64]int, wrong int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	regions, leaders = map[uint64]int{}, map[uint64]int{}
	for _, r := range s.regions {
		voters := 0
		for _, p := range r.meta.Peers {
			regions[p.StoreId]++
			if p.Role != metapb.PeerRole_Learner && s.stores[p.StoreId].alive {
				voters++
			}
		}
		if voters != want || len(r.meta.Peers) != want {
			wrong++
		}
		leaders[r.leader.StoreId]++
	}
	return regions, leaders, wrong
}

// waitFor polls cond until it holds or the deadline passes.
func (s *sim) waitFor(what string, d time.Duration, cond func() (bool, string)) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	start := time.Now()
	for {
		ok, state := cond()
		if ok {
			s.t.Logf("%s after %v: %s", what, time.Since(start).Round(100*time.Millisecond), state)
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not after %v: %s", what, d, state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func fmtCounts(m map[uint64]int) string {
	var ids []uint64
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := ""
	for _, id := range ids {
		out += fmt.Sprintf(" s%d=%d", id, m[id])
	}
	return out
}

// TestScheduling: with simulated stores, 100 one-replica regions on 3
// stores converge to 3 replicas; a 4th store gets its share of regions
// and leaders; a store down past max-store-down-time has its replicas
// replaced on the others; a store taken offline ends as a Tombstone with
// no region left on it.
func TestScheduling(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "pd.toml")
	if err := os.WriteFile(conf, []byte("[schedule]\nmax-store-down-time = \"3s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ms := startCluster(t, 1, "--config", conf)
	c := newClient(t, ms)
	raw := rawClient(t, ms[0])
	s := newSim(t, raw, c.GetClusterID(context.Background()))

	// Bootstrap with one region on store 1, then split it into 100.
	store1 := s.allocID(1)
	first := &metapb.Region{Id: s.allocID(1), RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
		Peers: []*metapb.Peer{{Id: s.allocID(1), StoreId: store1}}}
	if r, err := raw.Bootstrap(s.ctx, &pdpb.BootstrapRequest{Header: s.h,
		Store: &metapb.Store{Id: store1, Address: "127.0.0.1:20001"}, Region: first}); err != nil || r.Header.GetError() != nil {
		t.Fatalf("Bootstrap: %v %v", r, err)
	}
	const n = 100
	for i := 0; i < n; i++ {
		var start, end []byte
		if i > 0 {
			start = []byte(fmt.Sprintf("k%03d", i))
		}
		if i < n-1 {
			end = []byte(fmt.Sprintf("k%03d", i+1))
		}
		p := &metapb.Peer{Id: s.allocID(1), StoreId: store1}
		m := &metapb.Region{Id: s.allocID(1), StartKey: start, EndKey: end,
			RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 2}, Peers: []*metapb.Peer{p}}
		s.regions[m.Id] = &simRegion{meta: m, leader: p}
	}
	s.startStore(store1)
	stores := []uint64{store1, s.allocID(1), s.allocID(1)}
	s.addStore(stores[1])
	s.addStore(stores[2])

	s.waitFor("3 replicas each", 60*time.Second, func() (bool, string) {
		regions, leaders, wrong := s.counts(3)
		return wrong == 0, fmt.Sprintf("regions%s, leaders%s, %d regions not at 3 voters", fmtCounts(regions), fmtCounts(leaders), wrong)
	})

	// A fourth store gets its share, within 20% of the mean.
	stores = append(stores, s.allocID(1))
	s.addStore(stores[3])
	s.waitFor("store 4 balanced", 60*time.Second, func() (bool, string) {
		regions, leaders, wrong := s.counts(3)
		state := fmt.Sprintf("regions%s, leaders%s", fmtCounts(regions), fmtCounts(leaders))
		meanR, meanL := float64(3*n)/4, float64(n)/4
		for _, id := range stores {
			if float64(regions[id]) < 0.8*meanR || float64(regions[id]) > 1.2*meanR ||
				float64(leaders[id]) < 0.8*meanL || float64(leaders[id]) > 1.2*meanL {
				return false, state
			}
		}
		return wrong == 0, state
	})

	// A store down past max-store-down-time (3 s here) loses its replicas.
	down := stores[1]
	s.stop(down)
	s.waitFor("the down store's replicas replaced", 60*time.Second, func() (bool, string) {
		regions, leaders, wrong := s.counts(3)
		return regions[down] == 0 && wrong == 0, fmt.Sprintf("regions%s, leaders%s, %d regions not at 3 voters",
			fmtCounts(regions), fmtCounts(leaders), wrong)
	})

	// Decommissioning: a fifth store joins, then store 4 is taken offline.
	stores = append(stores, s.allocID(1))
	s.addStore(stores[4])
	gone := stores[3]
	req, _ := http.NewRequest(http.MethodDelete, fmt.Sprintf("%s/pd/api/v1/store/%d", ms[0].client, gone), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE store: %v %v", resp, err)
	}
	resp.Body.Close()
	s.waitFor("the offline store emptied and a tombstone", 60*time.Second, func() (bool, string) {
		regions, leaders, wrong := s.counts(3)
		// pd/client hides tombstones; the raw call shows the state.
		st, err := raw.GetStore(context.Background(), &pdpb.GetStoreRequest{Header: s.h, StoreId: gone})
		state := "?"
		if err == nil && st.Store != nil {
			state = st.Store.GetState().String()
		}
		return regions[gone] == 0 && wrong == 0 && state == "Tombstone",
			fmt.Sprintf("regions%s, leaders%s, %d regions not at 3 voters, store %d %s", fmtCounts(regions), fmtCounts(leaders), wrong, gone, state)
	})

	// The operators were counted, by scheduler.
	mresp, err := http.Get(ms[0].client + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`pd_operators_total{event="created",kind="replica"}`, `pd_operators_total{event="finished",kind="region"}`,
		`pd_operators_total{event="finished",kind="leader"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
