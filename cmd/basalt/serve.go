package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/basalt-db/basalt/config"
)

// shutdownTimeout is how long a shutdown lets running statements finish
// before it cancels them. It stays well under the ten seconds that service
// managers and test harnesses commonly wait before SIGKILL.
const shutdownTimeout = 5 * time.Second

// serveMain is the server command: basalt [flags]. Exit status: 0 after a
// clean shutdown, 1 if the server cannot start or stops on an error, 2 for
// a bad command line or configuration.
func serveMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("basalt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := config.RegisterFlags(fs)
	var showVersion, check bool
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	fs.BoolVar(&showVersion, "V", false, "shorthand for --version")
	fs.BoolVar(&check, "config-check", false, "check the configuration and exit")
	fs.Usage = func() {
		writeCommands(fs.Output())
		fmt.Fprintf(fs.Output(), "\nThe server's flags override the --config file; see config/basalt.toml.example.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "basalt: unexpected argument %q (run basalt -h for help)\n", fs.Arg(0))
		return 2
	}
	if showVersion {
		readBuildInfo().write(stdout)
		return 0
	}
	cfg, err := flags.Load()
	if err != nil {
		printError(stderr, "basalt", err)
		return 2
	}
	if check {
		for _, w := range cfg.Warnings {
			fmt.Fprintf(stderr, "basalt: warning: %s\n", w)
		}
		fmt.Fprintln(stdout, "basalt: configuration is valid")
		return 0
	}

	// Catch signals before starting, so that one sent while the store
	// opens still shuts down cleanly.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return serve(cfg, stdout, stderr, sigs, newEngine)
}

// serve runs the server configured by cfg until a signal arrives on sigs,
// then shuts it down; a second signal exits at once.
func serve(cfg *config.Config, stdout, stderr io.Writer, sigs <-chan os.Signal, newEngine engineFunc) int {
	logger, closeLog, err := openLog(cfg.Log.File, cfg.Log.SlogLevel(), stderr)
	if err != nil {
		printError(stderr, "basalt", err)
		return 1
	}
	defer closeLog()
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	// fail reports err on stderr, and in the log file if there is one.
	fail := func(msg string, err error) {
		if cfg.Log.File != "" {
			logger.Error(msg, "err", err)
		}
		printError(stderr, "basalt", err)
	}
	if cfg.Performance.MaxProcs > 0 {
		runtime.GOMAXPROCS(cfg.Performance.MaxProcs)
	}
	tuneGC(cfg.Performance, os.Getenv)

	info := readBuildInfo()
	n, err := startNode(cfg, info, logger, newEngine)
	if err != nil {
		fail("cannot start", err)
		return 1
	}
	printReady(stdout, cfg, info, n)

	status := 0
	select {
	case sig := <-sigs:
		logger.Info("shutting down", "signal", sig.String())
	case err := <-n.failed:
		fail("shutting down after an error", err)
		status = 1
	}
	go func() {
		sig := <-sigs
		fmt.Fprintf(stderr, "basalt: second signal (%v): exiting without a clean shutdown\n", sig)
		os.Exit(1)
	}()
	if err := n.shutdown(shutdownTimeout); err != nil {
		fail("shutdown failed", err)
		return 1
	}
	logger.Info("stopped")
	return status
}

// printError prints err as "prog: ..." lines, one per line of err; prog
// is the command ("basalt", "basalt store").
func printError(w io.Writer, prog string, err error) {
	fmt.Fprintf(w, "%s: %s\n", prog, strings.ReplaceAll(err.Error(), "\n", "\n"+prog+": "))
}

// printReady tells the user how to connect.
func printReady(w io.Writer, cfg *config.Config, info buildInfo, n *node) {
	host, port := hostPort(n.sqlAddr())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // listening on every interface: this one works
	}
	password := ""
	if cfg.InitialRootPassword != "" {
		password = " -p"
	}
	fmt.Fprintf(w, "Basalt %s is ready for connections.\n", info.Version)
	fmt.Fprintf(w, "  connect:  mysql -h %s -P %s -u root%s\n", host, port, password)
	if a := n.statusAddr(); a != nil {
		sh, sp := hostPort(a)
		if ip := net.ParseIP(sh); ip != nil && ip.IsUnspecified() {
			sh = "127.0.0.1"
		}
		fmt.Fprintf(w, "  status:   http://%s/status  (metrics: /metrics, dashboard: /dashboard)\n", net.JoinHostPort(sh, sp))
	}
	switch cfg.Store {
	case config.StoreTiKV:
		fmt.Fprintf(w, "  cluster:  PD at %s\n", cfg.Path)
	case config.StoreMockTiKV:
		fmt.Fprintf(w, "  data:     client-go's mock cluster, in memory\n")
	default:
		fmt.Fprintf(w, "  data:     %s\n", cfg.Path)
	}
}

func hostPort(a net.Addr) (string, string) {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String(), strconv.Itoa(t.Port)
	}
	h, p, _ := net.SplitHostPort(a.String())
	return h, p
}

// openLog returns the process's logger, which writes from level up to
// file (appending), or to stderr if file is empty, and a function that
// closes the file. The server, pd and store commands log through it.
func openLog(file string, level slog.Level, stderr io.Writer) (*slog.Logger, func(), error) {
	w, closeFn := stderr, func() {}
	if file != "" {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		w, closeFn = f, func() { f.Close() }
	}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)
	return logger, closeFn, nil
}

// tuneGC applies performance.gogc and performance.go-memory-limit, unless
// the GOGC or GOMEMLIMIT environment variables (which the Go runtime reads
// itself) are set.
func tuneGC(p config.Performance, getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(p.GOGC)
	}
	if getenv("GOMEMLIMIT") == "" && p.GoMemoryLimit > 0 {
		debug.SetMemoryLimit(int64(p.GoMemoryLimit))
	}
}
