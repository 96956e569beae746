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
	// The string flags, each bound to its field of cfg. They are parsed
	// into values of their own and copied over the file's settings only
	// when given on the command line.
	bound := []struct {
		name, usage string
		field       *string
		value       *string
	}{
		{name: "name", field: &cfg.Name, usage: "this member's name, unique in the cluster"},
		{name: "data-dir", field: &cfg.DataDir, usage: "data directory (default default.{name})"},
		{name: "client-urls", field: &cfg.ClientURLs, usage: "URLs to serve clients on (pdpb, etcd, HTTP)"},
		{name: "peer-urls", field: &cfg.PeerURLs, usage: "URLs to serve other members on"},
		{name: "advertise-client-urls", field: &cfg.AdvertiseClientURLs, usage: "client URLs others dial (default --client-urls)"},
		{name: "advertise-peer-urls", field: &cfg.AdvertisePeerURLs, usage: "peer URLs others dial (default --peer-urls)"},
		{name: "initial-cluster", field: &cfg.InitialCluster, usage: "the members of a new cluster: name=peer-url,... (default this one alone)"},
		{name: "join", field: &cfg.Join, usage: "client URLs of a running cluster to join"},
		{name: "log-file", field: &cfg.LogFile, usage: "log to this file (default stderr)"},
		{name: "log-level", field: &cfg.LogLevel, usage: "debug, info, warn, error or fatal"},
	}
	for i := range bound {
		bound[i].value = fs.String(bound[i].name, *bound[i].field, bound[i].usage)
	}
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
	// Flags given on the command line override the file.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, b := range bound {
		if given[b.name] {
			*b.field = *b.value
		}
	}
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
