package pd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
)

// Scheduling, as PD's: each region heartbeat may be answered with one
// step that moves the region toward where it should be, and the next
// heartbeat (with the region's new epoch) gets the next step. The
// decisions are pure functions of a snapshot of the cluster (schedView),
// so that scripts test them (testdata/schedule).
//
// The replica checker comes first: a learner is promoted; a region with
// fewer than max-replicas voters on healthy stores gets a learner on the
// healthy store with the fewest regions; a region with more voters than
// that loses the one on an unhealthy store, else on the store with the
// most regions (the leader moves away first). A store is unhealthy when
// it is Down (no heartbeat for max-store-down-time), Offline (being
// removed) or a Tombstone.
//
// Then balance: a region of the store with the most regions gets a
// learner on the store with the fewest, when they differ by more than
// balanceTolerance regions (the replica checker then promotes it and
// removes the surplus peer from the fuller store); and a region whose
// leader is on the store with the most leaders moves its leader to a
// follower on a store with fewer, when they differ by more than one.

// balanceTolerance is the region-count difference balance-region leaves.
const balanceTolerance = 2

// schedStore is what scheduling knows of a store.
type schedStore struct {
	id       uint64
	state    metapb.StoreState
	down     bool
	regions  int // peers on it
	leaders  int
	lastSeen time.Time
}

func (s *schedStore) healthy() bool { return s.state == metapb.StoreState_Up && !s.down }

// schedView is a snapshot of the cluster for scheduling.
type schedView struct {
	maxReplicas int
	stores      map[uint64]*schedStore
	// noBalanceRegion and noBalanceLeader turn the balance schedulers
	// off (DELETE /pd/api/v1/schedulers/{name}).
	noBalanceRegion, noBalanceLeader bool
}

// step is one change to a region: exactly one field set.
type step struct {
	addLearner     *metapb.Peer // a new learner
	promote        *metapb.Peer // a learner made voter
	remove         *metapb.Peer
	transferLeader *metapb.Peer // to this follower
	split          *pdpb.SplitRegion
}

func (s *step) String() string {
	switch {
	case s == nil:
		return "none"
	case s.addLearner != nil:
		return fmt.Sprintf("add learner %d on store %d", s.addLearner.Id, s.addLearner.StoreId)
	case s.promote != nil:
		return fmt.Sprintf("promote learner %d on store %d", s.promote.Id, s.promote.StoreId)
	case s.remove != nil:
		return fmt.Sprintf("remove peer %d on store %d", s.remove.Id, s.remove.StoreId)
	case s.transferLeader != nil:
		return fmt.Sprintf("transfer leader to peer %d on store %d", s.transferLeader.Id, s.transferLeader.StoreId)
	case s.split != nil && s.split.Policy == pdpb.CheckPolicy_USEKEY:
		return fmt.Sprintf("split at %d keys", len(s.split.Keys))
	case s.split != nil:
		return "split by " + strings.ToLower(s.split.Policy.String())
	}
	return "none"
}

// response is the heartbeat answer that carries s for region r.
func (s *step) response(r *metapb.Region) *pdpb.RegionHeartbeatResponse {
	resp := &pdpb.RegionHeartbeatResponse{RegionId: r.Id, RegionEpoch: r.RegionEpoch}
	switch {
	case s.addLearner != nil:
		resp.ChangePeer = &pdpb.ChangePeer{Peer: s.addLearner, ChangeType: eraftpb.ConfChangeType_AddLearnerNode}
	case s.promote != nil:
		p := *s.promote
		p.Role = metapb.PeerRole_Voter
		resp.ChangePeer = &pdpb.ChangePeer{Peer: &p, ChangeType: eraftpb.ConfChangeType_AddNode}
	case s.remove != nil:
		resp.ChangePeer = &pdpb.ChangePeer{Peer: s.remove, ChangeType: eraftpb.ConfChangeType_RemoveNode}
	case s.transferLeader != nil:
		resp.TransferLeader = &pdpb.TransferLeader{Peer: s.transferLeader}
	case s.split != nil:
		resp.SplitRegion = s.split
	}
	return resp
}

// opKind says which scheduler made a step, for its limit.
type opKind int

const (
	opReplica opKind = iota // the replica checker
	opRegion                // balance-region
	opLeader                // balance-leader
	opAdmin                 // asked for through the API (admin.go)
)

// nextStep decides region r's next step, or nil, and which scheduler
// made it. newPeerID allocates the ID of a peer to add.
func (v *schedView) nextStep(r *metapb.Region, leader *metapb.Peer, newPeerID func() (uint64, error)) (*step, opKind, error) {
	if s, err := v.checkReplicas(r, leader, newPeerID); s != nil || err != nil {
		return s, opReplica, err
	}
	if !v.noBalanceRegion {
		if s, err := v.balanceRegion(r, newPeerID); s != nil || err != nil {
			return s, opRegion, err
		}
	}
	if v.noBalanceLeader {
		return nil, opLeader, nil
	}
	return v.balanceLeader(r, leader), opLeader, nil
}

func isLearner(p *metapb.Peer) bool { return p.Role == metapb.PeerRole_Learner }

func (v *schedView) healthyStore(id uint64) bool {
	s, ok := v.stores[id]
	return ok && s.healthy()
}

func (v *schedView) checkReplicas(r *metapb.Region, leader *metapb.Peer, newPeerID func() (uint64, error)) (*step, error) {
	for _, p := range r.Peers {
		if isLearner(p) && v.healthyStore(p.StoreId) {
			return &step{promote: p}, nil
		}
	}
	var healthy, unhealthy []*metapb.Peer
	for _, p := range r.Peers {
		switch {
		case isLearner(p):
			unhealthy = append(unhealthy, p) // a learner on an unhealthy store
		case v.healthyStore(p.StoreId):
			healthy = append(healthy, p)
		default:
			unhealthy = append(unhealthy, p)
		}
	}
	if len(healthy) < v.maxReplicas {
		if target := v.emptiestStore(r); target != nil {
			id, err := newPeerID()
			if err != nil {
				return nil, err
			}
			return &step{addLearner: &metapb.Peer{Id: id, StoreId: target.id, Role: metapb.PeerRole_Learner}}, nil
		}
	}
	if len(healthy) >= v.maxReplicas && len(unhealthy) > 0 {
		return v.removePeer(r, leader, unhealthy[0]), nil
	}
	if len(healthy) > v.maxReplicas {
		// Remove from the store with the most regions.
		sort.Slice(healthy, func(i, j int) bool {
			return v.stores[healthy[i].StoreId].regions > v.stores[healthy[j].StoreId].regions ||
				(v.stores[healthy[i].StoreId].regions == v.stores[healthy[j].StoreId].regions && healthy[i].StoreId > healthy[j].StoreId)
		})
		for _, p := range healthy {
			if leader == nil || p.Id != leader.Id {
				return v.removePeer(r, leader, p), nil
			}
		}
	}
	return nil, nil
}

// removePeer removes p, moving the leader off it first.
func (v *schedView) removePeer(r *metapb.Region, leader, p *metapb.Peer) *step {
	if leader != nil && leader.Id == p.Id {
		for _, f := range r.Peers {
			if f.Id != p.Id && !isLearner(f) && v.healthyStore(f.StoreId) {
				return &step{transferLeader: f}
			}
		}
		return nil
	}
	return &step{remove: p}
}

// emptiestStore is the healthy store with the fewest regions that holds
// no peer of r (nil if none).
func (v *schedView) emptiestStore(r *metapb.Region) *schedStore {
	var best *schedStore
	for _, s := range v.sortedStores() {
		if !s.healthy() || hasPeerOn(r, s.id) {
			continue
		}
		if best == nil || s.regions < best.regions {
			best = s
		}
	}
	return best
}

func hasPeerOn(r *metapb.Region, store uint64) bool {
	for _, p := range r.Peers {
		if p.StoreId == store {
			return true
		}
	}
	return false
}

func (v *schedView) sortedStores() []*schedStore {
	out := make([]*schedStore, 0, len(v.stores))
	for _, s := range v.stores {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// balanceRegion adds a learner of r on the emptiest store when r has a
// peer on the fullest store and the two differ by more than the
// tolerance.
func (v *schedView) balanceRegion(r *metapb.Region, newPeerID func() (uint64, error)) (*step, error) {
	var fullest *schedStore
	for _, s := range v.sortedStores() {
		if s.healthy() && (fullest == nil || s.regions > fullest.regions) {
			fullest = s
		}
	}
	if fullest == nil || !hasPeerOn(r, fullest.id) {
		return nil, nil
	}
	target := v.emptiestStore(r)
	if target == nil || fullest.regions-target.regions <= balanceTolerance {
		return nil, nil
	}
	id, err := newPeerID()
	if err != nil {
		return nil, err
	}
	return &step{addLearner: &metapb.Peer{Id: id, StoreId: target.id, Role: metapb.PeerRole_Learner}}, nil
}

// balanceLeader moves r's leader to the follower on the store with the
// fewest leaders, when r's leader is on a store with more than one more.
func (v *schedView) balanceLeader(r *metapb.Region, leader *metapb.Peer) *step {
	if leader == nil {
		return nil
	}
	from, ok := v.stores[leader.StoreId]
	if !ok {
		return nil
	}
	var best *metapb.Peer
	for _, p := range r.Peers {
		if p.Id == leader.Id || isLearner(p) || !v.healthyStore(p.StoreId) {
			continue
		}
		if best == nil || v.stores[p.StoreId].leaders < v.stores[best.StoreId].leaders {
			best = p
		}
	}
	if best == nil || from.leaders-v.stores[best.StoreId].leaders <= 1 {
		return nil
	}
	return &step{transferLeader: best}
}

// apply records s in the view's counts, as if it had happened, so that
// decisions for the next regions in one pass see it.
func (v *schedView) apply(r *metapb.Region, leader *metapb.Peer, s *step) {
	switch {
	case s == nil:
	case s.addLearner != nil:
		v.stores[s.addLearner.StoreId].regions++
	case s.remove != nil:
		if st, ok := v.stores[s.remove.StoreId]; ok {
			st.regions--
		}
	case s.transferLeader != nil:
		if leader != nil {
			if st, ok := v.stores[leader.StoreId]; ok {
				st.leaders--
			}
		}
		v.stores[s.transferLeader.StoreId].leaders++
	}
}

// operator is a step sent to a region, resent with each heartbeat until
// the region's epoch or leader shows it done, or it times out.
type operator struct {
	step    *step
	kind    opKind
	desc    string // an admin operator's name (admin.go)
	epoch   metapb.RegionEpoch
	leader  uint64 // the leader's peer ID when it was made
	created time.Time
}

// check reports how the region, as last heard of, shows the operator:
// carried out (SUCCESS), or changed some other way under it (CANCEL), or
// neither yet (RUNNING).
func (op *operator) check(r *metapb.Region, leader *metapb.Peer) pdpb.OperatorStatus {
	e, s := r.GetRegionEpoch(), op.step
	peer := func(id uint64) *metapb.Peer {
		for _, p := range r.GetPeers() {
			if p.Id == id {
				return p
			}
		}
		return nil
	}
	switch {
	case s.transferLeader != nil && leader != nil && leader.Id == s.transferLeader.Id,
		s.split != nil && e.GetVersion() > op.epoch.Version,
		s.addLearner != nil && peer(s.addLearner.Id) != nil,
		s.promote != nil && peer(s.promote.Id) != nil && !isLearner(peer(s.promote.Id)),
		s.remove != nil && peer(s.remove.Id) == nil:
		return pdpb.OperatorStatus_SUCCESS
	case e.GetConfVer() != op.epoch.ConfVer || e.GetVersion() != op.epoch.Version || leader == nil || leader.Id != op.leader:
		return pdpb.OperatorStatus_CANCEL
	}
	return pdpb.OperatorStatus_RUNNING
}

// operatorTimeout ends an operator the region has not carried out;
// transferLeaderTimeout a leader transfer, which takes a heartbeat or two.
const (
	operatorTimeout       = time.Minute
	transferLeaderTimeout = 10 * time.Second
)

// targetHealthyLocked reports whether the store a step moves something to
// is still healthy: a step toward a store that went down is dropped.
func (c *cluster) targetHealthyLocked(s *step, now time.Time) bool {
	var target *metapb.Peer
	switch {
	case s.addLearner != nil:
		target = s.addLearner
	case s.promote != nil:
		target = s.promote
	case s.transferLeader != nil:
		target = s.transferLeader
	default:
		return true
	}
	info, ok := c.stores[target.StoreId]
	return ok && info.meta.GetState() == metapb.StoreState_Up &&
		now.Sub(info.lastHeartbeat) <= c.s.conf.get().Schedule.MaxStoreDownTime.Duration
}

// view builds the scheduling snapshot of the directory. The caller holds
// c.mu.
func (c *cluster) viewLocked(now time.Time) *schedView {
	conf := c.s.conf.get()
	v := &schedView{maxReplicas: int(conf.Replication.MaxReplicas), stores: map[uint64]*schedStore{},
		noBalanceRegion: !conf.hasScheduler(balanceRegionScheduler), noBalanceLeader: !conf.hasScheduler(balanceLeaderScheduler)}
	downAfter := c.s.conf.get().Schedule.MaxStoreDownTime.Duration
	for id, info := range c.stores {
		v.stores[id] = &schedStore{id: id, state: info.meta.GetState(), down: now.Sub(info.lastHeartbeat) > downAfter,
			lastSeen: info.lastHeartbeat, regions: c.regions.peers[id], leaders: c.regions.leaders[id]}
	}
	// Steps under way count as done, so that one pass does not pile
	// regions onto the same store.
	for id, op := range c.ops {
		if r := c.regions.byID[id]; r != nil && op.check(r.meta, r.leader) == pdpb.OperatorStatus_RUNNING {
			v.apply(r.meta, r.leader, op.step)
		}
	}
	return v
}

// schedule returns the step to send with the answer to region r's
// heartbeat, if any: the operator under way, or a new one within the
// schedulers' limits.
func (c *cluster) schedule(r *metapb.Region, leader *metapb.Peer) *step {
	if leader == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if op, ok := c.ops[r.Id]; ok {
		timeout := operatorTimeout
		if op.step.transferLeader != nil {
			timeout = transferLeaderTimeout
		}
		healthy := c.targetHealthyLocked(op.step, now)
		switch status := op.check(r, leader); {
		case status != pdpb.OperatorStatus_RUNNING:
			c.endOpLocked(r.Id, status)
		case now.Sub(op.created) >= timeout:
			c.endOpLocked(r.Id, pdpb.OperatorStatus_TIMEOUT)
		case !healthy:
			c.endOpLocked(r.Id, pdpb.OperatorStatus_CANCEL)
		default:
			return op.step
		}
	}
	v := c.viewLocked(now)
	if c.heldLocked(r.Id, now) {
		v.noBalanceRegion, v.noBalanceLeader = true, true
	}
	s, kind, err := v.nextStep(r, leader, func() (uint64, error) {
		ctx, cancel := context.WithTimeout(c.s.ctx, 3*time.Second)
		defer cancel()
		return c.s.ids.alloc(ctx, 1)
	})
	if err != nil || s == nil {
		return nil
	}
	sc := c.s.conf.get().Schedule
	limits := map[opKind]uint64{opReplica: sc.ReplicaScheduleLimit, opRegion: sc.RegionScheduleLimit, opLeader: sc.LeaderScheduleLimit}
	running := uint64(0)
	for _, op := range c.ops {
		if op.kind == kind {
			running++
		}
	}
	if running >= limits[kind] {
		return nil
	}
	c.ops[r.Id] = &operator{step: s, kind: kind, epoch: *r.GetRegionEpoch(), leader: leader.Id, created: now}
	operatorEvents.WithLabelValues(kind.String(), "created").Inc()
	return s
}

// operatorJSON is an operator as /operators shows it.
type operatorJSON struct {
	RegionID uint64    `json:"region_id"`
	Desc     string    `json:"desc"`
	Kind     string    `json:"kind"`
	Created  time.Time `json:"create_time"`
}

// describe names an operator as PD's GetOperator does: an admin
// operator by what was asked, the others by their scheduler.
func (op *operator) describe() string {
	if op.desc != "" {
		return op.desc
	}
	return [...]string{"replica-checker", "balance-region", "balance-leader"}[op.kind]
}

func (k opKind) String() string {
	return [...]string{"replica", "region", "leader", "admin"}[k]
}

// operators lists the operators under way, by region.
func (c *cluster) operators() []operatorJSON {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]operatorJSON, 0, len(c.ops))
	for id, op := range c.ops {
		out = append(out, operatorJSON{RegionID: id, Desc: op.describe() + ": " + op.step.String(), Kind: op.kind.String(), Created: op.created})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RegionID < out[j].RegionID })
	return out
}
