package storenode

import (
	"context"
	"io"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/storenode/raftstore"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
)

// tikvServer is the store's tikvpb server: the transaction service, and
// the Raft message and snapshot streams between stores.
type tikvServer struct {
	*Service
	rs   *raftstore.Store
	drop *raftDrop // the test's fault switch (fault.go)
}

// Raft receives Raft messages one by one.
func (t *tikvServer) Raft(stream tikvpb.Tikv_RaftServer) error {
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(&raft_serverpb.Done{})
		}
		if err != nil {
			return err
		}
		if !t.drop.dropped(m) {
			t.rs.Step(m)
		}
	}
}

// BatchRaft receives Raft messages in batches, as the store's transport
// sends them.
func (t *tikvServer) BatchRaft(stream tikvpb.Tikv_BatchRaftServer) error {
	return t.rs.ServeBatchRaft(droppingBatch{stream, t.drop})
}

// Snapshot receives a Raft snapshot, its data in chunks after the MsgSnap
// that carries its metadata.
func (t *tikvServer) Snapshot(stream tikvpb.Tikv_SnapshotServer) error {
	return t.rs.ServeSnapshot(&droppingSnapshot{Tikv_SnapshotServer: stream, d: t.drop})
}

// regionsOf is Regions over a node's raftstore.
type regionsOf struct{ n *Node }

func (r regionsOf) Leader(ctx *kvrpcpb.Context) (Region, *errorpb.Error) {
	p, err := r.n.rs.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (r regionsOf) LeaderNow(ctx *kvrpcpb.Context) Region {
	if p := r.n.rs.LeaderNow(ctx); p != nil {
		return p
	}
	return nil // not a nil *Peer in the interface
}

func (r regionsOf) Split(ctx context.Context, reg Region, rawKeys [][]byte) ([]*metapb.Region, error) {
	keys := make([][]byte, len(rawKeys))
	for i, k := range rawKeys {
		keys[i] = codec.EncodeBytes(nil, k)
	}
	regions, err := reg.(*raftstore.Peer).Split(ctx, keys, r.n.pd.askBatchSplit)
	if err == nil && len(regions) > 1 {
		_ = r.n.pd.reportBatchSplit(ctx, regions)
	}
	return regions, err
}
