package storenode

import (
	"context"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/metapb"
)

// Regions is what the gRPC service needs from the raftstore: the regions
// this store leads. *raftstore.Store implements it.
type Regions interface {
	// Leader returns the region a request's context names, if this store
	// holds its leader and the context's epoch is the region's current
	// one. Otherwise it returns the region error TiKV would (RegionNotFound,
	// NotLeader with the leader if known, EpochNotMatch with the current
	// region, StoreNotMatch).
	Leader(ctx *kvrpcpb.Context) (Region, *errorpb.Error)
	// LeaderNow returns the region a read's context names if the read
	// may go ahead at once: Leader would return it without waiting and
	// its ReadIndex would pass without waiting (the leader's lease
	// holds). Otherwise nil, and the read goes the way that waits
	// (service_batch.go).
	LeaderNow(ctx *kvrpcpb.Context) Region
	// Split splits region at the given raw keys (client-go's SplitRegion)
	// and returns the regions that result, boundaries encoded.
	Split(ctx context.Context, r Region, rawKeys [][]byte) ([]*metapb.Region, error)
}

// Region is one region led by this store.
type Region interface {
	// Meta is the region's metadata: id, epoch, peers, and boundaries in
	// memcomparable-encoded form (codec.EncodeBytes of the raw key).
	Meta() *metapb.Region
	// MVCC runs the transaction commands over the region. Its reads see
	// this store's applied state; its writes are proposed to the region's
	// Raft group and return once applied here. A write that cannot be
	// (leadership lost, epoch changed) fails with a *raftstore.RegionError.
	MVCC() *mvcc.Store
	// ReadIndex waits until a read may see every write committed before
	// the call (lease or ReadIndex); it fails with a *raftstore.RegionError
	// if this store is no longer the leader.
	ReadIndex(ctx context.Context) error
	// LeaderTerm is the Raft term in which this store's peer became the
	// region's leader (0 if it no longer is): when it changes, the region
	// has a new leader, which must sync max_ts before async commit or 1PC.
	LeaderTerm() uint64
	// RecordRead counts what a read answered from the region, bytes (keys
	// and values) and keys, for PD's heartbeats.
	RecordRead(bytes, keys uint64)
}

// writeFloorSetter is a Region with a write filter (raftstore's
// writefilter.go) to turn on once its leader has synced max ts with PD in
// its term: every record of the region's former leaders lies below that
// timestamp.
type writeFloorSetter interface {
	SetWriteFloor(term, floor uint64)
}
