package pd_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
)

// TestSplitAndScatter asks PD for operators, as client-go's SplitRegions
// and pd-ctl's `operator add` do, with simulated stores carrying them
// out: a split at keys, a scatter of the new regions' leaders, a leader
// transfer, and the errors for what cannot be done.
func TestSplitAndScatter(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "pd.toml")
	// Leaders move only when asked: balance-leader is off.
	if err := os.WriteFile(conf, []byte("[schedule]\nleader-schedule-limit = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ms := startCluster(t, 1, "--config", conf)
	c := newClient(t, ms)
	ctx := context.Background()
	raw := rawClient(t, ms[0])
	s := newSim(t, raw, c.GetClusterID(ctx))

	store1 := s.allocID(1)
	p := &metapb.Peer{Id: s.allocID(1), StoreId: store1}
	first := &metapb.Region{Id: s.allocID(1), RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1}, Peers: []*metapb.Peer{p}}
	if r, err := raw.Bootstrap(ctx, &pdpb.BootstrapRequest{Header: s.h,
		Store: &metapb.Store{Id: store1, Address: "127.0.0.1:20001"}, Region: first}); err != nil || r.Header.GetError() != nil {
		t.Fatalf("Bootstrap: %v %v", r, err)
	}
	s.regions[first.Id] = &simRegion{meta: cloneRegion(first), leader: p}
	s.startStore(store1)
	stores := []uint64{store1, s.allocID(1), s.allocID(1)}
	s.addStore(stores[1])
	s.addStore(stores[2])
	s.waitFor("3 replicas", 30*time.Second, func() (bool, string) {
		regions, _, wrong := s.counts(3)
		return wrong == 0, fmt.Sprintf("regions%s", fmtCounts(regions))
	})

	// Split into 9 at 8 keys, given out of order and one twice.
	var keys [][]byte
	for _, i := range []int{5, 1, 2, 3, 4, 8, 6, 7, 3} {
		keys = append(keys, []byte(fmt.Sprintf("k%d", i)))
	}
	split, err := c.SplitRegions(ctx, keys)
	if err != nil || split.Header.GetError() != nil {
		t.Fatalf("SplitRegions: %v %v", split, err)
	}
	if split.FinishedPercentage != 100 || len(split.RegionsId) != 8 {
		t.Fatalf("SplitRegions: %d%%, regions %v, want 100%% and 8", split.FinishedPercentage, split.RegionsId)
	}
	for _, k := range keys {
		r, err := c.GetRegion(ctx, k)
		if err != nil || r == nil || !bytes.Equal(r.Meta.StartKey, k) {
			t.Fatalf("after the split, GetRegion(%s) = %v, %v", k, r, err)
		}
	}
	// Splitting again at the same keys has nothing to do.
	again, err := c.SplitRegions(ctx, keys[:2])
	if err != nil || again.FinishedPercentage != 100 {
		t.Fatalf("SplitRegions again: %v %v", again, err)
	}

	// Every region is led from store 1; a scatter spreads the leaders.
	all := s.regionIDs()
	sc, err := c.ScatterRegions(ctx, all)
	if err != nil || sc.Header.GetError() != nil || sc.FinishedPercentage != 100 {
		t.Fatalf("ScatterRegions: %v %v", sc, err)
	}
	s.waitFor("leaders scattered", 30*time.Second, func() (bool, string) {
		_, leaders, _ := s.counts(3)
		ok := true
		for _, id := range stores {
			ok = ok && leaders[id] == 3
		}
		return ok, fmt.Sprintf("leaders%s", fmtCounts(leaders))
	})
	// As client-go waits for a scatter: until GetOperator shows no
	// scatter-region running.
	scattered := 0
	for _, id := range all {
		deadline := time.Now().Add(10 * time.Second)
		for {
			op, err := c.GetOperator(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if op.Header.GetError() != nil || string(op.Desc) != "scatter-region" {
				break // a region already in place got no scatter operator
			}
			if op.Status != pdpb.OperatorStatus_RUNNING {
				if op.Status != pdpb.OperatorStatus_SUCCESS {
					t.Errorf("GetOperator(%d) = %s %v, want scatter-region SUCCESS", id, op.Desc, op.Status)
				}
				scattered++
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("region %d: the scatter runs after 10s", id)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if scattered != 6 {
		t.Errorf("%d regions were scattered, want 6 (9 leaders, a third stays)", scattered)
	}

	// pd-ctl's operator add transfer-leader moves one.
	target := s.leaderOf(first.Id)
	var to uint64
	for _, id := range stores {
		if id != target {
			to = id
		}
	}
	postOperator(t, ms[0], fmt.Sprintf(`{"name": "transfer-leader", "region_id": %d, "to_store_id": %d}`, first.Id, to), http.StatusOK)
	s.waitFor("leader transferred", 10*time.Second, func() (bool, string) {
		return s.leaderOf(first.Id) == to, fmt.Sprintf("leader on store %d", s.leaderOf(first.Id))
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got struct{ Desc, Status string }
		getJSON(t, fmt.Sprintf("%s/pd/api/v1/operators/%d", ms[0].client, first.Id), &got)
		if got.Desc == "transfer-leader" && got.Status == "SUCCESS" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operator of region %d: %+v, want transfer-leader SUCCESS", first.Id, got)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// What cannot be done is refused and changes nothing.
	for _, bad := range []struct {
		body string
		code int
	}{
		{fmt.Sprintf(`{"name": "split-region", "region_id": %d, "keys": ["%x"]}`, split.RegionsId[0], "k1"), http.StatusBadRequest}, // at its start
		{fmt.Sprintf(`{"name": "split-region", "region_id": %d, "keys": ["zz"]}`, first.Id), http.StatusBadRequest},
		{fmt.Sprintf(`{"name": "split-region", "region_id": %d, "policy": "halfway"}`, first.Id), http.StatusBadRequest},
		{`{"name": "split-region", "region_id": 999999, "policy": "approximate"}`, http.StatusNotFound},
		{fmt.Sprintf(`{"name": "transfer-leader", "region_id": %d, "to_store_id": 999999}`, first.Id), http.StatusBadRequest},
		{fmt.Sprintf(`{"name": "merge-region", "region_id": %d}`, first.Id), http.StatusBadRequest},
	} {
		postOperator(t, ms[0], bad.body, bad.code)
	}
	if op, err := c.GetOperator(ctx, 999999); err != nil || op.Header.GetError().GetType() != pdpb.ErrorType_REGION_NOT_FOUND {
		t.Errorf("GetOperator of an unknown region: %v %v", op, err)
	}
	if got := len(s.regionIDs()); got != 9 {
		t.Errorf("%d regions after the refused operators, want 9", got)
	}
}

func postOperator(t *testing.T, m *member, body string, want int) {
	t.Helper()
	resp, err := http.Post(m.client+"/pd/api/v1/operators", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("POST operators %s: %s, want %d", body, resp.Status, want)
	}
}

func (s *sim) leaderOf(region uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.regions[region].leader.StoreId
}

func (s *sim) regionIDs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for id := range s.regions {
		out = append(out, id)
	}
	return out
}
