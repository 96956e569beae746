package pd

import (
	"context"

	"github.com/pingcap/kvproto/pkg/meta_storagepb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// metaStorage is PD's meta storage service: reads of PD's etcd by key
// range. pd/client's router discovery reads it when it starts (it looks for
// router service members under /ms/{cluster id}/router/registry/, of which
// Basalt has none); without the service it waits seconds for retries.
// Writes and watches are not served.
type metaStorage struct {
	meta_storagepb.UnimplementedMetaStorageServer
	s *Server
}

func (m *metaStorage) Get(ctx context.Context, req *meta_storagepb.GetRequest) (*meta_storagepb.GetResponse, error) {
	// pd/client's router discovery sends no cluster ID; another one is
	// refused.
	if id := req.GetHeader().GetClusterId(); id != 0 && id != m.s.clusterID {
		return nil, status.Errorf(codes.FailedPrecondition, "mismatch cluster id, need %d but got %d", m.s.clusterID, id)
	}
	var opts []clientv3.OpOption
	if len(req.RangeEnd) > 0 {
		opts = append(opts, clientv3.WithRange(string(req.RangeEnd)))
	}
	if req.Limit > 0 {
		opts = append(opts, clientv3.WithLimit(req.Limit))
	}
	if req.Revision > 0 {
		opts = append(opts, clientv3.WithRev(req.Revision))
	}
	resp, err := m.s.client.Get(ctx, string(req.Key), opts...)
	if err != nil {
		return nil, rpcErr(err)
	}
	out := &meta_storagepb.GetResponse{
		Header: &meta_storagepb.ResponseHeader{ClusterId: m.s.clusterID, Revision: resp.Header.Revision},
		More:   resp.More, Count: resp.Count,
	}
	for _, kv := range resp.Kvs {
		out.Kvs = append(out.Kvs, &meta_storagepb.KeyValue{Key: kv.Key, Value: kv.Value, CreateRevision: kv.CreateRevision,
			ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease})
	}
	return out, nil
}
