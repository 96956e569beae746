package storenode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// pdClient is the store's side of pdpb: it finds PD's leader among the
// endpoints (GetMembers), learns the cluster ID there, and calls the
// leader, finding it again when a call fails. Client-go's pd/client does
// not offer the store-side RPCs (PutStore, heartbeats, AskBatchSplit), so
// the store calls pdpb's generated client directly, as TiKV does.
type pdClient struct {
	urls []string

	mu        sync.Mutex
	clusterID uint64
	conn      *grpc.ClientConn
	client    pdpb.PDClient
}

// errPD wraps a PD error carried in a response header.
type errPD struct{ e *pdpb.Error }

func (e errPD) Error() string { return fmt.Sprintf("pd: %s: %s", e.e.Type, e.e.Message) }

func newPDClient(urls []string) *pdClient { return &pdClient{urls: urls} }

func hostOf(url string) string {
	url = strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://")
	return strings.TrimSuffix(url, "/")
}

// connect finds the leader and dials it.
func (c *pdClient) connect(ctx context.Context) error {
	var lastErr error
	for _, u := range c.urls {
		cc, err := grpc.NewClient(hostOf(u), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			lastErr = err
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := pdpb.NewPDClient(cc).GetMembers(cctx, &pdpb.GetMembersRequest{})
		cancel()
		cc.Close()
		if err != nil {
			lastErr = err
			continue
		}
		if e := resp.GetHeader().GetError(); e != nil {
			lastErr = errPD{e}
			continue
		}
		if len(resp.GetLeader().GetClientUrls()) == 0 {
			lastErr = errors.New("pd: no leader")
			continue
		}
		lc, err := grpc.NewClient(hostOf(resp.Leader.ClientUrls[0]), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			lastErr = err
			continue
		}
		c.mu.Lock()
		if c.conn != nil {
			c.conn.Close()
		}
		c.clusterID, c.conn, c.client = resp.Header.ClusterId, lc, pdpb.NewPDClient(lc)
		c.mu.Unlock()
		return nil
	}
	return fmt.Errorf("cannot reach PD at %s: %w", strings.Join(c.urls, ","), lastErr)
}

func (c *pdClient) header() *pdpb.RequestHeader {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &pdpb.RequestHeader{ClusterId: c.clusterID, SenderId: 0}
}

func (c *pdClient) pd() pdpb.PDClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

// ClusterID is the cluster's ID, known once connected.
func (c *pdClient) ClusterID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clusterID
}

// do calls f on the leader, reconnecting and retrying until ctx ends when
// the call fails on the transport or PD answers "not leader".
func (c *pdClient) do(ctx context.Context, f func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error)) error {
	for attempt := 0; ; attempt++ {
		cl := c.pd()
		if cl == nil {
			if err := c.connect(ctx); err != nil {
				if ctx.Err() != nil || attempt > 50 {
					return err
				}
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		h, err := f(cctx, cl, c.header())
		cancel()
		if err == nil && h.GetError() != nil {
			return errPD{h.Error}
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || attempt > 50 {
			return err
		}
		c.mu.Lock()
		if c.conn != nil {
			c.conn.Close()
		}
		c.conn, c.client = nil, nil
		c.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *pdClient) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
	}
}

func (c *pdClient) allocID(ctx context.Context) (uint64, error) {
	var id uint64
	err := c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.AllocID(ctx, &pdpb.AllocIDRequest{Header: h})
		id = r.GetId()
		return r.GetHeader(), err
	})
	return id, err
}

func (c *pdClient) isBootstrapped(ctx context.Context) (bool, error) {
	var b bool
	err := c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.IsBootstrapped(ctx, &pdpb.IsBootstrappedRequest{Header: h})
		b = r.GetBootstrapped()
		return r.GetHeader(), err
	})
	return b, err
}

func (c *pdClient) bootstrap(ctx context.Context, store *metapb.Store, region *metapb.Region) error {
	return c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.Bootstrap(ctx, &pdpb.BootstrapRequest{Header: h, Store: store, Region: region})
		return r.GetHeader(), err
	})
}

func (c *pdClient) putStore(ctx context.Context, store *metapb.Store) error {
	return c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.PutStore(ctx, &pdpb.PutStoreRequest{Header: h, Store: store})
		return r.GetHeader(), err
	})
}

func (c *pdClient) getStore(ctx context.Context, id uint64) (*metapb.Store, error) {
	var st *metapb.Store
	err := c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.GetStore(ctx, &pdpb.GetStoreRequest{Header: h, StoreId: id})
		st = r.GetStore()
		return r.GetHeader(), err
	})
	return st, err
}

func (c *pdClient) getRegionByID(ctx context.Context, id uint64) (*metapb.Region, error) {
	var reg *metapb.Region
	err := c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.GetRegionByID(ctx, &pdpb.GetRegionByIDRequest{Header: h, RegionId: id})
		reg = r.GetRegion()
		return r.GetHeader(), err
	})
	return reg, err
}

func (c *pdClient) storeHeartbeat(ctx context.Context, stats *pdpb.StoreStats) (*pdpb.StoreHeartbeatResponse, error) {
	var resp *pdpb.StoreHeartbeatResponse
	err := c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.StoreHeartbeat(ctx, &pdpb.StoreHeartbeatRequest{Header: h, Stats: stats})
		resp = r
		return r.GetHeader(), err
	})
	return resp, err
}

func (c *pdClient) askBatchSplit(ctx context.Context, region *metapb.Region, count int) ([]*pdpb.SplitID, error) {
	var ids []*pdpb.SplitID
	err := c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.AskBatchSplit(ctx, &pdpb.AskBatchSplitRequest{Header: h, Region: region, SplitCount: uint32(count)})
		ids = r.GetIds()
		return r.GetHeader(), err
	})
	return ids, err
}

func (c *pdClient) reportBatchSplit(ctx context.Context, regions []*metapb.Region) error {
	return c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.ReportBatchSplit(ctx, &pdpb.ReportBatchSplitRequest{Header: h, Regions: regions})
		return r.GetHeader(), err
	})
}

// tso returns a fresh timestamp from PD (a one-request Tso stream).
func (c *pdClient) tso(ctx context.Context) (uint64, error) {
	var ts uint64
	err := c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		st, err := pd.Tso(ctx)
		if err != nil {
			return nil, err
		}
		defer func() { _ = st.CloseSend() }() // the stream ends with ctx anyway
		if err := st.Send(&pdpb.TsoRequest{Header: h, Count: 1}); err != nil {
			return nil, err
		}
		r, err := st.Recv()
		if err != nil {
			return nil, err
		}
		t := r.GetTimestamp()
		ts = uint64(t.GetPhysical())<<18 | uint64(t.GetLogical())
		return r.GetHeader(), nil
	})
	return ts, err
}

// regionLeader returns the store that leads the region holding key (a raw
// key: PD's boundaries are encoded), 0 if PD knows no leader.
func (c *pdClient) regionLeader(ctx context.Context, key []byte) (uint64, error) {
	var leader uint64
	err := c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.GetRegion(ctx, &pdpb.GetRegionRequest{Header: h, RegionKey: codec.EncodeBytes(nil, key)})
		leader = r.GetLeader().GetStoreId()
		return r.GetHeader(), err
	})
	return leader, err
}

func (c *pdClient) gcSafePoint(ctx context.Context) (uint64, error) {
	var sp uint64
	err := c.do(ctx, func(ctx context.Context, pd pdpb.PDClient, h *pdpb.RequestHeader) (*pdpb.ResponseHeader, error) {
		r, err := pd.GetGCSafePoint(ctx, &pdpb.GetGCSafePointRequest{Header: h})
		sp = r.GetSafePoint()
		return r.GetHeader(), err
	})
	return sp, err
}
