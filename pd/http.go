package pd

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
)

// The HTTP API, on the client URL, shaped like PD's so that people who
// know pd-ctl find their way (and `basalt pd ctl` reads it):
//
//	GET /pd/api/v1/health          every member and whether it answers
//	GET /pd/api/v1/members         members, the leader, etcd's leader
//	GET /pd/api/v1/stores          stores with their state and last heartbeat
//	GET /pd/api/v1/store/{id}      DELETE takes it offline: its regions
//	                               move away, then it is a Tombstone
//	GET /pd/api/v1/regions         regions with their leader
//	GET /pd/api/v1/region/id/{id}
//	GET /pd/api/v1/region/key/{key}   (key in hex)
//	GET /pd/api/v1/config          [schedule] and [replication]; POST a JSON
//	                               object of changes to change them
//	GET /pd/api/v1/operators       the operators under way; POST one
//	                               (pd-ctl's operator add: split-region,
//	                               scatter-region, transfer-leader)
//	GET /pd/api/v1/operators/{region-id}   its operator, or how the last
//	                               ended; DELETE cancels it
//	GET /pd/api/v1/schedulers      the balance schedulers that run; POST
//	                               {"name": ...} adds one, DELETE
//	                               /schedulers/{name} removes one
//
// The directory lives on the leader: a follower redirects (307) there.

const apiPrefix = "/pd/api/v1/"

type httpAPI struct{ s *Server }

// storeJSON is one store as /stores shows it.
type storeJSON struct {
	Store  *metapb.Store `json:"store"`
	Status storeStatus   `json:"status"`
}

type storeStatus struct {
	StateName       string    `json:"state_name"`
	LastHeartbeatTS time.Time `json:"last_heartbeat_ts"`
	RegionCount     int       `json:"region_count"`
	LeaderCount     int       `json:"leader_count"`
}

// regionJSON is one region as /regions shows it.
type regionJSON struct {
	ID          uint64              `json:"id"`
	StartKey    string              `json:"start_key"`
	EndKey      string              `json:"end_key"`
	RegionEpoch *metapb.RegionEpoch `json:"epoch"`
	Peers       []*metapb.Peer      `json:"peers"`
	Leader      *metapb.Peer        `json:"leader,omitempty"`
	Size        uint64              `json:"approximate_size"`
	Keys        uint64              `json:"approximate_keys"`
	// What the region's leader last reported written and read over one
	// heartbeat interval, as PD's API shows it.
	WrittenBytes uint64 `json:"written_bytes"`
	WrittenKeys  uint64 `json:"written_keys"`
	ReadBytes    uint64 `json:"read_bytes"`
	ReadKeys     uint64 `json:"read_keys"`
}

func (h *httpAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.s.ready.Load() {
		http.Error(w, "PD is starting", http.StatusServiceUnavailable)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, apiPrefix)
	deleteStore := r.Method == http.MethodDelete && strings.HasPrefix(path, "store/")
	postConfig := r.Method == http.MethodPost && path == "config"
	postScheduler := r.Method == http.MethodPost && path == "schedulers"
	deleteScheduler := r.Method == http.MethodDelete && strings.HasPrefix(path, "schedulers/")
	postOperator := r.Method == http.MethodPost && path == "operators"
	deleteOperator := r.Method == http.MethodDelete && strings.HasPrefix(path, "operators/")
	if r.Method != http.MethodGet && !deleteStore && !postConfig && !postScheduler && !deleteScheduler && !postOperator && !deleteOperator {
		http.Error(w, "only GET, DELETE of a store, a scheduler or an operator, and POST of the config, a scheduler or an operator are served", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	switch path {
	case "health":
		h.health(ctx, w)
		return
	case "members":
		h.members(ctx, w)
		return
	}
	if !h.s.IsLeader() {
		h.redirect(ctx, w, r)
		return
	}
	cl := h.s.cl
	switch {
	case path == "config" && postConfig:
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c, err := h.s.updateConfig(ctx, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, c)
	case path == "config":
		writeJSON(w, h.s.conf.get())
	case postOperator:
		h.addOperator(w, r)
	case path == "operators":
		writeJSON(w, cl.operators())
	case strings.HasPrefix(path, "operators/"):
		id, err := strconv.ParseUint(strings.TrimPrefix(path, "operators/"), 10, 64)
		if err != nil {
			http.Error(w, "bad region ID", http.StatusBadRequest)
			return
		}
		if deleteOperator {
			if !cl.cancelOperator(id) {
				http.Error(w, "the region has no operator", http.StatusNotFound)
				return
			}
			writeJSON(w, "The operator is canceled.")
			return
		}
		op, ok := cl.getOperator(id)
		if !ok {
			http.Error(w, "the region has had no operator", http.StatusNotFound)
			return
		}
		writeJSON(w, map[string]any{"region_id": id, "desc": op.desc, "kind": op.kind.String(), "status": op.status.String()})
	case postScheduler || deleteScheduler:
		name := strings.TrimPrefix(path, "schedulers/")
		if postScheduler {
			var req struct {
				Name string `json:"name"`
			}
			if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
				http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
				return
			}
			name = req.Name
		}
		list, err := h.s.setScheduler(ctx, name, postScheduler)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, list)
	case path == "schedulers":
		writeJSON(w, h.s.conf.get().schedulers())
	case path == "stores":
		stores := h.stores()
		writeJSON(w, map[string]any{"count": len(stores), "stores": stores})
	case strings.HasPrefix(path, "store/"):
		id, err := strconv.ParseUint(strings.TrimPrefix(path, "store/"), 10, 64)
		if err != nil {
			http.Error(w, "bad store ID", http.StatusBadRequest)
			return
		}
		if deleteStore {
			// Take the store offline: its regions move away, then it is
			// a Tombstone.
			if err := cl.setStoreOffline(ctx, id); err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			writeJSON(w, "The store is set as Offline.")
			return
		}
		for _, st := range h.stores() {
			if st.Store.Id == id {
				writeJSON(w, st)
				return
			}
		}
		http.Error(w, "store not found", http.StatusNotFound)
	case path == "regions":
		cl.mu.RLock()
		var out []regionJSON
		for _, ri := range cl.regions.sorted {
			out = append(out, toRegionJSON(ri))
		}
		cl.mu.RUnlock()
		writeJSON(w, map[string]any{"count": len(out), "regions": out})
	case strings.HasPrefix(path, "region/id/"):
		id, err := strconv.ParseUint(strings.TrimPrefix(path, "region/id/"), 10, 64)
		if err != nil {
			http.Error(w, "bad region ID", http.StatusBadRequest)
			return
		}
		h.region(w, cl.region(func(t *regionTree) *regionInfo { return t.byID[id] }))
	case strings.HasPrefix(path, "region/key/"):
		key, err := hex.DecodeString(strings.TrimPrefix(path, "region/key/"))
		if err != nil {
			http.Error(w, "the key must be hex", http.StatusBadRequest)
			return
		}
		h.region(w, cl.region(func(t *regionTree) *regionInfo { return t.search(key) }))
	default:
		http.NotFound(w, r)
	}
}

func (h *httpAPI) region(w http.ResponseWriter, ri *regionInfo) {
	if ri == nil {
		http.Error(w, "region not found", http.StatusNotFound)
		return
	}
	writeJSON(w, toRegionJSON(ri))
}

func toRegionJSON(ri *regionInfo) regionJSON {
	return regionJSON{ID: ri.meta.Id, StartKey: hex.EncodeToString(ri.meta.StartKey), EndKey: hex.EncodeToString(ri.meta.EndKey),
		RegionEpoch: ri.meta.RegionEpoch, Peers: ri.meta.Peers, Leader: ri.leader,
		Size: ri.approximateSize, Keys: ri.approximateKeys, WrittenBytes: ri.bytesWritten,
		WrittenKeys: ri.keysWritten, ReadBytes: ri.bytesRead, ReadKeys: ri.keysRead}
}

// stores lists the stores with their region and leader counts.
func (h *httpAPI) stores() []storeJSON {
	cl := h.s.cl
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	regions, leaders := cl.regions.peers, cl.regions.leaders
	var out []storeJSON
	for _, st := range cl.allStoresLocked(false) {
		info := cl.stores[st.Id]
		out = append(out, storeJSON{Store: st, Status: storeStatus{StateName: h.stateName(st, info.lastHeartbeat),
			LastHeartbeatTS: info.lastHeartbeat, RegionCount: regions[st.Id], LeaderCount: leaders[st.Id]}})
	}
	return out
}

// disconnectedAfter is how long without a heartbeat makes a store
// Disconnected, as PD shows it; max-store-down-time makes it Down.
const disconnectedAfter = 20 * time.Second

// stateName is a store's state as PD shows it: Up, Disconnected and Down
// by heartbeat age, or Offline, Tombstone.
func (h *httpAPI) stateName(st *metapb.Store, lastHeartbeat time.Time) string {
	if st.GetState() != metapb.StoreState_Up {
		return st.GetState().String()
	}
	switch age := time.Since(lastHeartbeat); {
	case age > h.s.conf.get().Schedule.MaxStoreDownTime.Duration:
		return "Down"
	case age > disconnectedAfter:
		return "Disconnected"
	}
	return "Up"
}

func (h *httpAPI) health(ctx context.Context, w http.ResponseWriter) {
	members, err := h.s.members(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	type health struct {
		Name       string   `json:"name"`
		MemberID   uint64   `json:"member_id"`
		ClientURLs []string `json:"client_urls"`
		Health     bool     `json:"health"`
	}
	var out []health
	for _, m := range members {
		ok := len(m.ClientUrls) > 0 && reachable(m.ClientUrls[0])
		out = append(out, health{Name: m.Name, MemberID: m.MemberId, ClientURLs: m.ClientUrls, Health: ok})
	}
	writeJSON(w, out)
}

func (h *httpAPI) members(ctx context.Context, w http.ResponseWriter) {
	resp, err := (&grpcService{s: h.s}).GetMembers(ctx, &pdpb.GetMembersRequest{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, map[string]any{"header": map[string]uint64{"cluster_id": h.s.clusterID},
		"members": resp.Members, "leader": resp.Leader, "etcd_leader": resp.EtcdLeader})
}

// redirect sends a request for the directory to the leader.
func (h *httpAPI) redirect(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	l, err := h.s.leaderMember(ctx)
	if err != nil || l == nil || len(l.ClientUrls) == 0 || l.MemberId == h.s.memberID {
		http.Error(w, "no leader", http.StatusServiceUnavailable)
		return
	}
	http.Redirect(w, r, strings.TrimSuffix(l.ClientUrls[0], "/")+r.URL.RequestURI(), http.StatusTemporaryRedirect)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// addOperator serves POST /operators: {"name": "split-region",
// "region_id": N, "policy": "approximate"|"scan"|"usekey", "keys": [hex,
// ...]}, {"name": "scatter-region", "region_id": N} or {"name":
// "transfer-leader", "region_id": N, "to_store_id": M}.
func (h *httpAPI) addOperator(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name      string   `json:"name"`
		RegionID  uint64   `json:"region_id"`
		Policy    string   `json:"policy"`
		Keys      []string `json:"keys"`
		ToStoreID uint64   `json:"to_store_id"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	cl := h.s.cl
	var err error
	switch req.Name {
	case descSplit:
		var keys [][]byte
		for _, k := range req.Keys {
			b, herr := hex.DecodeString(k)
			if herr != nil {
				http.Error(w, "keys: the keys must be hex", http.StatusBadRequest)
				return
			}
			keys = append(keys, b)
		}
		policy, ok := pdpb.CheckPolicy_value[strings.ToUpper(req.Policy)]
		switch {
		case req.Policy == "" && len(keys) > 0:
			policy = int32(pdpb.CheckPolicy_USEKEY)
		case req.Policy == "":
			policy = int32(pdpb.CheckPolicy_SCAN)
		case !ok:
			http.Error(w, "policy: want approximate, scan or usekey, not "+strconv.Quote(req.Policy), http.StatusBadRequest)
			return
		}
		if (pdpb.CheckPolicy(policy) == pdpb.CheckPolicy_USEKEY) != (len(keys) > 0) {
			http.Error(w, "keys: give keys with policy usekey, and only then", http.StatusBadRequest)
			return
		}
		err = cl.splitAt(req.RegionID, pdpb.CheckPolicy(policy), keys)
	case descScatter:
		_, err = cl.scatter(req.RegionID)
	case descTransferLeader:
		err = cl.transferLeader(req.RegionID, req.ToStoreID)
	default:
		http.Error(w, "name: want split-region, scatter-region or transfer-leader, not "+strconv.Quote(req.Name), http.StatusBadRequest)
		return
	}
	switch {
	case errors.Is(err, errRegionNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		writeJSON(w, "The operator is created.")
	}
}
