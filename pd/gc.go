package pd

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pingcap/kvproto/pkg/pdpb"
)

// GC safe points. The GC safe point (below which versions may be
// collected) only moves forward; the leader saves it in etcd.
//
// Service safe points, as PD's: each service (TiDB's GC worker, a backup,
// a changefeed) holds a safe point with a TTL under {root}/gc/service/{id},
// and the smallest one that has not expired bounds what GC may collect.
// A service cannot set a safe point below that minimum (the call answers
// the minimum and changes nothing); a TTL of 0 or less removes the
// service's safe point. The GC worker's ("gc_worker") never expires.

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
	if len(req.GetServiceId()) == 0 {
		return &pdpb.UpdateServiceGCSafePointResponse{Header: g.errHeader(&pdpb.Error{Type: pdpb.ErrorType_UNKNOWN,
			Message: "service safe point: empty service ID"})}, nil
	}
	g.s.gcMu.Lock()
	defer g.s.gcMu.Unlock()
	min, err := g.s.minServiceSafePoint(ctx)
	if err != nil {
		return nil, rpcErr(err)
	}
	id := string(req.GetServiceId())
	switch {
	case req.GetTTL() <= 0 && id != gcWorkerService:
		if err := g.s.leaderTxn(ctx, clientv3.OpDelete(g.s.serviceKey(id))); err != nil {
			return nil, rpcErr(err)
		}
	case min != nil && req.GetSafePoint() < min.SafePoint:
		// Below the minimum: refused, the minimum answered.
	default:
		sp := serviceSafePoint{ID: id, SafePoint: req.GetSafePoint(), ExpiredAt: time.Now().Unix() + req.GetTTL()}
		if id == gcWorkerService {
			sp.ExpiredAt = math.MaxInt64
		}
		b, _ := json.Marshal(sp)
		if err := g.s.leaderTxn(ctx, clientv3.OpPut(g.s.serviceKey(id), string(b))); err != nil {
			return nil, rpcErr(err)
		}
	}
	if min, err = g.s.minServiceSafePoint(ctx); err != nil {
		return nil, rpcErr(err)
	}
	resp := &pdpb.UpdateServiceGCSafePointResponse{Header: g.header()}
	if min != nil {
		resp.ServiceId, resp.MinSafePoint = []byte(min.ID), min.SafePoint
		resp.TTL = min.ExpiredAt - time.Now().Unix()
	}
	return resp, nil
}

// gcWorkerService is TiDB's GC worker, whose service safe point never
// expires.
const gcWorkerService = "gc_worker"

// serviceSafePoint is one service's safe point, as saved in etcd.
type serviceSafePoint struct {
	ID        string `json:"service_id"`
	SafePoint uint64 `json:"safe_point"`
	ExpiredAt int64  `json:"expired_at"` // unix seconds
}

func (s *Server) serviceKey(id string) string { return s.rootPath + "/gc/service/" + id }

// minServiceSafePoint is the smallest service safe point that has not
// expired (nil if none); expired ones are deleted on the way.
func (s *Server) minServiceSafePoint(ctx context.Context) (*serviceSafePoint, error) {
	resp, err := s.client.Get(ctx, s.serviceKey(""), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	now := time.Now().Unix()
	var min *serviceSafePoint
	for _, kv := range resp.Kvs {
		sp := &serviceSafePoint{}
		if err := json.Unmarshal(kv.Value, sp); err != nil {
			return nil, fmt.Errorf("pd: service safe point %s: %w", kv.Key, err)
		}
		if sp.ExpiredAt <= now {
			if err := s.leaderTxn(ctx, clientv3.OpDelete(string(kv.Key))); err != nil {
				return nil, err
			}
			continue
		}
		if min == nil || sp.SafePoint < min.SafePoint {
			min = sp
		}
	}
	return min, nil
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
