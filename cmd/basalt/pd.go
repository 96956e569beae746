package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/basalt-db/basalt/pd"
)

// pdMain is basalt pd: a placement driver member, with PD's flags. Exit
// status: 0 after a clean shutdown (SIGTERM, SIGINT), 1 if it cannot start
// or stops on an error, 2 for a bad command line or configuration.
func pdMain(args []string, stdout, stderr io.Writer) int {
	cfg := pd.DefaultConfig()
	fs := flag.NewFlagSet("basalt pd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var file string
	fs.StringVar(&file, "config", "", "TOML config file ([schedule], [replication]); flags override it")
	name := fs.String("name", cfg.Name, "this member's name, unique in the cluster")
	dataDir := fs.String("data-dir", "", "data directory (default default.{name})")
	clientURLs := fs.String("client-urls", cfg.ClientURLs, "URLs to serve clients on (pdpb, etcd, HTTP)")
	peerURLs := fs.String("peer-urls", cfg.PeerURLs, "URLs to serve other members on")
	advClient := fs.String("advertise-client-urls", "", "client URLs others dial (default --client-urls)")
	advPeer := fs.String("advertise-peer-urls", "", "peer URLs others dial (default --peer-urls)")
	initial := fs.String("initial-cluster", "", "the members of a new cluster: name=peer-url,... (default this one alone)")
	join := fs.String("join", "", "client URLs of a running cluster to join")
	logFile := fs.String("log-file", "", "log to this file (default stderr)")
	logLevel := fs.String("log-level", cfg.LogLevel, "debug, info, warn, error or fatal")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: basalt pd [flags]   run a placement driver member\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "basalt pd: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var warnings []string
	if file != "" {
		var err error
		if warnings, err = cfg.LoadFile(file); err != nil {
			fmt.Fprintf(stderr, "basalt pd: %v\n", err)
			return 2
		}
	}
	// Flags given on the command line override the file.
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "name":
			cfg.Name = *name
		case "data-dir":
			cfg.DataDir = *dataDir
		case "client-urls":
			cfg.ClientURLs = *clientURLs
		case "peer-urls":
			cfg.PeerURLs = *peerURLs
		case "advertise-client-urls":
			cfg.AdvertiseClientURLs = *advClient
		case "advertise-peer-urls":
			cfg.AdvertisePeerURLs = *advPeer
		case "initial-cluster":
			cfg.InitialCluster = *initial
		case "join":
			cfg.Join = *join
		case "log-file":
			cfg.LogFile = *logFile
		case "log-level":
			cfg.LogLevel = *logLevel
		}
	})
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "basalt pd: invalid configuration: %v\n", err)
		return 2
	}
	var w io.Writer = stderr
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "basalt pd: log-file: %v\n", err)
			return 1
		}
		defer f.Close()
		w = f
	}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slogLevel(cfg.LogLevel)}))
	for _, warn := range warnings {
		logger.Warn(warn)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	srv, err := pd.NewServer(cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "basalt pd: %v\n", err)
		return 1
	}
	select {
	case sig := <-sigs:
		logger.Info("pd: shutting down", "signal", sig.String())
		srv.Close()
		return 0
	case err := <-srv.Err():
		logger.Error("pd: etcd failed", "err", err)
		srv.Close()
		return 1
	}
}

func slogLevel(level string) slog.Level {
	switch strings.ToLower(level) {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error", "fatal":
		return slog.LevelError
	}
	return slog.LevelInfo
}
