package pd

import (
	"context"

	"github.com/pingcap/kvproto/pkg/pdpb"
)

// GC safe points. The GC safe point (below which versions may be
// collected) and the transaction safe point (below which no transaction
// may read) only move forward; they are saved in etcd by the leader.
// Service safe points (UpdateServiceGCSafePoint) are not kept yet: the
// call answers with the GC safe point as the minimum.

func (s *Server) gcKey() string { return s.rootPath + "/gc/safe_point" }

func (g *grpcService) GetGCSafePoint(ctx context.Context, req *pdpb.GetGCSafePointRequest) (*pdpb.GetGCSafePointResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	sp, err := g.s.getU64(ctx, g.s.gcKey())
	if err != nil {
		return nil, rpcErr(err)
	}
	return &pdpb.GetGCSafePointResponse{Header: g.header(), SafePoint: sp}, nil
}

// UpdateGCSafePoint moves the GC safe point forward; an older one leaves
// it as it is. The answer is the safe point now.
func (g *grpcService) UpdateGCSafePoint(ctx context.Context, req *pdpb.UpdateGCSafePointRequest) (*pdpb.UpdateGCSafePointResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	g.s.gcMu.Lock()
	defer g.s.gcMu.Unlock()
	sp, err := g.s.getU64(ctx, g.s.gcKey())
	if err != nil {
		return nil, rpcErr(err)
	}
	if req.GetSafePoint() > sp {
		if err := g.s.leaderTxn(ctx, putU64(g.s.gcKey(), req.GetSafePoint())); err != nil {
			return nil, rpcErr(err)
		}
		sp = req.GetSafePoint()
	}
	return &pdpb.UpdateGCSafePointResponse{Header: g.header(), NewSafePoint: sp}, nil
}

func (g *grpcService) UpdateServiceGCSafePoint(ctx context.Context, req *pdpb.UpdateServiceGCSafePointRequest) (*pdpb.UpdateServiceGCSafePointResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	sp, err := g.s.getU64(ctx, g.s.gcKey())
	if err != nil {
		return nil, rpcErr(err)
	}
	return &pdpb.UpdateServiceGCSafePointResponse{Header: g.header(), ServiceId: req.GetServiceId(),
		TTL: req.GetTTL(), MinSafePoint: sp}, nil
}

// GetGCState is what client-go polls every 10 s: without an answer for 90
// s it fails every transaction.
func (g *grpcService) GetGCState(ctx context.Context, req *pdpb.GetGCStateRequest) (*pdpb.GetGCStateResponse, error) {
	if err := g.check(req.GetHeader()); err != nil {
		return nil, err
	}
	sp, err := g.s.getU64(ctx, g.s.gcKey())
	if err != nil {
		return nil, rpcErr(err)
	}
	return &pdpb.GetGCStateResponse{Header: g.header(), GcState: &pdpb.GCState{TxnSafePoint: sp, GcSafePoint: sp}}, nil
}
