package pd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
)

// Operators asked for rather than scheduled: a split at given keys
// (pdpb SplitRegions, what client-go's SplitRegions and TiDB's SPLIT TABLE
// call), a scatter (ScatterRegion), and what pd-ctl's `operator add`
// posts to /pd/api/v1/operators. Such an operator takes the place of any
// the schedulers had made for the region and is pushed at once on the
// heartbeat stream of the store that leads the region, as PD's hbStreams
// do, rather than waiting for the region's next heartbeat (a minute, on
// TiKV's defaults).

// Operator descriptions, as PD names them (GetOperator's desc).
const (
	descSplit          = "split-region"
	descScatter        = "scatter-region"
	descTransferLeader = "transfer-leader"
)

// errRegionNotFound is a region ID or key the directory does not know.
var errRegionNotFound = errors.New("region not found")

// heartbeatStreams are the region heartbeat streams, by the store whose
// heartbeats last came on each.
type heartbeatStreams struct {
	mu      sync.Mutex
	byStore map[uint64]*heartbeatStream
}

// heartbeatStream is one RegionHeartbeat stream: its handler and the
// operators pushed to it both send, one at a time.
type heartbeatStream struct {
	mu     sync.Mutex
	stream pdpb.PD_RegionHeartbeatServer
}

func (h *heartbeatStream) send(resp *pdpb.RegionHeartbeatResponse) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stream.Send(resp)
}

// bind records that store's heartbeats come on h.
func (hs *heartbeatStreams) bind(store uint64, h *heartbeatStream) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.byStore == nil {
		hs.byStore = map[uint64]*heartbeatStream{}
	}
	hs.byStore[store] = h
}

// unbind forgets h, which ended.
func (hs *heartbeatStreams) unbind(h *heartbeatStream) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for id, x := range hs.byStore {
		if x == h {
			delete(hs.byStore, id)
		}
	}
}

func (hs *heartbeatStreams) get(store uint64) *heartbeatStream {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.byStore[store]
}

// endedOp is how a region's last operator ended, for GetOperator, and
// when (adminHold).
type endedOp struct {
	desc   string
	kind   opKind
	status pdpb.OperatorStatus
	at     time.Time
}

// adminHold: for this long after an admin operator that places a region
// (a transfer-leader or a scatter asked for; not a split) carried out its
// step, the balance schedulers leave that region alone; the replica
// checker does not.
//
// PD's balance-leader tolerates a difference of about ten leaders between
// two stores (leaderTolerantSizeRatio, 5, on either side), so a leader
// moved by pd-ctl's `operator add transfer-leader` stays where it was
// put; ours balances to within one leader, and without the hold moved
// such a leader back at the new leader's first heartbeat, tens of
// milliseconds after the move (the new leader reports at once). Other
// regions may still move to make up for it.
const adminHold = 10 * time.Minute

// heldLocked says whether region id is in its adminHold. The caller holds
// c.mu.
func (c *cluster) heldLocked(id uint64, now time.Time) bool {
	e, ok := c.ended[id]
	return ok && e.kind == opAdmin && e.desc != descSplit && e.status == pdpb.OperatorStatus_SUCCESS && now.Sub(e.at) < adminHold
}

// endOpLocked ends the region's operator under way with status (counted
// under event) and keeps the outcome for GetOperator.
func (c *cluster) endOpLocked(id uint64, status pdpb.OperatorStatus) {
	op, ok := c.ops[id]
	if !ok {
		return
	}
	event := map[pdpb.OperatorStatus]string{pdpb.OperatorStatus_SUCCESS: "finished", pdpb.OperatorStatus_TIMEOUT: "timeout",
		pdpb.OperatorStatus_CANCEL: "canceled", pdpb.OperatorStatus_REPLACE: "replaced"}[status]
	operatorEvents.WithLabelValues(op.kind.String(), event).Inc()
	c.ended[id] = endedOp{desc: op.describe(), kind: op.kind, status: status, at: time.Now()}
	delete(c.ops, id)
}

// addAdminOperator gives region id the step build makes (nil: nothing
// to do) in place of any operator under way, and sends it to the store
// that leads the region. It reports whether there was a step.
func (c *cluster) addAdminOperator(id uint64, desc string, build func(r *regionInfo, v *schedView) (*step, error)) (bool, error) {
	c.mu.Lock()
	r := c.regions.byID[id]
	if r == nil {
		c.mu.Unlock()
		return false, errRegionNotFound
	}
	if r.leader == nil {
		c.mu.Unlock()
		return false, fmt.Errorf("region %d has no leader", id)
	}
	now := time.Now()
	s, err := build(r, c.viewLocked(now))
	if err != nil || s == nil {
		c.mu.Unlock()
		return false, err
	}
	c.endOpLocked(id, pdpb.OperatorStatus_REPLACE)
	c.ops[id] = &operator{step: s, kind: opAdmin, desc: desc, epoch: *r.meta.GetRegionEpoch(), leader: r.leader.Id, created: now}
	operatorEvents.WithLabelValues(opAdmin.String(), "created").Inc()
	resp := s.response(r.meta)
	resp.Header, resp.TargetPeer = &pdpb.ResponseHeader{ClusterId: c.s.clusterID}, r.leader
	store := r.leader.StoreId
	c.mu.Unlock()
	if h := c.s.hbStreams.get(store); h != nil {
		// A failed send leaves the operator to the region's next
		// heartbeat, on whatever stream it comes.
		_ = h.send(resp)
	}
	return true, nil
}

// getOperator is the region's operator under way, or how its last one
// ended.
func (c *cluster) getOperator(id uint64) (endedOp, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if op, ok := c.ops[id]; ok {
		return endedOp{desc: op.describe(), kind: op.kind, status: pdpb.OperatorStatus_RUNNING}, true
	}
	e, ok := c.ended[id]
	return e, ok
}

// cancelOperator ends the region's operator under way, if any.
func (c *cluster) cancelOperator(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ops[id]; !ok {
		return false
	}
	c.endOpLocked(id, pdpb.OperatorStatus_CANCEL)
	return true
}

// splitAt makes region id split at keys (policy USEKEY), or by policy
// when keys is empty.
func (c *cluster) splitAt(id uint64, policy pdpb.CheckPolicy, keys [][]byte) error {
	// A store splits at keys in order, each once.
	keys = slices.Clone(keys)
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	_, err := c.addAdminOperator(id, descSplit, func(r *regionInfo, _ *schedView) (*step, error) {
		for _, k := range keys {
			if !inRegion(r.meta, k) || bytes.Equal(k, r.meta.StartKey) {
				return nil, fmt.Errorf("split key %x is not inside region %d", k, id)
			}
		}
		return &step{split: &pdpb.SplitRegion{Policy: policy, Keys: keys}}, nil
	})
	return err
}

func inRegion(r *metapb.Region, key []byte) bool {
	return bytes.Compare(key, r.StartKey) >= 0 && (len(r.EndKey) == 0 || bytes.Compare(key, r.EndKey) < 0)
}

// splitWait is how long splitRegions waits for the stores to carry its
// splits out, times one more than the request's retry limit.
const splitWait = 10 * time.Second

// splitRegions splits the regions that hold keys at them, as PD's region
// splitter: keys already at a region's start are done; the others are
// grouped by region, each region gets a split operator (again, if the
// last one was overtaken by another change), and the directory is
// watched until every key starts a region or the wait ends. It returns
// the percentage of keys that start regions at the end, and the IDs of
// those regions.
func (c *cluster) splitRegions(ctx context.Context, keys [][]byte, retryLimit int) (int, []uint64) {
	if len(keys) == 0 {
		return 100, nil
	}
	deadline := time.Now().Add(time.Duration(retryLimit+1) * splitWait)
	for time.Now().Before(deadline) {
		pending, gaps := c.regionsToSplit(keys)
		if len(pending) == 0 && gaps == 0 {
			break
		}
		// A region whose split was overtaken by another change (its
		// operator canceled) is asked again.
		for id, ks := range pending {
			if op, ok := c.getOperator(id); !ok || op.desc != descSplit || op.status != pdpb.OperatorStatus_RUNNING {
				_ = c.splitAt(id, pdpb.CheckPolicy_USEKEY, ks) // asked again next time round
			}
		}
		select {
		case <-ctx.Done():
			return c.splitProgress(keys)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return c.splitProgress(keys)
}

// regionsToSplit groups the keys that start no region by the region that
// holds them; gaps counts the keys no region holds, as while a split's
// new regions have not all reported yet.
func (c *cluster) regionsToSplit(keys [][]byte) (pending map[uint64][][]byte, gaps int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	pending = map[uint64][][]byte{}
	for _, k := range keys {
		switch r := c.regions.search(k); {
		case r == nil:
			gaps++
		case !bytes.Equal(r.meta.StartKey, k):
			pending[r.meta.Id] = append(pending[r.meta.Id], k)
		}
	}
	return pending, gaps
}

func (c *cluster) splitProgress(keys [][]byte) (int, []uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var ids []uint64
	done := 0
	for _, k := range keys {
		if r := c.regions.search(k); r != nil && bytes.Equal(r.meta.StartKey, k) {
			done++
			if !slices.Contains(ids, r.meta.Id) {
				ids = append(ids, r.meta.Id)
			}
		}
	}
	return done * 100 / len(keys), ids
}

// scatter gives a region one step toward an even spread: a peer on the
// store with the most regions among its stores moves (as a learner, which
// the replica checker then promotes, removing the surplus peer) to the
// healthy store with the fewest, when that one has fewer; otherwise its
// leader moves to the follower whose store leads the fewest regions, when
// that one leads fewer. A region already spread gets no operator.
func (c *cluster) scatter(id uint64) (bool, error) {
	return c.addAdminOperator(id, descScatter, func(r *regionInfo, v *schedView) (*step, error) {
		var fullest *schedStore
		for _, p := range r.meta.Peers {
			if st, ok := v.stores[p.StoreId]; ok && (fullest == nil || st.regions > fullest.regions) {
				fullest = st
			}
		}
		if target := v.emptiestStore(r.meta); fullest != nil && target != nil && target.regions+1 < fullest.regions {
			pid, err := c.s.ids.alloc(c.s.ctx, 1)
			if err != nil {
				return nil, err
			}
			return &step{addLearner: &metapb.Peer{Id: pid, StoreId: target.id, Role: metapb.PeerRole_Learner}}, nil
		}
		from, ok := v.stores[r.leader.StoreId]
		if !ok {
			return nil, nil
		}
		var best *metapb.Peer
		for _, p := range r.meta.Peers {
			if p.Id != r.leader.Id && !isLearner(p) && v.healthyStore(p.StoreId) &&
				(best == nil || v.stores[p.StoreId].leaders < v.stores[best.StoreId].leaders) {
				best = p
			}
		}
		if best == nil || v.stores[best.StoreId].leaders+1 >= from.leaders {
			return nil, nil
		}
		return &step{transferLeader: best}, nil
	})
}

// transferLeader moves region id's leader to its peer on store.
func (c *cluster) transferLeader(id, store uint64) error {
	_, err := c.addAdminOperator(id, descTransferLeader, func(r *regionInfo, _ *schedView) (*step, error) {
		for _, p := range r.meta.Peers {
			if p.StoreId == store && !isLearner(p) {
				if p.Id == r.leader.Id {
					return nil, nil
				}
				return &step{transferLeader: p}, nil
			}
		}
		return nil, fmt.Errorf("region %d has no voter on store %d", id, store)
	})
	return err
}
