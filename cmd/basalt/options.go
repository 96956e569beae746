package main

import (
	"context"
	"crypto/tls"
	"log"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/basalt-db/basalt/config"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/store/local"
)

// storeOptions maps the configuration onto the embedded store's options.
// The data directory itself (cfg.Path) is local.Open's first argument.
func storeOptions(cfg *config.Config, logger *slog.Logger) local.Options {
	return local.Options{
		NoSync:                      !cfg.Storage.SyncLog,
		BlockCacheSize:              int64(cfg.Storage.BlockCache.Capacity),
		MemTableSize:                uint64(cfg.RocksDB.DefaultCF.WriteBufferSize),
		MemTableStopWritesThreshold: cfg.RocksDB.DefaultCF.MaxWriteBufferNumber,
		LatestCacheSize:             latestCacheSize(cfg.Storage.LatestVersionCacheSize),
		WALMinSyncInterval:          time.Duration(cfg.Storage.WALMinSyncInterval),
		GCLifeTime:                  time.Duration(cfg.Storage.GCLifeTime),
		// A commit waits for another transaction's lock as long as a
		// statement would (innodb_lock_wait_timeout).
		CommitLockWait: cfg.Txn.LockWait(),
		Logger:         log.New(storeLog{logger.Handler().WithAttrs([]slog.Attr{slog.String("component", "store")})}, "", 0),
	}
}

// latestCacheSize maps latest-version-cache-size onto the store's option,
// where 0 asks for the default size and a negative size turns it off.
func latestCacheSize(size config.ByteSize) int64 {
	if size == 0 {
		return -1
	}
	return int64(size)
}

// storeLog carries the store's log.Logger lines into slog, each at its
// level: Pebble's errors ("pebble: error: ...") at error, the rest of
// Pebble's messages (WAL replay, ...) at debug, the store's own (GC) at
// info.
type storeLog struct{ h slog.Handler }

func (s storeLog) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelInfo
	switch {
	case strings.HasPrefix(msg, "pebble: error: "):
		level = slog.LevelError
	case strings.HasPrefix(msg, "pebble: "):
		level = slog.LevelDebug
	}
	ctx := context.Background()
	if !s.h.Enabled(ctx, level) {
		return len(p), nil
	}
	return len(p), s.h.Handle(ctx, slog.NewRecord(time.Now(), level, msg, 0))
}

// serverVersion is the version the greeting, VERSION() and /status
// report: the configuration's server-version, else the build's.
func serverVersion(cfg *config.Config, info buildInfo) string {
	if cfg.ServerVersion != "" {
		return cfg.ServerVersion
	}
	return info.ServerVersion()
}

// serverConfig maps the configuration onto the MySQL protocol server's.
func serverConfig(cfg *config.Config, info buildInfo, logger *slog.Logger) server.Config {
	return server.Config{
		ServerVersion:    serverVersion(cfg, info),
		MaxAllowedPacket: int(cfg.MaxAllowedPacket),
		MaxConnections:   cfg.MaxConnections,
		Logger:           logger.With("component", "server"),
	}
}

// tlsConfig is the TLS configuration the server offers: the certificate
// the configuration names, else (auto-tls) one created in the data
// directory at first start, or, on a node that keeps no data (a cluster's
// SQL node), one made for this run in a temporary directory, as TiDB's
// auto-tls does; nil for no TLS. The store must be open, so that the data
// directory exists and is Basalt's.
func tlsConfig(cfg *config.Config) (*tls.Config, error) {
	switch {
	case cfg.Security.SSLCert != "":
		return server.LoadTLSConfig(cfg.Security.SSLCert, cfg.Security.SSLKey)
	case cfg.Security.AutoTLS && cfg.Store == config.StoreLocal:
		return server.AutoTLSConfig(cfg.Path)
	case cfg.Security.AutoTLS:
		dir, err := os.MkdirTemp("", "basalt-auto-tls-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir) // the certificate is loaded; nothing reads the files again
		return server.AutoTLSConfig(dir)
	}
	return nil, nil
}
