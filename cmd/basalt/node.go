package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/basalt-db/basalt/config"
	"github.com/basalt-db/basalt/dashboard"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/metrics"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/store/local"
)

// node is a running server: the embedded store, the SQL engine over it,
// the MySQL listener and the status listener. It is started by startNode
// and stopped by shutdown, each called once, from one goroutine.
type node struct {
	logger   *slog.Logger
	store    kv.Storage
	engine   engine
	sql      *server.Server
	sqlLn    net.Listener
	status   *http.Server // nil when the status port is disabled
	statusLn net.Listener
	// stopDash stops the dashboard's sampler (nil without a status port).
	stopDash context.CancelFunc

	// failed receives the error of a listener that stopped on its own
	// (not by shutdown); the caller then shuts the node down.
	failed chan error
}

// startNode binds the ports (first, so that a port in use fails before
// anything touches the data directory), opens the store, creates the
// engine and starts serving. On error it releases what it took; the error
// names the problem ("cannot listen on 127.0.0.1:4000 ...", "data
// directory ... is in use by another Basalt process").
func startNode(cfg *config.Config, info buildInfo, logger *slog.Logger, newEngine engineFunc) (_ *node, err error) {
	n := &node{logger: logger, failed: make(chan error, 2)}
	defer func() {
		if err != nil {
			n.abort()
		}
	}()

	if n.sqlLn, err = listen("the MySQL port", cfg.Host, cfg.Port, "choose another with --port"); err != nil {
		return nil, err
	}
	if cfg.Status.StatusPort != 0 {
		n.statusLn, err = listen("the status port", cfg.Host, cfg.Status.StatusPort,
			"choose another with --status-port, or disable it with --status-port 0")
		if err != nil {
			return nil, err
		}
	}

	opened := time.Now()
	if n.store, err = openStorage(cfg, logger); err != nil {
		return nil, err
	}
	if cfg.Store == config.StoreLocal {
		logger.Info("store opened", "path", cfg.Path, "took", time.Since(opened).Round(time.Millisecond),
			"sync-log", cfg.Storage.SyncLog, "block-cache", cfg.Storage.BlockCache.Capacity.String(),
			"write-buffer-size", cfg.RocksDB.DefaultCF.WriteBufferSize.String())
	} else {
		logger.Info("store opened", "store", cfg.Store, "path", cfg.Path, "took", time.Since(opened).Round(time.Millisecond))
	}

	if n.engine, err = newEngine(n.store, cfg, info); err != nil {
		return nil, fmt.Errorf("cannot start the SQL engine: %w", err)
	}
	sc := serverConfig(cfg, info, logger)
	if sc.TLSConfig, err = tlsConfig(cfg); err != nil {
		return nil, err
	}
	if n.sql, err = server.New(sc, n.engine); err != nil {
		return nil, err
	}
	n.engine.SetServer(n.sql)
	metrics.SetConnectionsFunc(n.sql.ConnectionCount)
	if store, ok := n.store.(*local.Store); ok {
		metrics.SetLatestCacheFunc(func() metrics.LatestCacheStats {
			st := store.LatestCacheStats()
			return metrics.LatestCacheStats{Chunks: st.Chunks, Bytes: st.Bytes, Loads: st.Loads, Evictions: st.Evictions, Refused: st.Refused}
		})
	}

	go func() {
		if err := n.sql.Serve(n.sqlLn); !errors.Is(err, server.ErrServerClosed) {
			n.failed <- fmt.Errorf("MySQL listener: %w", err)
		}
	}()
	logger.Info("serving MySQL clients", "addr", n.sqlLn.Addr().String(), "version", serverVersion(cfg, info))
	if n.statusLn != nil {
		dash := dashboard.New(n.dashboardSources(cfg))
		var dctx context.Context
		dctx, n.stopDash = context.WithCancel(context.Background())
		go dash.Run(dctx)
		n.status = &http.Server{
			Handler:           statusHandler(info, serverVersion(cfg, info), time.Now(), n.sql.ConnectionCount, dash),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}
		go func() {
			if err := n.status.Serve(n.statusLn); !errors.Is(err, http.ErrServerClosed) {
				n.failed <- fmt.Errorf("status listener: %w", err)
			}
		}()
		logger.Info("serving status", "addr", n.statusLn.Addr().String())
	}
	return n, nil
}

// listen binds host:port for what, explaining the usual failures.
func listen(what, host string, port int, hint string) (net.Listener, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("cannot listen on %s for %s: the address is already in use (is another server running?); %s", addr, what, hint)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("cannot listen on %s for %s: permission denied; %s", addr, what, hint)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, fmt.Errorf("cannot listen on %s for %s: no interface has address %s (check --host)", addr, what, host)
	}
	return nil, fmt.Errorf("cannot listen on %s for %s: %w", addr, what, err)
}

func (n *node) sqlAddr() net.Addr { return n.sqlLn.Addr() }

// statusAddr is the status port's address, nil if it is disabled.
func (n *node) statusAddr() net.Addr {
	if n.statusLn == nil {
		return nil
	}
	return n.statusLn.Addr()
}

// shutdown stops the node: it stops accepting MySQL connections, lets
// running statements finish for up to timeout (then cancels them), closes
// every session (rolling back open transactions), stops the status server
// and closes the store. The error is one that loses data or leaves the
// store unclosed; cancelled statements are only logged.
func (n *node) shutdown(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.sql.Shutdown(ctx); err != nil {
		n.logger.Warn("statements still running were cancelled", "after", timeout)
	}
	metrics.SetConnectionsFunc(nil)
	if n.stopDash != nil {
		n.stopDash()
	}
	if n.status != nil {
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		if err := n.status.Shutdown(sctx); err != nil {
			n.status.Close() // a long /debug/pprof/profile, say
		}
		scancel()
	}
	var errs []error
	if c, ok := n.engine.(io.Closer); ok {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the SQL engine: %w", err))
		}
	}
	if err := n.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the store: %w", err))
	}
	return errors.Join(errs...)
}

// abort releases what a failed startNode took.
func (n *node) abort() {
	if n.sql != nil {
		n.sql.Close()
		metrics.SetConnectionsFunc(nil)
	}
	if n.sqlLn != nil {
		n.sqlLn.Close()
	}
	if n.statusLn != nil {
		n.statusLn.Close()
	}
	if n.stopDash != nil {
		n.stopDash()
	}
	if c, ok := n.engine.(io.Closer); ok {
		c.Close()
	}
	if n.store != nil {
		n.store.Close()
	}
}
