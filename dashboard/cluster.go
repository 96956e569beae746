package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
)

// ClusterInfo is what PD reports of the cluster's stores.
type ClusterInfo struct {
	PD     string         `json:"pd"` // the member that answered
	Stores []ClusterStore `json:"stores"`
	Err    string         `json:"error,omitempty"`
}

// ClusterStore is one storage node as PD sees it.
type ClusterStore struct {
	ID      uint64 `json:"id"`
	Address string `json:"address"`
	State   string `json:"state"`
	Regions int    `json:"regions"`
	Leaders int    `json:"leaders"`
}

// cluster asks the PD members in turn for their stores (PD's HTTP API,
// GET /pd/api/v1/stores) until one answers.
func cluster(ctx context.Context, pds []string) *ClusterInfo {
	var last error
	for _, pd := range pds {
		stores, err := pdStores(ctx, pd)
		if err != nil {
			last = err
			continue
		}
		return &ClusterInfo{PD: pd, Stores: stores}
	}
	return &ClusterInfo{Stores: []ClusterStore{}, Err: last.Error()}
}

func pdStores(ctx context.Context, pd string) ([]ClusterStore, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pd+"/pd/api/v1/stores", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("PD %s: %s", pd, resp.Status)
	}
	var list struct {
		Stores []struct {
			Store struct {
				ID      uint64 `json:"id"`
				Address string `json:"address"`
			} `json:"store"`
			Status struct {
				StateName   string `json:"state_name"`
				RegionCount int    `json:"region_count"`
				LeaderCount int    `json:"leader_count"`
			} `json:"status"`
		} `json:"stores"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("PD %s: %w", pd, err)
	}
	out := []ClusterStore{}
	for _, s := range list.Stores {
		out = append(out, ClusterStore{ID: s.Store.ID, Address: s.Store.Address, State: s.Status.StateName,
			Regions: s.Status.RegionCount, Leaders: s.Status.LeaderCount})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
