package pd

import (
	"fmt"
	"testing"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
)

// TestAdminTransferHeld: a leader moved by an admin transfer-leader stays
// where it was put, although the move leaves the stores' leaders two
// apart; balance-leader moves another region's leader instead. Before
// adminHold, the new leader's first heartbeat got the leader sent back.
func TestAdminTransferHeld(t *testing.T) {
	s := &Server{}
	def := DefaultConfig()
	s.conf.cur = clusterConfig{Schedule: def.Schedule, Replication: def.Replication}
	c := newCluster(s)
	for _, id := range []uint64{1, 2, 3} {
		c.stores[id] = &storeInfo{meta: &metapb.Store{Id: id, State: metapb.StoreState_Up}, lastHeartbeat: time.Now()}
	}
	// Regions 10, 20, 30, each with a voter on every store, led from
	// stores 1, 2 and 3: balanced.
	regions := map[uint64]*metapb.Region{}
	put := func(id, leaderStore uint64) *metapb.Peer {
		r := regions[id]
		for _, p := range r.Peers {
			if p.StoreId == leaderStore {
				c.mu.Lock()
				c.regions.put(&regionInfo{meta: r, leader: p})
				c.mu.Unlock()
				return p
			}
		}
		t.Fatalf("region %d has no peer on store %d", id, leaderStore)
		return nil
	}
	for i, id := range []uint64{10, 20, 30} {
		r := &metapb.Region{Id: id, StartKey: []byte(fmt.Sprint(i)), EndKey: []byte(fmt.Sprint(i + 1)),
			RegionEpoch: &metapb.RegionEpoch{ConfVer: 3, Version: 1}}
		for _, st := range []uint64{1, 2, 3} {
			r.Peers = append(r.Peers, &metapb.Peer{Id: id + st, StoreId: st})
		}
		regions[id] = r
		put(id, uint64(i+1))
	}
	for _, id := range []uint64{10, 20, 30} {
		if st := c.schedule(regions[id], c.regions.byID[id].leader); st != nil {
			t.Fatalf("balanced, region %d got %v", id, st)
		}
	}
	// pd-ctl moves region 10's leader from store 1 to store 2: store 2
	// leads two regions, store 1 none.
	if err := c.transferLeader(10, 2); err != nil {
		t.Fatal(err)
	}
	if st := c.schedule(regions[10], c.regions.byID[10].leader); st == nil || st.transferLeader.GetStoreId() != 2 {
		t.Fatalf("region 10's leader on store 1 got %v, want the transfer to store 2", st)
	}
	leader := put(10, 2)
	// The new leader's heartbeats: the transfer succeeded, and the leader
	// stays on store 2.
	for range 3 {
		if st := c.schedule(regions[10], leader); st != nil {
			t.Fatalf("region 10, just moved to store 2 by pd-ctl, got %v", st)
		}
	}
	if op, _ := c.getOperator(10); op.desc != descTransferLeader || op.status.String() != "SUCCESS" {
		t.Fatalf("region 10's operator: %+v", op)
	}
	// Region 20, on store 2 too, goes to store 1 instead.
	if st := c.schedule(regions[20], c.regions.byID[20].leader); st == nil || st.transferLeader.GetStoreId() != 1 {
		t.Fatalf("region 20 got %v, want its leader moved to store 1", st)
	}
	// Once the hold is over, region 10 is balanced like any other.
	c.mu.Lock()
	e := c.ended[10]
	e.at = e.at.Add(-adminHold)
	c.ended[10] = e
	delete(c.ops, 20)
	c.mu.Unlock()
	if st := c.schedule(regions[10], leader); st == nil || st.transferLeader.GetStoreId() != 1 {
		t.Fatalf("region 10 after the hold got %v, want its leader moved to store 1", st)
	}
}
