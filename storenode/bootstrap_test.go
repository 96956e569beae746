package storenode

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	storepebble "github.com/basalt-db/basalt/store/pebble"
	"github.com/basalt-db/basalt/storenode/raftstore"
	"github.com/basalt-db/basalt/testkit"
	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
)

// TestInterruptedBootstrap: a store that wrote a region to bootstrap the
// cluster with, and stopped before offering it to PD, finds at its next
// start that another store bootstrapped the cluster meanwhile. It must
// drop its region, not serve it beside the cluster's.
func TestInterruptedBootstrap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	c := testkit.StartCluster(t, 1, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pd := newPDClient([]string{c.PD})
	if err := pd.connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer pd.close()
	var ids [3]uint64
	for i := range ids {
		id, err := pd.allocID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	storeID, regionID, peerID := ids[0], ids[1], ids[2]

	// What the second store's first start left behind: its identity and a
	// region prepared for bootstrapping, never offered.
	dir := filepath.Join(c.DataDir("store2"), "db") // as Node opens it
	eng, err := storepebble.Open(dir, storepebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ident, _ := (&raft_serverpb.StoreIdent{ClusterId: pd.ClusterID(), StoreId: storeID}).Marshal()
	if err := eng.DB().Set([]byte("mident"), ident, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	openStore := func() *raftstore.Store {
		rs, err := raftstore.NewStore(raftstore.Config{StoreID: storeID, Engine: eng, Tick: 100 * time.Millisecond,
			HeartbeatTicks: 2, ElectionTicks: 10, Resolve: func(context.Context, uint64) (string, error) { return "", nil }})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	region := &metapb.Region{Id: regionID, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
		Peers: []*metapb.Peer{{Id: peerID, StoreId: storeID}}}
	if err := openStore().Bootstrap(region); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}

	name := c.AddStore()
	if name != "store2" {
		t.Fatalf("the new store is %s, not store2", name)
	}
	log := c.Log(name)
	c.Stop(name)
	if eng, err = storepebble.Open(dir, storepebble.Options{}); err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rs := openStore()
	if p := rs.Peer(regionID); p != nil {
		t.Fatalf("store2 still holds region %d: %v\n%s", regionID, p.Meta(), log)
	}
	if _, ok, err := rs.PreparedBootstrap(); ok || err != nil {
		t.Fatalf("the prepared bootstrap is still recorded (err %v)", err)
	}
}
