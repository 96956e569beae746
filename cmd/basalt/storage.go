package main

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/basalt-db/basalt/config"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/store/tikv"
)

// pdConnectTimeout is how long a SQL node keeps trying to reach PD at
// start before it gives up (a variable for tests).
var pdConnectTimeout = 20 * time.Second

// openStorage opens the storage cfg.Store names: the embedded store in
// cfg.Path, a cluster through its PD members, or client-go's mock
// cluster.
func openStorage(cfg *config.Config, logger *slog.Logger) (kv.Storage, error) {
	switch cfg.Store {
	case config.StoreTiKV, config.StoreMockTiKV:
		// client-go reports every lock it resolves at info.
		if err := tikv.SetLogLevel(clientGoLogLevel(cfg.Log.Level)); err != nil {
			return nil, err
		}
		tc := cfg.TiKVClient
		tikv.Configure(tikv.ClientConfig{
			GrpcConnectionCount:     uint(tc.GrpcConnectionCount),
			MaxBatchSize:            uint(tc.MaxBatchSize),
			MaxBatchWaitTime:        time.Duration(tc.MaxBatchWaitTime),
			BatchWaitSize:           uint(tc.BatchWaitSize),
			BatchPolicy:             tc.BatchPolicy,
			RegionCacheTTL:          time.Duration(tc.RegionCacheTTL) * time.Second,
			CommitTimeout:           time.Duration(tc.CommitTimeout),
			AsyncCommitKeysLimit:    uint(tc.AsyncCommit.KeysLimit),
			AsyncCommitKeySizeLimit: uint64(tc.AsyncCommit.TotalKeySizeLimit),
		})
	}
	var st kv.Storage
	var err error
	// Each store's nil pointer must not become a non-nil kv.Storage.
	switch cfg.Store {
	case config.StoreTiKV:
		st, err = openCluster(cfg, logger)
	case config.StoreMockTiKV:
		var m *tikv.Storage
		if m, err = tikv.OpenMock(); err == nil {
			st = m
		}
	default:
		var l *local.Store
		if l, err = local.Open(cfg.Path, storeOptions(cfg, logger)); err == nil {
			st = l
		}
	}
	return st, err
}

// openCluster connects to the cluster's PD members. Until one of them
// accepts a connection it retries, saying so, for pdConnectTimeout (the
// client's own start, once PD answers, waits much longer for a PD that
// never does).
func openCluster(cfg *config.Config, logger *slog.Logger) (kv.Storage, error) {
	pds, err := config.PDEndpoints(cfg.Path)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(pdConnectTimeout)
	for !anyAnswers(pds) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("cannot reach PD at %v after %v: no member accepts connections", pds, pdConnectTimeout)
		}
		logger.Warn("cannot reach PD; retrying", "pd", pds)
		time.Sleep(time.Second)
	}
	st, err := tikv.Open(pds)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// anyAnswers reports whether one of addrs accepts a TCP connection.
func anyAnswers(addrs []string) bool {
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			return true
		}
	}
	return false
}

// clientGoLogLevel keeps client-go's log a step quieter than Basalt's.
func clientGoLogLevel(level string) string {
	switch level {
	case "debug":
		return "info"
	case "info":
		return "warn"
	}
	return level
}
