package session

import (
	"context"
	"time"

	"github.com/basalt-db/basalt/clustersync"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
)

// information_schema.CLUSTER_INFO, TiDB's table: one row per server of
// the cluster. On a cluster they are the live SQL nodes (each announces
// itself in PD's etcd under TiDB's /topology/tidb/ keys,
// clustersync.Topology), PD's members and the stores; on the embedded
// store, the one SQL node, as type "tidb" (the store and the timestamp
// oracle run inside it and are no servers of their own: what a TiDB user
// sees of a lone tidb-server on unistore, less its mock PD and store).

// clusterInfoRows computes CLUSTER_INFO's rows.
func (s *Session) clusterInfoRows(ctx context.Context) ([][]types.Datum, error) {
	d := s.d
	var servers []clustersync.ServerInfo
	if d.sync == nil {
		self := d.cfg.Topology
		if self.Version == "" {
			self.Version = expression.Version
		}
		if self.StartTimestamp == 0 {
			self.StartTimestamp = d.started.Unix()
		}
		servers = append(servers, clustersync.ServerInfo{Type: "tidb", Instance: self.Addr(), StatusAddr: self.StatusAddr(),
			Version: clustersync.FormatSQLVersion(self.Version), GitHash: self.GitHash, StartTimestamp: self.StartTimestamp})
	} else {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		if servers, err = clustersync.ClusterServers(ctx, d.sync.Client()); err != nil {
			return nil, errno.New(errno.ErUnknown, "%v", err)
		}
	}
	out := make([][]types.Datum, 0, len(servers))
	for _, sv := range servers {
		start, up := "", ""
		if sv.StartTimestamp > 0 {
			t := time.Unix(sv.StartTimestamp, 0)
			start, up = t.Format(time.RFC3339), time.Since(t).String()
		}
		out = append(out, []types.Datum{str(sv.Type), str(sv.Instance), str(sv.StatusAddr), str(sv.Version),
			str(sv.GitHash), str(start), str(up), types.NewUint(sv.ServerID)})
	}
	return out, nil
}
