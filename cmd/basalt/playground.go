package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/basalt-db/basalt/playground"
)

// playgroundMain is basalt playground: a cluster on this machine (package
// playground does the work), and basalt playground display. Exit status:
// 0 after a clean stop, 1 if a node failed, 2 if nothing could start as
// asked (see package playground).
func playgroundMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "display":
			return playgroundDisplay(args[1:], stdout, stderr)
		case "scale-out":
			return playgroundScaleOut(args[1:], stdout, stderr)
		case "scale-in":
			return playgroundScaleIn(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("basalt playground", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o playground.Options
	fs.IntVar(&o.PD, "pd", 1, "PD members (1, or 3 for a quorum)")
	fs.IntVar(&o.KV, "kv", 3, "storage nodes")
	fs.IntVar(&o.DB, "db", 1, "SQL nodes")
	fs.StringVar(&o.Tag, "tag", "", "the playground's name; its data is kept for the next run with this tag (default: a new name, data removed on exit)")
	fs.StringVar(&o.Dir, "data-dir", "", "the playground's directory, kept (default ~/.basalt/playground/{tag or a new name})")
	fs.IntVar(&o.DBPort, "db.port", playground.DefaultDBPort, "MySQL port of the first SQL node (the others get free ports)")
	fs.IntVar(&o.HAProxyPort, "haproxy.port", playground.DefaultHAProxyPort, "HAProxy's MySQL port")
	fs.BoolVar(&o.WithoutHAProxy, "without-haproxy", false, "do not start HAProxy in front of the SQL nodes")
	fs.StringVar(&o.LogLevel, "log-level", "info", "the nodes' log level: debug, info, warn or error")
	fs.StringVar(&o.PDConfig, "pd.config", "", "config file (TOML) of the PD members")
	fs.StringVar(&o.KVConfig, "kv.config", "", "config file (TOML, TiKV's keys) of the stores")
	fs.StringVar(&o.DBConfig, "db.config", "", "config file (TOML) of the SQL nodes")
	fs.Var((*envFlag)(&o.PDEnv), "pd.env", "KEY=VALUE added to the PD members' environment (repeatable; after the playground's defaults)")
	fs.Var((*envFlag)(&o.KVEnv), "kv.env", "KEY=VALUE added to the stores' environment (repeatable)")
	fs.Var((*envFlag)(&o.DBEnv), "db.env", "KEY=VALUE added to the SQL nodes' environment (repeatable)")
	fs.Float64Var(&o.DBCPUs, "db.cpus", 0, "cap each SQL node at this many CPUs (cgroup v1 cpu controller, as root; 0: no cap)")
	fs.Float64Var(&o.KVCPUs, "kv.cpus", 0, "cap each store at this many CPUs (as --db.cpus)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: basalt playground [flags]              run a cluster on this machine until Ctrl-C
       basalt playground display [flags]      show a playground's nodes and their state
       basalt playground scale-out [flags]    add stores or SQL nodes to a running playground
       basalt playground scale-in [flags]     remove a store or a SQL node from it

PD, stores and SQL nodes run as processes of this binary on 127.0.0.1,
HAProxy in front of the SQL nodes if it is installed. Each node's data
and log are under the playground's directory.

`)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "basalt playground: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	switch o.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		fmt.Fprintf(stderr, "basalt playground: --log-level %q: use debug, info, warn or error\n", o.LogLevel)
		return 2
	}
	// A port left at its default may give way to a free one; one given
	// may not.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["db.port"] {
		o.DBPort = 0
	}
	if !given["haproxy.port"] {
		o.HAProxyPort = 0
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "basalt playground: finding this binary: %v\n", err)
		return 1
	}
	o.Bin, o.HAProxy, o.Stdout, o.Stderr = bin, playground.FindHAProxy(), stdout, stderr

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return playground.Run(o, sigs)
}

// envFlag is a repeatable KEY=VALUE flag.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, " ") }

func (e *envFlag) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	*e = append(*e, v)
	return nil
}

// playgroundDisplay is basalt playground display.
func playgroundDisplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("basalt playground display", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tag, dir string
	fs.StringVar(&tag, "tag", "", "the playground's tag")
	fs.StringVar(&dir, "data-dir", "", "the playground's directory (default: every playground in ~/.basalt/playground)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: basalt playground display [--tag NAME | --data-dir DIR]   a playground's nodes and their state\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "basalt playground display: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	root, err := playground.DefaultRoot()
	if err != nil && dir == "" {
		fmt.Fprintf(stderr, "basalt playground display: %v\n", err)
		return 1
	}
	switch {
	case dir != "":
		err = playground.Display(stdout, dir)
	case tag != "":
		err = playground.Display(stdout, filepath.Join(root, tag))
	default:
		err = playground.DisplayAll(stdout, root)
	}
	if err != nil {
		fmt.Fprintf(stderr, "basalt playground display: %v\n", err)
		return 1
	}
	return 0
}

// playgroundScaleOut is basalt playground scale-out.
func playgroundScaleOut(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("basalt playground scale-out", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tag, dir string
	var kv, db int
	fs.StringVar(&tag, "tag", "", "the playground's tag")
	fs.StringVar(&dir, "data-dir", "", "the playground's directory (default: the one playground running in ~/.basalt/playground)")
	fs.IntVar(&kv, "kv", 0, "stores to add")
	fs.IntVar(&db, "db", 0, "SQL nodes to add (HAProxy takes them in)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: basalt playground scale-out [--tag NAME | --data-dir DIR] [--kv N] [--db N]\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "basalt playground scale-out: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if kv < 0 || db < 0 || kv+db == 0 {
		fmt.Fprintf(stderr, "basalt playground scale-out: say what to add: --kv N, --db N or both\n")
		return 2
	}
	dir, err := findPlayground(tag, dir)
	if err != nil {
		fmt.Fprintf(stderr, "basalt playground scale-out: %v\n", err)
		return 1
	}
	var added []playground.Node
	for _, step := range []struct {
		role  playground.Role
		count int
	}{{playground.RoleStore, kv}, {playground.RoleSQL, db}} {
		if step.count == 0 {
			continue
		}
		nodes, err := playground.ScaleOut(dir, step.role, step.count)
		if err != nil {
			fmt.Fprintf(stderr, "basalt playground scale-out: %v\n", err)
			return 1
		}
		added = append(added, nodes...)
	}
	playground.WriteNodes(stdout, dir, added)
	return 0
}

// playgroundScaleIn is basalt playground scale-in.
func playgroundScaleIn(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("basalt playground scale-in", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tag, dir, name string
	fs.StringVar(&tag, "tag", "", "the playground's tag")
	fs.StringVar(&dir, "data-dir", "", "the playground's directory (default: the one playground running in ~/.basalt/playground)")
	fs.StringVar(&name, "name", "", "the node to remove, as display names it (store2, db3)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: basalt playground scale-in [--tag NAME | --data-dir DIR] --name NODE\n\n"+
			"A store's regions move to the other stores first (PD takes it offline).\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 || name == "" {
		fmt.Fprintf(stderr, "basalt playground scale-in: name the node to remove with --name\n")
		return 2
	}
	dir, err := findPlayground(tag, dir)
	if err != nil {
		fmt.Fprintf(stderr, "basalt playground scale-in: %v\n", err)
		return 1
	}
	n, err := playground.ScaleIn(dir, name)
	if err != nil {
		fmt.Fprintf(stderr, "basalt playground scale-in: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s (%s at %s) is gone.\n", n.Name, n.Role, n.Addr)
	return 0
}

// findPlayground is the directory of the playground named by --tag or
// --data-dir, or else of the one playground running under the default
// root.
func findPlayground(tag, dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	root, err := playground.DefaultRoot()
	if err != nil {
		return "", err
	}
	if tag != "" {
		return filepath.Join(root, tag), nil
	}
	dirs, err := playground.Running(root)
	switch {
	case err != nil:
		return "", err
	case len(dirs) == 0:
		return "", fmt.Errorf("no playground runs in %s (give --data-dir if it runs elsewhere)", root)
	case len(dirs) > 1:
		return "", fmt.Errorf("%d playgrounds run in %s: name one with --tag", len(dirs), root)
	}
	return dirs[0], nil
}
