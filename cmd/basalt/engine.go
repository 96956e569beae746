package main

import (
	"time"

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
	})
	if err != nil {
		return nil, err
	}
	return sqlEngine{Driver: driver.New(drv), sql: drv}, nil
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
