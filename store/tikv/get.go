package tikv

import (
	"context"
	"math"
	"time"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"github.com/tikv/client-go/v2/config/retry"
	tikvkv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
)

// A point get is sent here, with one KvGet on the SQL node's own read
// stream to the store (readconn.go), or, when there is none, through
// client-go's region cache and RPC client (its batch client to the
// store), not through client-go's KVSnapshot.Get: that builds a
// backoffer, a region request sender, its replica selector and the
// request's contexts for every get (about 10% of a SQL node's CPU under
// oltp_point_select, above the RPC client).
//
// Only the common case is answered here: the key's region is in the
// cache with a leader (no forwarding through a proxy store), the snapshot
// is above the GC safe point, the send succeeds, and the answer has no
// region error and no key error (a lock). Anything else returns !ok, and
// client-go's KVSnapshot.Get reads the key as before: it backs off,
// follows region changes and a new leader, marks a failed store, and
// resolves locks. So this reads what KVSnapshot.Get reads (the same
// request: the key, the snapshot's version, the leader's region context,
// client-go's short read timeout) and costs, when the answer is not
// clean, one extra RPC before the path that handles it.

// directGet is the value of key at version ts (nil when the key has none)
// and true, or false when the caller must read it through KVSnapshot.Get.
func (s *Storage) directGet(ctx context.Context, key []byte, ts uint64) ([]byte, bool) {
	if ts != math.MaxUint64 && s.store.CheckVisibility(ts) != nil {
		return nil, false
	}
	cache := s.store.GetRegionCache()
	loc := cache.TryLocateKey(key)
	if loc == nil {
		return nil, false
	}
	bo := retry.NewNoopBackoff(ctx)
	rpcCtx, err := cache.GetTiKVRPCContext(bo, loc.Region, tikvkv.ReplicaReadLeader, 0)
	if err != nil || rpcCtx == nil || rpcCtx.ProxyStore != nil {
		return nil, false
	}
	if s.reads != nil {
		return s.directGetStream(ctx, rpcCtx, key, ts)
	}
	req := tikvrpc.NewRequest(tikvrpc.CmdGet, &kvrpcpb.GetRequest{Key: key, Version: ts})
	if err := tikvrpc.SetContext(req, rpcCtx.Meta, rpcCtx.Peer); err != nil {
		return nil, false
	}
	req.ClusterId = rpcCtx.ClusterID
	req.MaxExecutionDurationMs = uint64(tikv.ReadTimeoutShort.Milliseconds())
	resp, err := s.store.GetTiKVClient().SendRequest(ctx, rpcCtx.Addr, req, tikv.ReadTimeoutShort)
	if err != nil {
		return nil, false
	}
	if rerr, err := resp.GetRegionError(); err != nil || rerr != nil {
		return nil, false
	}
	gr, ok := resp.Resp.(*kvrpcpb.GetResponse)
	if !ok || gr.GetError() != nil {
		return nil, false
	}
	return gr.GetValue(), true
}

// directGetStream is directGet's KvGet sent on the store's read stream
// (readconn.go): the request client-go's RPC client would send.
func (s *Storage) directGetStream(ctx context.Context, rpcCtx *tikv.RPCContext, key []byte, ts uint64) ([]byte, bool) {
	req := &tikvpb.BatchCommandsRequest_Request{Cmd: &tikvpb.BatchCommandsRequest_Request_Get{Get: &kvrpcpb.GetRequest{
		Context: readContext(rpcCtx, tikv.ReadTimeoutShort), Key: key, Version: ts}}}
	resp, err := s.reads.call(ctx, rpcCtx.Addr, req, tikv.ReadTimeoutShort)
	if err != nil {
		return nil, false
	}
	gr := resp.GetGet()
	if gr == nil || gr.GetRegionError() != nil || gr.GetError() != nil {
		return nil, false
	}
	return gr.GetValue(), true
}

// readContext is the region context client-go's RPC client gives a read
// to rpcCtx's leader: tikvrpc.SetContext's region, epoch and peer, the
// cluster id, and the read's timeout as the longest the store may take.
// client-go also sets KeyspaceId (to NullKeyspaceID without a keyspace,
// as here), which storenode ignores; it is left out.
func readContext(rpcCtx *tikv.RPCContext, timeout time.Duration) *kvrpcpb.Context {
	return &kvrpcpb.Context{
		RegionId:               rpcCtx.Meta.GetId(),
		RegionEpoch:            rpcCtx.Meta.GetRegionEpoch(),
		Peer:                   rpcCtx.Peer,
		ClusterId:              rpcCtx.ClusterID,
		MaxExecutionDurationMs: uint64(timeout.Milliseconds()),
	}
}
