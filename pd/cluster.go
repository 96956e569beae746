package pd

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// cluster is the leader's directory of the cluster: its metadata (after
// Bootstrap), its stores and its regions, each saved in etcd as it
// changes and loaded by a new leader, plus what only heartbeats say (store
// stats, region leaders and sizes), kept in memory.
type cluster struct {
	s  *Server
	mu sync.RWMutex
	// meta is nil until the cluster is bootstrapped.
	meta    *metapb.Cluster
	stores  map[uint64]*storeInfo
	regions *regionTree
	// ops are the operators under way, by region (schedule.go); ended
	// how each region's last one ended (admin.go).
	ops   map[uint64]*operator
	ended map[uint64]endedOp
}

// storeInfo is a store and what its heartbeats said.
type storeInfo struct {
	meta          *metapb.Store
	stats         *pdpb.StoreStats
	lastHeartbeat time.Time
}

func newCluster(s *Server) *cluster {
	return &cluster{s: s, stores: map[uint64]*storeInfo{}, regions: newRegionTree(), ops: map[uint64]*operator{}, ended: map[uint64]endedOp{}}
}

func (c *cluster) metaKey() string           { return c.s.rootPath + "/raft" }
func (c *cluster) storeKey(id uint64) string { return fmt.Sprintf("%s/raft/s/%020d", c.s.rootPath, id) }
func (c *cluster) regionKey(id uint64) string {
	return fmt.Sprintf("%s/raft/r/%020d", c.s.rootPath, id)
}
func (c *cluster) storePrefix() string  { return c.s.rootPath + "/raft/s/" }
func (c *cluster) regionPrefix() string { return c.s.rootPath + "/raft/r/" }
func (c *cluster) bootstrapped() bool   { c.mu.RLock(); defer c.mu.RUnlock(); return c.meta != nil }
func marshal(m interface{ Marshal() ([]byte, error) }) string {
	b, err := m.Marshal()
	if err != nil {
		panic(err) // generated messages always marshal
	}
	return string(b)
}

// load reads the directory from etcd, for a new leader.
func (c *cluster) load(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.meta, c.stores, c.regions, c.ops, c.ended = nil, map[uint64]*storeInfo{}, newRegionTree(), map[uint64]*operator{}, map[uint64]endedOp{}
	resp, err := c.s.client.Get(ctx, c.metaKey())
	if err != nil {
		return err
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	meta := &metapb.Cluster{}
	if err := meta.Unmarshal(resp.Kvs[0].Value); err != nil {
		return err
	}
	c.meta = meta
	if resp, err = c.s.client.Get(ctx, c.storePrefix(), clientv3.WithPrefix()); err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		st := &metapb.Store{}
		if err := st.Unmarshal(kv.Value); err != nil {
			return err
		}
		// A store counts as heard from when leadership changes hands,
		// so that it is not taken for down at once.
		c.stores[st.Id] = &storeInfo{meta: st, lastHeartbeat: time.Now()}
	}
	if resp, err = c.s.client.Get(ctx, c.regionPrefix(), clientv3.WithPrefix()); err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		r := &metapb.Region{}
		if err := r.Unmarshal(kv.Value); err != nil {
			return err
		}
		c.regions.put(&regionInfo{meta: r})
	}
	return nil
}

// bootstrap records the cluster's first store and region, once.
func (c *cluster) bootstrap(ctx context.Context, store *metapb.Store, region *metapb.Region) (*pdpb.Error, error) {
	switch {
	case store == nil || store.Id == 0:
		return &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: "bootstrap: missing store or store ID 0"}, nil
	case region == nil || region.Id == 0 || len(region.StartKey) != 0 || len(region.EndKey) != 0:
		return &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: "bootstrap: the first region must have an ID and empty start and end keys"}, nil
	case len(region.Peers) != 1 || region.Peers[0].Id == 0 || region.Peers[0].StoreId != store.Id:
		return &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: "bootstrap: the first region must have one peer, on the bootstrapping store"}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	meta := &metapb.Cluster{Id: c.s.clusterID, MaxPeerCount: uint32(c.s.conf.get().Replication.MaxReplicas)}
	key, rev := c.s.leader.term()
	if key == "" {
		return nil, errNotLeader
	}
	resp, err := c.s.client.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(key), "=", rev),
		clientv3.Compare(clientv3.CreateRevision(c.metaKey()), "=", 0),
	).Then(
		clientv3.OpPut(c.metaKey(), marshal(meta)),
		clientv3.OpPut(c.storeKey(store.Id), marshal(store)),
		clientv3.OpPut(c.regionKey(region.Id), marshal(region)),
	).Commit()
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		if c.meta != nil {
			return &pdpb.Error{Type: pdpb.ErrorType_ALREADY_BOOTSTRAPPED, Message: "cluster is already bootstrapped"}, nil
		}
		return nil, errNotLeader
	}
	c.meta = meta
	c.stores[store.Id] = &storeInfo{meta: store, lastHeartbeat: time.Now()}
	c.regions.put(&regionInfo{meta: region, leader: region.Peers[0]})
	return nil, nil
}

// putStore adds or updates a store, refusing a tombstone and an address
// another live store has.
func (c *cluster) putStore(ctx context.Context, st *metapb.Store) (*pdpb.Error, error) {
	if st == nil || st.Id == 0 {
		return &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: "put store: missing store or store ID 0"}, nil
	}
	if st.Address == "" {
		return &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: fmt.Sprintf("put store: store %d has no address", st.Id)}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, other := range c.stores {
		if id == st.Id || other.meta.GetState() == metapb.StoreState_Tombstone {
			continue
		}
		if other.meta.Address == st.Address || (st.PeerAddress != "" && other.meta.PeerAddress == st.PeerAddress) {
			return &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN,
				Message: fmt.Sprintf("duplicated store address: %s, already registered by store %d", st.Address, id)}, nil
		}
	}
	st = cloneStore(st)
	if old, ok := c.stores[st.Id]; ok {
		if old.meta.GetState() == metapb.StoreState_Tombstone {
			return &pdpb.Error{Type: pdpb.ErrorType_STORE_TOMBSTONE,
				Message: fmt.Sprintf("store %d has been removed", st.Id)}, nil
		}
		// The state is PD's to change (offline, tombstone), not the store's.
		st.State, st.NodeState = old.meta.State, old.meta.NodeState
	} else {
		st.State, st.NodeState = metapb.StoreState_Up, metapb.NodeState_Serving
	}
	if err := c.s.leaderTxn(ctx, clientv3.OpPut(c.storeKey(st.Id), marshal(st))); err != nil {
		return nil, err
	}
	info := c.stores[st.Id]
	if info == nil {
		info = &storeInfo{}
		c.stores[st.Id] = info
	}
	info.meta, info.lastHeartbeat = st, time.Now()
	return nil, nil
}

func cloneStore(st *metapb.Store) *metapb.Store {
	out := &metapb.Store{}
	if err := out.Unmarshal([]byte(marshal(st))); err != nil {
		panic(err)
	}
	return out
}

// getStore returns the store and its last heartbeat's stats, or nils.
func (c *cluster) getStore(id uint64) (*metapb.Store, *pdpb.StoreStats) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if info, ok := c.stores[id]; ok {
		return info.meta, info.stats
	}
	return nil, nil
}

func (c *cluster) allStores(excludeTombstone bool) []*metapb.Store {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.allStoresLocked(excludeTombstone)
}

func (c *cluster) allStoresLocked(excludeTombstone bool) []*metapb.Store {
	out := make([]*metapb.Store, 0, len(c.stores))
	for _, info := range c.stores {
		if excludeTombstone && info.meta.GetState() == metapb.StoreState_Tombstone {
			continue
		}
		out = append(out, info.meta)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out
}

// setStoreOffline starts removing a store: its regions move away (the
// replica checker treats it as unhealthy), then it becomes a Tombstone
// (tombstoneEmptyLocked). Offline or Tombstone already is a no-op.
func (c *cluster) setStoreOffline(ctx context.Context, id uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.stores[id]
	if !ok {
		return fmt.Errorf("store %d not found", id)
	}
	if info.meta.GetState() != metapb.StoreState_Up {
		return nil
	}
	return c.setStateLocked(ctx, info, metapb.StoreState_Offline, metapb.NodeState_Removing)
}

func (c *cluster) setStateLocked(ctx context.Context, info *storeInfo, state metapb.StoreState, node metapb.NodeState) error {
	st := cloneStore(info.meta)
	st.State, st.NodeState = state, node
	if err := c.s.leaderTxn(ctx, clientv3.OpPut(c.storeKey(st.Id), marshal(st))); err != nil {
		return err
	}
	info.meta = st
	c.s.log.Info("pd: store state", "store", st.Id, "state", state.String())
	return nil
}

// tombstoneEmptyLocked makes an Offline store that holds no peer left a
// Tombstone.
func (c *cluster) tombstoneEmptyLocked(ctx context.Context, info *storeInfo) error {
	if info.meta.GetState() != metapb.StoreState_Offline {
		return nil
	}
	if c.regions.peers[info.meta.Id] > 0 {
		return nil
	}
	return c.setStateLocked(ctx, info, metapb.StoreState_Tombstone, metapb.NodeState_Removed)
}

// storeHeartbeat records a store's stats.
func (c *cluster) storeHeartbeat(stats *pdpb.StoreStats) *pdpb.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.stores[stats.GetStoreId()]
	if !ok {
		return &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: fmt.Sprintf("invalid store ID %d, not found", stats.GetStoreId())}
	}
	if info.meta.GetState() == metapb.StoreState_Tombstone {
		return &pdpb.Error{Type: pdpb.ErrorType_STORE_TOMBSTONE, Message: fmt.Sprintf("store %d has been removed", info.meta.Id)}
	}
	info.stats, info.lastHeartbeat = stats, time.Now()
	if err := c.tombstoneEmptyLocked(c.s.ctx, info); err != nil {
		c.s.log.Warn("pd: tombstone store", "store", info.meta.Id, "err", err)
	}
	return nil
}

// regionHeartbeat applies a region's heartbeat to the directory, unless
// it is stale: an epoch older than what is known of the region, or than
// an overlapping region's version. A changed region is saved.
func (c *cluster) regionHeartbeat(ctx context.Context, req *pdpb.RegionHeartbeatRequest) (applied bool, _ *pdpb.Error, _ error) {
	r := req.GetRegion()
	switch {
	case r == nil || r.Id == 0 || len(r.Peers) == 0:
		return false, &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: "invalid region heartbeat: no region, region ID 0 or no peers"}, nil
	case req.GetLeader() == nil:
		return false, &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: fmt.Sprintf("invalid region heartbeat: region %d has no leader", r.Id)}, nil
	}
	if st, _ := c.getStore(req.Leader.StoreId); st == nil {
		return false, &pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: fmt.Sprintf("invalid store ID %d, not found", req.Leader.StoreId)}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	info := &regionInfo{meta: r, leader: req.Leader, downPeers: req.DownPeers, pendingPeers: req.PendingPeers,
		approximateSize: req.ApproximateSize, approximateKeys: req.ApproximateKeys,
		bytesWritten: req.BytesWritten, bytesRead: req.BytesRead, keysWritten: req.KeysWritten,
		keysRead: req.KeysRead, term: req.Term}
	if old := c.regions.byID[r.Id]; old != nil {
		if stale(r.RegionEpoch, old.meta.RegionEpoch) || (req.Term != 0 && req.Term < old.term) {
			return false, nil, nil // a stale heartbeat is ignored
		}
	}
	for _, o := range c.regions.overlaps(r.StartKey, r.EndKey) {
		if o.meta.Id != r.Id && r.GetRegionEpoch().GetVersion() < o.meta.GetRegionEpoch().GetVersion() {
			return false, nil, nil
		}
	}
	old := c.regions.byID[r.Id]
	changed := old == nil || !sameRegion(old.meta, r)
	if changed {
		ops := []clientv3.Op{clientv3.OpPut(c.regionKey(r.Id), marshal(r))}
		for _, o := range c.regions.overlaps(r.StartKey, r.EndKey) {
			if o.meta.Id != r.Id {
				ops = append(ops, clientv3.OpDelete(c.regionKey(o.meta.Id)))
			}
		}
		if err := c.s.leaderTxn(ctx, ops...); err != nil {
			return false, nil, err
		}
		// The regions r replaces are gone, with what was kept of their
		// operators.
		for _, o := range c.regions.overlaps(r.StartKey, r.EndKey) {
			if o.meta.Id != r.Id {
				delete(c.ops, o.meta.Id)
				delete(c.ended, o.meta.Id)
			}
		}
	}
	c.regions.put(info)
	return true, nil, nil
}

// stale reports an epoch older than the known one in either part.
func stale(e, known *metapb.RegionEpoch) bool {
	return e.GetVersion() < known.GetVersion() || e.GetConfVer() < known.GetConfVer()
}

func sameRegion(a, b *metapb.Region) bool { return marshal(a) == marshal(b) }

// regionInfo is a region and what its leader's heartbeats said.
type regionInfo struct {
	meta                             *metapb.Region
	leader                           *metapb.Peer
	downPeers                        []*pdpb.PeerStats
	pendingPeers                     []*metapb.Peer
	approximateSize, approximateKeys uint64
	bytesWritten, bytesRead          uint64
	keysWritten, keysRead            uint64
	term                             uint64
}

// regionTree indexes regions by ID and, sorted, by start key, and counts
// each store's peers and leaders (what scheduling and /stores read on
// every heartbeat). Ranges never overlap, so every lookup by key is a
// binary search.
type regionTree struct {
	byID    map[uint64]*regionInfo
	sorted  []*regionInfo  // by start key
	peers   map[uint64]int // store ID → peers on it
	leaders map[uint64]int // store ID → leaders on it
}

func newRegionTree() *regionTree {
	return &regionTree{byID: map[uint64]*regionInfo{}, peers: map[uint64]int{}, leaders: map[uint64]int{}}
}

// put adds r, replacing the regions it overlaps (and its own older copy).
func (t *regionTree) put(r *regionInfo) {
	if old := t.byID[r.meta.Id]; old != nil {
		t.remove(old)
	}
	for _, o := range t.overlaps(r.meta.StartKey, r.meta.EndKey) {
		t.remove(o)
	}
	i := t.firstAtOrAfter(r.meta.StartKey)
	t.sorted = append(t.sorted, nil)
	copy(t.sorted[i+1:], t.sorted[i:])
	t.sorted[i] = r
	t.byID[r.meta.Id] = r
	t.count(r, 1)
}

func (t *regionTree) remove(r *regionInfo) {
	delete(t.byID, r.meta.Id)
	if i := t.firstAtOrAfter(r.meta.StartKey); i < len(t.sorted) && t.sorted[i] == r {
		t.sorted = append(t.sorted[:i], t.sorted[i+1:]...)
	}
	t.count(r, -1)
}

func (t *regionTree) count(r *regionInfo, d int) {
	for _, p := range r.meta.Peers {
		t.peers[p.StoreId] += d
	}
	if r.leader != nil {
		t.leaders[r.leader.StoreId] += d
	}
}

// firstAtOrAfter is the index of the first region starting at or after key.
func (t *regionTree) firstAtOrAfter(key []byte) int {
	return sort.Search(len(t.sorted), func(i int) bool { return bytes.Compare(t.sorted[i].meta.StartKey, key) >= 0 })
}

// first is the index of the first region that holds key or starts after it.
func (t *regionTree) first(key []byte) int {
	i := sort.Search(len(t.sorted), func(i int) bool { return bytes.Compare(t.sorted[i].meta.StartKey, key) > 0 })
	if i > 0 {
		if r := t.sorted[i-1]; len(r.meta.EndKey) == 0 || bytes.Compare(key, r.meta.EndKey) < 0 {
			return i - 1
		}
	}
	return i
}

// overlaps returns the regions that share keys with [start, end) (an
// empty end is the end of the keyspace).
func (t *regionTree) overlaps(start, end []byte) []*regionInfo {
	return t.scan(start, end, 0)
}

// search returns the region holding key, or nil.
func (t *regionTree) search(key []byte) *regionInfo {
	if i := t.first(key); i < len(t.sorted) && bytes.Compare(t.sorted[i].meta.StartKey, key) <= 0 {
		return t.sorted[i]
	}
	return nil
}

// prev returns the region just before the one holding key (whose end is
// its start), or nil.
func (t *regionTree) prev(key []byte) *regionInfo {
	i := t.first(key)
	if i == 0 || i >= len(t.sorted) || bytes.Compare(t.sorted[i].meta.StartKey, key) > 0 {
		return nil
	}
	if p := t.sorted[i-1]; bytes.Equal(p.meta.EndKey, t.sorted[i].meta.StartKey) {
		return p
	}
	return nil
}

// scan returns up to limit regions (all if limit is 0) from the one
// holding start, stopping before end (empty: no end).
func (t *regionTree) scan(start, end []byte, limit int) []*regionInfo {
	var out []*regionInfo
	for i := t.first(start); i < len(t.sorted); i++ {
		r := t.sorted[i]
		if len(end) > 0 && bytes.Compare(r.meta.StartKey, end) >= 0 {
			break
		}
		out = append(out, r)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out
}

func (c *cluster) region(fn func(t *regionTree) *regionInfo) *regionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return fn(c.regions)
}
