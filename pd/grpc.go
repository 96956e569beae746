package pd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// grpcService is the pdpb.PD service. Every request but GetMembers and
// GetClusterInfo must carry this cluster's ID (another is refused with
// FailedPrecondition, as PD does) and reach the leader (a follower answers
// Unavailable "not leader", on which pd/client looks for the leader
// again). Errors about the request itself go in the response header.
// Calls Basalt does not serve answer Unimplemented, which pd/client and
// client-go take as "fall back" where they can (see the protocol map).
type grpcService struct {
	pdpb.UnimplementedPDServer
	s *Server
}

func (g *grpcService) header() *pdpb.ResponseHeader {
	return &pdpb.ResponseHeader{ClusterId: g.s.clusterID}
}

func (g *grpcService) errHeader(e *pdpb.Error) *pdpb.ResponseHeader {
	return &pdpb.ResponseHeader{ClusterId: g.s.clusterID, Error: e}
}

func notBootstrapped() *pdpb.Error {
	return &pdpb.Error{Type: pdpb.ErrorType_NOT_BOOTSTRAPPED, Message: "cluster is not bootstrapped"}
}

// check validates a request's header and that this member leads.
func (g *grpcService) check(h *pdpb.RequestHeader) error {
	if !g.s.ready.Load() {
		return errStarting
	}
	if h.GetClusterId() != g.s.clusterID {
		return status.Errorf(codes.FailedPrecondition, "mismatch cluster id, need %d but got %d", g.s.clusterID, h.GetClusterId())
	}
	if !g.s.IsLeader() {
		return status.Error(codes.Unavailable, "not leader")
	}
	return nil
}

// errStarting answers a request that arrives while the member is still
// starting: etcd serves PD's handlers before NewServer has set up what
// they use.
var errStarting = status.Error(codes.Unavailable, "PD is starting")

// rpcErr maps an internal error: a lost leadership is "not leader".
func rpcErr(err error) error {
	if errors.Is(err, errNotLeader) || errors.Is(err, errTSONotReady) {
		return status.Error(codes.Unavailable, "not leader")
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Unknown, err.Error())
}

func (g *grpcService) GetMembers(ctx context.Context, _ *pdpb.GetMembersRequest) (*pdpb.GetMembersResponse, error) {
	if !g.s.ready.Load() {
		return nil, errStarting
	}
	members, err := g.s.members(ctx)
	if err != nil {
		return nil, rpcErr(err)
	}
	leader, err := g.s.leaderMember(ctx)
	if err != nil {
		return nil, rpcErr(err)
	}
	resp := &pdpb.GetMembersResponse{Header: g.header(), Members: members, Leader: leader}
	etcdLeader := uint64(g.s.etcd.Server.Leader())
	for _, m := range members {
		if m.MemberId == etcdLeader {
			resp.EtcdLeader = m
		}
	}
	if leader == nil {
		resp.Header = g.errHeader(&pdpb.Error{Type: pdpb.ErrorType_UNKNOWN, Message: "no leader"})
	}
	return resp, nil
}

func (g *grpcService) GetClusterInfo(context.Context, *pdpb.GetClusterInfoRequest) (*pdpb.GetClusterInfoResponse, error) {
	if !g.s.ready.Load() {
		return nil, errStarting
	}
	return &pdpb.GetClusterInfoResponse{Header: g.header(), ServiceModes: []pdpb.ServiceMode{pdpb.ServiceMode_PD_SVC_MODE}}, nil
}

// Tso serves a stream of timestamp requests, answering each in order.
// It reads on the handler's own goroutine (no hand-off per request, as
// the other streams' receive does): the stream ends when the client ends
// it, or when Close stops the gRPC server. One response is reused for the
// stream's life (SendMsg has encoded it when Send returns).
func (g *grpcService) Tso(stream pdpb.PD_TsoServer) error {
	header := g.header()
	ts := &pdpb.Timestamp{}
	resp := &pdpb.TsoResponse{Header: header, Timestamp: ts}
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if g.s.ctx.Err() != nil {
			return status.Error(codes.Unavailable, "server closing")
		}
		if err := g.check(req.GetHeader()); err != nil {
			return err
		}
		start := time.Now()
		physical, logical, err := g.s.tso.next(req.GetCount())
		if err != nil {
			return rpcErr(err)
		}
		observeTSO(start, req.GetCount())
		resp.Count, ts.Physical, ts.Logical = req.GetCount(), physical, logical
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

func (g *grpcService) Bootstrap(ctx context.Context, req *pdpb.BootstrapRequest) (*pdpb.BootstrapResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	perr, err := g.s.cl.bootstrap(ctx, req.GetStore(), req.GetRegion())
	if err != nil {
		return nil, rpcErr(err)
	}
	if perr != nil {
		return &pdpb.BootstrapResponse{Header: g.errHeader(perr)}, nil
	}
	return &pdpb.BootstrapResponse{Header: g.header()}, nil
}

func (g *grpcService) IsBootstrapped(_ context.Context, req *pdpb.IsBootstrappedRequest) (*pdpb.IsBootstrappedResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	return &pdpb.IsBootstrappedResponse{Header: g.header(), Bootstrapped: g.s.cl.bootstrapped()}, nil
}

func (g *grpcService) AllocID(ctx context.Context, req *pdpb.AllocIDRequest) (*pdpb.AllocIDResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	count := uint64(max(req.GetCount(), 1))
	id, err := g.s.ids.alloc(ctx, count)
	if err != nil {
		return nil, rpcErr(err)
	}
	return &pdpb.AllocIDResponse{Header: g.header(), Id: id, Count: uint32(count)}, nil
}

func (g *grpcService) GetStore(_ context.Context, req *pdpb.GetStoreRequest) (*pdpb.GetStoreResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.GetStoreResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	st, stats := g.s.cl.getStore(req.GetStoreId())
	if st == nil {
		// client-go reads "invalid store ID" and "not found" as a store
		// that is gone.
		return &pdpb.GetStoreResponse{Header: g.errHeader(&pdpb.Error{Type: pdpb.ErrorType_UNKNOWN,
			Message: fmt.Sprintf("invalid store ID %d, not found", req.GetStoreId())})}, nil
	}
	return &pdpb.GetStoreResponse{Header: g.header(), Store: st, Stats: stats}, nil
}

func (g *grpcService) PutStore(ctx context.Context, req *pdpb.PutStoreRequest) (*pdpb.PutStoreResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.PutStoreResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	perr, err := g.s.cl.putStore(ctx, req.GetStore())
	if err != nil {
		return nil, rpcErr(err)
	}
	if perr != nil {
		return &pdpb.PutStoreResponse{Header: g.errHeader(perr)}, nil
	}
	return &pdpb.PutStoreResponse{Header: g.header()}, nil
}

func (g *grpcService) GetAllStores(_ context.Context, req *pdpb.GetAllStoresRequest) (*pdpb.GetAllStoresResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.GetAllStoresResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	return &pdpb.GetAllStoresResponse{Header: g.header(), Stores: g.s.cl.allStores(req.GetExcludeTombstoneStores())}, nil
}

func (g *grpcService) StoreHeartbeat(_ context.Context, req *pdpb.StoreHeartbeatRequest) (*pdpb.StoreHeartbeatResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.StoreHeartbeatResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	if perr := g.s.cl.storeHeartbeat(req.GetStats()); perr != nil {
		return &pdpb.StoreHeartbeatResponse{Header: g.errHeader(perr)}, nil
	}
	return &pdpb.StoreHeartbeatResponse{Header: g.header()}, nil
}

// RegionHeartbeat serves a store's stream of region heartbeats. A
// heartbeat may be answered with the region's next scheduling step
// (schedule.go); one that is invalid gets an error response and the
// stream goes on.
func (g *grpcService) RegionHeartbeat(stream pdpb.PD_RegionHeartbeatServer) error {
	reqs := receive(stream.Recv)
	hb := &heartbeatStream{stream: stream}
	defer g.s.hbStreams.unbind(hb)
	for {
		req, end, err := nextRequest(g, reqs)
		if end || err != nil {
			return err
		}
		if !g.s.cl.bootstrapped() {
			if err := hb.send(&pdpb.RegionHeartbeatResponse{Header: g.errHeader(notBootstrapped())}); err != nil {
				return err
			}
			continue
		}
		applied, perr, err := g.s.cl.regionHeartbeat(stream.Context(), req)
		if err != nil {
			return rpcErr(err)
		}
		if perr != nil {
			if err := hb.send(&pdpb.RegionHeartbeatResponse{Header: g.errHeader(perr),
				RegionId: req.GetRegion().GetId()}); err != nil {
				return err
			}
			continue
		}
		if !applied {
			continue // stale
		}
		g.s.hbStreams.bind(req.GetLeader().GetStoreId(), hb)
		if s := g.s.cl.schedule(req.GetRegion(), req.GetLeader()); s != nil {
			resp := s.response(req.GetRegion())
			resp.Header, resp.TargetPeer = g.header(), req.GetLeader()
			if err := hb.send(resp); err != nil {
				return err
			}
		}
	}
}

// regionResponse is a region lookup's answer; no region is a success with
// none, on which client-go backs off and asks again.
func (g *grpcService) regionResponse(r *regionInfo) *pdpb.GetRegionResponse {
	resp := &pdpb.GetRegionResponse{Header: g.header()}
	if r != nil {
		resp.Region, resp.Leader, resp.DownPeers, resp.PendingPeers = r.meta, r.leader, r.downPeers, r.pendingPeers
	}
	return resp
}

func (g *grpcService) GetRegion(_ context.Context, req *pdpb.GetRegionRequest) (*pdpb.GetRegionResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.GetRegionResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	return g.regionResponse(g.s.cl.region(func(t *regionTree) *regionInfo { return t.search(req.GetRegionKey()) })), nil
}

func (g *grpcService) GetPrevRegion(_ context.Context, req *pdpb.GetRegionRequest) (*pdpb.GetRegionResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.GetRegionResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	return g.regionResponse(g.s.cl.region(func(t *regionTree) *regionInfo { return t.prev(req.GetRegionKey()) })), nil
}

func (g *grpcService) GetRegionByID(_ context.Context, req *pdpb.GetRegionByIDRequest) (*pdpb.GetRegionResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.GetRegionResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	return g.regionResponse(g.s.cl.region(func(t *regionTree) *regionInfo { return t.byID[req.GetRegionId()] })), nil
}

func (g *grpcService) ScanRegions(_ context.Context, req *pdpb.ScanRegionsRequest) (*pdpb.ScanRegionsResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.ScanRegionsResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	resp := &pdpb.ScanRegionsResponse{Header: g.header()}
	g.s.cl.mu.RLock()
	defer g.s.cl.mu.RUnlock()
	for _, r := range g.s.cl.regions.scan(req.GetStartKey(), req.GetEndKey(), int(req.GetLimit())) {
		leader := r.leader
		if leader == nil {
			leader = &metapb.Peer{}
		}
		resp.Regions = append(resp.Regions, &pdpb.Region{Region: r.meta, Leader: leader,
			DownPeers: r.downPeers, PendingPeers: r.pendingPeers})
		resp.RegionMetas = append(resp.RegionMetas, r.meta)
		resp.Leaders = append(resp.Leaders, leader)
	}
	return resp, nil
}

// AskBatchSplit allocates, for each split of a region, the new region's
// ID and one peer ID per existing peer, in the order of its peers.
func (g *grpcService) AskBatchSplit(ctx context.Context, req *pdpb.AskBatchSplitRequest) (*pdpb.AskBatchSplitResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.AskBatchSplitResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	r := req.GetRegion()
	if r == nil || r.Id == 0 || req.GetSplitCount() == 0 {
		return &pdpb.AskBatchSplitResponse{Header: g.errHeader(&pdpb.Error{Type: pdpb.ErrorType_UNKNOWN,
			Message: "ask batch split: no region, region ID 0 or no split"})}, nil
	}
	resp := &pdpb.AskBatchSplitResponse{Header: g.header()}
	for i := uint32(0); i < req.GetSplitCount(); i++ {
		n := uint64(1 + len(r.Peers))
		first, err := g.s.ids.alloc(ctx, n)
		if err != nil {
			return nil, rpcErr(err)
		}
		id := &pdpb.SplitID{NewRegionId: first}
		for j := range r.Peers {
			id.NewPeerIds = append(id.NewPeerIds, first+1+uint64(j))
		}
		resp.Ids = append(resp.Ids, id)
	}
	return resp, nil
}

// ReportBatchSplit is informational: the regions' next heartbeats update
// the directory.
func (g *grpcService) ReportBatchSplit(_ context.Context, req *pdpb.ReportBatchSplitRequest) (*pdpb.ReportBatchSplitResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	return &pdpb.ReportBatchSplitResponse{Header: g.header()}, nil
}

// QueryRegion serves pd/client's router stream: each request looks up
// regions by key, by the key of the region after them, and by ID, and is
// answered in order; a region not found maps to ID 0.
func (g *grpcService) QueryRegion(stream pdpb.PD_QueryRegionServer) error {
	reqs := receive(stream.Recv)
	for {
		req, end, err := nextRequest(g, reqs)
		if end || err != nil {
			return err
		}
		resp := &pdpb.QueryRegionResponse{Header: g.header(), RegionsById: map[uint64]*pdpb.RegionResponse{}}
		if !g.s.cl.bootstrapped() {
			resp.Header = g.errHeader(notBootstrapped())
		} else {
			add := func(r *regionInfo) uint64 {
				if r == nil {
					return 0
				}
				resp.RegionsById[r.meta.Id] = &pdpb.RegionResponse{Region: r.meta, Leader: r.leader,
					DownPeers: r.downPeers, PendingPeers: r.pendingPeers}
				return r.meta.Id
			}
			g.s.cl.mu.RLock()
			t := g.s.cl.regions
			for _, k := range req.GetKeys() {
				resp.KeyIdMap = append(resp.KeyIdMap, add(t.search(k)))
			}
			for _, k := range req.GetPrevKeys() {
				resp.PrevKeyIdMap = append(resp.PrevKeyIdMap, add(t.prev(k)))
			}
			for _, id := range req.GetIds() {
				add(t.byID[id])
			}
			g.s.cl.mu.RUnlock()
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// received is one Recv of a stream.
type received[T any] struct {
	req T
	err error
}

// receive runs a stream's Recv loop in a goroutine of its own and hands
// each request over, so that the handler also sees the server closing:
// gRPC's graceful stop would otherwise wait for clients to end their
// streams. The goroutine ends with the stream (Recv fails once the
// handler returns).
func receive[T any](recv func() (T, error)) <-chan received[T] {
	ch := make(chan received[T], 1)
	go func() {
		for {
			req, err := recv()
			ch <- received[T]{req, err}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// nextRequest waits for a stream's next request, with its header checked.
// end is set when the client ended the stream; the error is the stream's,
// the header's, or the server closing.
func nextRequest[T interface{ GetHeader() *pdpb.RequestHeader }](g *grpcService, reqs <-chan received[T]) (req T, end bool, err error) {
	var r received[T]
	select {
	case r = <-reqs:
	case <-g.s.ctx.Done():
		return req, false, status.Error(codes.Unavailable, "server closing")
	}
	switch {
	case r.err == io.EOF:
		return req, true, nil
	case r.err != nil:
		return req, false, r.err
	}
	if err := g.check(r.req.GetHeader()); err != nil {
		return req, false, err
	}
	return r.req, false, nil
}

// SplitRegions splits the regions that hold the keys at them and waits
// for the stores to do it (admin.go).
func (g *grpcService) SplitRegions(ctx context.Context, req *pdpb.SplitRegionsRequest) (*pdpb.SplitRegionsResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.SplitRegionsResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	pct, ids := g.s.cl.splitRegions(ctx, req.GetSplitKeys(), int(req.GetRetryLimit()))
	return &pdpb.SplitRegionsResponse{Header: g.header(), FinishedPercentage: uint64(pct), RegionsId: ids}, nil
}

// ScatterRegion gives each region asked for a step toward an even spread;
// the percentage is of the regions that got one or needed none.
func (g *grpcService) ScatterRegion(_ context.Context, req *pdpb.ScatterRegionRequest) (*pdpb.ScatterRegionResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.ScatterRegionResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	ids := req.GetRegionsId()
	if len(ids) == 0 {
		ids = []uint64{req.GetRegionId()} // the single-region form older clients send
	}
	pct, failed := g.scatter(ids)
	return &pdpb.ScatterRegionResponse{Header: g.header(), FinishedPercentage: uint64(pct), FailedRegionsId: failed}, nil
}

func (g *grpcService) scatter(ids []uint64) (pct int, failed []uint64) {
	for _, id := range ids {
		if _, err := g.s.cl.scatter(id); err != nil {
			failed = append(failed, id)
		}
	}
	if len(ids) == 0 {
		return 100, nil
	}
	return (len(ids) - len(failed)) * 100 / len(ids), failed
}

// SplitAndScatterRegions is SplitRegions, then ScatterRegion on the new
// regions.
func (g *grpcService) SplitAndScatterRegions(ctx context.Context, req *pdpb.SplitAndScatterRegionsRequest) (*pdpb.SplitAndScatterRegionsResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	if !g.s.cl.bootstrapped() {
		return &pdpb.SplitAndScatterRegionsResponse{Header: g.errHeader(notBootstrapped())}, nil
	}
	split, ids := g.s.cl.splitRegions(ctx, req.GetSplitKeys(), int(req.GetRetryLimit()))
	scattered, _ := g.scatter(ids)
	return &pdpb.SplitAndScatterRegionsResponse{Header: g.header(), SplitFinishedPercentage: uint64(split),
		ScatterFinishedPercentage: uint64(scattered), RegionsId: ids}, nil
}

// GetOperator reports the region's operator under way, or how its last
// one ended (client-go waits for a scatter this way).
func (g *grpcService) GetOperator(_ context.Context, req *pdpb.GetOperatorRequest) (*pdpb.GetOperatorResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	op, ok := g.s.cl.getOperator(req.GetRegionId())
	if !ok {
		return &pdpb.GetOperatorResponse{Header: g.errHeader(&pdpb.Error{Type: pdpb.ErrorType_REGION_NOT_FOUND, Message: "Not Found"}),
			RegionId: req.GetRegionId()}, nil
	}
	return &pdpb.GetOperatorResponse{Header: g.header(), RegionId: req.GetRegionId(), Desc: []byte(op.desc),
		Kind: []byte(op.kind.String()), Status: op.status}, nil
}
