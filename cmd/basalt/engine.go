package main

import (
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/basalt-db/basalt/clustersync"
	"github.com/basalt-db/basalt/config"
	"github.com/basalt-db/basalt/driver"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/schemasync"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/slowlog"
	"github.com/basalt-db/basalt/stmtsummary"
)

// This file is the only one that knows the session package's API: it wires
// the SQL layer to the protocol server through driver/'s adapter.

// engine is the SQL layer as the binary uses it: the server's Driver, told
// about the server once it exists (for KILL and SHOW PROCESSLIST). If it
// also implements io.Closer, shutdown closes it after the last session and
// before the store.
type engine interface {
	server.Driver
	SetServer(*server.Server)
}

// engineFunc creates the engine over an open store; tests substitute one.
type engineFunc func(store kv.Storage, cfg *config.Config, info buildInfo) (engine, error)

// newEngine creates the SQL engine of package session.
func newEngine(store kv.Storage, cfg *config.Config, info buildInfo) (engine, error) {
	planCache := 0 // disabled
	if cfg.PreparedPlanCache.Enabled {
		planCache = cfg.PreparedPlanCache.Capacity
	}
	var sync *schemasync.Config
	dataDir := "" // the embedded store's, where the slow log goes
	if cfg.Store == config.StoreLocal {
		dataDir = cfg.Path
	}
	if cfg.Store == config.StoreTiKV {
		// Other SQL nodes may share the cluster: keep the schema in step
		// with them through PD's etcd.
		pds, err := config.PDEndpoints(cfg.Path)
		if err != nil {
			return nil, err
		}
		sync = &schemasync.Config{Endpoints: pds, Lease: time.Duration(cfg.Lease)} // logs to slog's default, the server's log
	}
	drv, err := session.Open(store, session.Config{
		RootPassword:           cfg.InitialRootPassword,
		LockWaitTimeout:        cfg.Txn.LockWait(),
		PessimisticByDefault:   cfg.Txn.Pessimistic(),
		PlanCacheCapacity:      planCache,
		ServerVersion:          serverVersion(cfg, info),
		PessimisticRetryLimit:  cfg.PessimisticTxn.MaxRetryCount,
		RequireSecureTransport: cfg.Security.RequireSecureTransport,
		SecureFilePriv:         cfg.Security.SecureFilePriv,
		SchemaSync:             sync,
		SlowQueryFile:          cfg.Log.SlowQueryPath(dataDir),
		SlowQueryMaxSize:       cfg.Log.SlowQueryMaxSize,
		SlowQueryMaxBackups:    cfg.Log.SlowQueryMaxBackups,
		Topology:               topologyInfo(cfg, info),
		SplitTable:             cfg.SplitTable,
	})
	if err != nil {
		return nil, err
	}
	return sqlEngine{Driver: driver.New(drv), sql: drv}, nil
}

// topologyInfo describes this SQL node for information_schema.CLUSTER_INFO
// and the other nodes (TiDB's /topology/tidb/<ip:port>/info). Its address
// is --host, or when that is a wildcard the host's first non-loopback
// address (TiDB's advertise-address default).
func topologyInfo(cfg *config.Config, info buildInfo) clustersync.TopologyInfo {
	ip := cfg.Host
	if a := net.ParseIP(ip); ip == "" || (a != nil && a.IsUnspecified()) {
		ip = localIP()
	}
	deploy := ""
	if exe, err := os.Executable(); err == nil {
		deploy = filepath.Dir(exe)
	}
	return clustersync.TopologyInfo{Version: serverVersion(cfg, info), GitHash: info.GitHash, IP: ip,
		Port: uint(cfg.Port), StatusPort: uint(cfg.Status.StatusPort), DeployPath: deploy,
		StartTimestamp: time.Now().Unix(), Labels: map[string]string{}}
}

// localIP is the host's first global unicast address, 127.0.0.1 if none.
func localIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// sqlEngine is the session layer as the server's Driver.
type sqlEngine struct {
	*driver.Driver
	sql *session.Driver
}

// SetServer gives the session layer the server's connections (KILL, SHOW
// PROCESSLIST, the auth cache, max_connections).
func (e sqlEngine) SetServer(s *server.Server) { e.sql.SetConnections(driver.Connections(s)) }

// Close ends the session layer's part in the cluster (its schema lease),
// after the last session.
func (e sqlEngine) Close() error { return e.sql.Close() }

// observed is what the dashboard reads of the SQL layer: the statement
// summary and the slow log (nil without one).
func (e sqlEngine) observed() (*stmtsummary.Summary, *slowlog.Logger) {
	return e.sql.StatementSummary(), e.sql.SlowLog()
}
