package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/basalt-db/basalt/config"
	"github.com/basalt-db/basalt/storenode"
)

// storeStopTimeout bounds a clean stop: the time the store has to hand
// its regions' leadership to other stores before it closes anyway.
const storeStopTimeout = 30 * time.Second

// storeGC is the storage node's garbage collector: the SQL node's
// defaults (GOGC 400 under a soft limit of 384 MiB, docs/memory.md; the
// GOGC and GOMEMLIMIT variables win). A store's live heap is small (tens
// of MiB: Pebble's cache and memtables are not on it) while its reads
// make garbage fast (a range query's response, ~21 KB for 100 sysbench
// rows): with Go's GOGC 100 the leader collected several times a second
// and GC took 15-19% of its CPU under oltp_read_only
// (docs/cluster-bench/README.md).
var storeGC = config.Performance{GOGC: 400, GoMemoryLimit: 384 * config.MiB}

// storeMain is basalt store: a storage node, with TiKV's flags and config
// file. Exit status: 0 after a clean shutdown (SIGTERM, SIGINT), 1 if it
// cannot start or stops on an error, 2 for a bad command line or
// configuration.
func storeMain(args []string, stdout, stderr io.Writer) int {
	cfg := storenode.DefaultConfig()
	fs := flag.NewFlagSet("basalt store", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var file string
	fs.StringVar(&file, "config", "", "TOML config file with TiKV's sections and keys; flags override it")
	flags := newFileFlags(fs)
	flags.Func("pd", strings.Join(cfg.PD.Endpoints, ","), "PD endpoints, comma-separated (host:port or http://host:port)",
		func(v string) { cfg.PD.Endpoints = splitList(v) })
	flags.String("addr", &cfg.Server.Addr, "address to serve TiKV's gRPC API and other stores' Raft messages on")
	flags.String("advertise-addr", &cfg.Server.AdvertiseAddr, "address other nodes dial (default --addr)")
	flags.String("status-addr", &cfg.Server.StatusAddr, "address of the HTTP status port (/metrics, /status); empty for none")
	flags.String("data-dir", &cfg.Storage.DataDir, "data directory")
	flags.String("log-level", &cfg.Log.Level, "trace, debug, info, warn, error, critical or fatal")
	flags.String("log-file", &cfg.Log.File.Filename, "log to this file (default stderr)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: basalt store [flags]   run a storage node (TiKV's role)\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "basalt store: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var warnings []string
	if file != "" {
		var err error
		if warnings, err = storenode.LoadConfig(file, &cfg); err != nil {
			printError(stderr, "basalt store", err)
			return 2
		}
	}
	flags.apply() // over the file
	if err := cfg.Validate(); err != nil {
		printError(stderr, "basalt store", fmt.Errorf("invalid configuration: %w", err))
		return 2
	}
	tuneGC(storeGC, os.Getenv)
	logger, closeLog, err := openLog(cfg.Log.File.Filename, cfg.Log.SlogLevel(), stderr)
	if err != nil {
		printError(stderr, "basalt store", err)
		return 1
	}
	defer closeLog()
	for _, w := range warnings {
		logger.Warn(w)
	}
	// fail reports err on stderr, and in the log file if there is one.
	fail := func(msg string, err error) {
		if cfg.Log.File.Filename != "" {
			logger.Error(msg, "err", err)
		}
		printError(stderr, "basalt store", fmt.Errorf("%s: %w", msg, err))
	}

	// Catch signals before starting, so that one sent while the store
	// joins the cluster still stops it cleanly once started.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	node, err := storenode.Start(cfg, logger)
	if err != nil {
		fail("cannot start", err)
		return 1
	}
	select {
	case sig := <-sigs:
		logger.Info("store: shutting down", "signal", sig.String())
	case <-node.Done():
		fail("stopped", node.Err())
		return 1
	}
	go func() {
		sig := <-sigs
		fmt.Fprintf(stderr, "basalt store: second signal (%v): exiting without a clean shutdown\n", sig)
		os.Exit(1)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), storeStopTimeout)
	defer cancel()
	if err := node.Stop(ctx); err != nil {
		fail("stop failed", err)
		return 1
	}
	logger.Info("store: stopped")
	return 0
}
