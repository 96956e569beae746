package main

import (
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
	flags := newFileFlags(fs)
	flags.String("name", &cfg.Name, "this member's name, unique in the cluster")
	flags.String("data-dir", &cfg.DataDir, "data directory (default default.{name})")
	flags.String("client-urls", &cfg.ClientURLs, "URLs to serve clients on (pdpb, etcd, HTTP)")
	flags.String("peer-urls", &cfg.PeerURLs, "URLs to serve other members on")
	flags.String("advertise-client-urls", &cfg.AdvertiseClientURLs, "client URLs others dial (default --client-urls)")
	flags.String("advertise-peer-urls", &cfg.AdvertisePeerURLs, "peer URLs others dial (default --peer-urls)")
	flags.String("initial-cluster", &cfg.InitialCluster, "the members of a new cluster: name=peer-url,... (default this one alone)")
	flags.String("join", &cfg.Join, "client URLs of a running cluster to join")
	flags.String("log-file", &cfg.LogFile, "log to this file (default stderr)")
	flags.String("log-level", &cfg.LogLevel, "debug, info, warn, error or fatal")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: basalt pd [flags]   run a placement driver member\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
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
	flags.apply() // over the file
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "basalt pd: invalid configuration: %v\n", err)
		return 2
	}
	logger, closeLog, err := openLog(cfg.LogFile, slogLevel(cfg.LogLevel), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "basalt pd: %v\n", err)
		return 1
	}
	defer closeLog()
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
