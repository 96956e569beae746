// Package playground runs a Basalt cluster on one machine, as TiUP's
// playground runs TiDB's: PD members, stores and SQL nodes as child
// processes of the basalt binary on 127.0.0.1, and HAProxy in front of
// the SQL nodes when it is installed.
//
// The contract, for a user and for tests:
//
//   - Nodes start in order, each waited for: PD (healthy, with a leader),
//     the stores (each serves its status page, then PD shows every one Up
//     and the cluster bootstrapped), the first SQL node (SELECT 1 answers;
//     it creates the SQL catalog, so it starts alone), the other SQL
//     nodes, HAProxy (SELECT 1 through it). Then the node table and the
//     line "... is ready" go to stdout.
//   - Ports: the first SQL node's is --db.port and HAProxy's
//     --haproxy.port; a default (4000, 3390) that is in use gives way to
//     a free port, a port given does not. Every other port is free when
//     chosen. On a kept directory PD members and stores get the ports of
//     the last run, which their data records, or the playground refuses
//     to start.
//   - The directory (layout in state.go) is removed on exit only when the
//     playground named it itself (no --tag, no --data-dir) and everything
//     ran and stopped cleanly; otherwise it is kept for the next run or
//     for its logs.
//   - A node that dies is reported on stderr (its name, how it ended, the
//     end of its log) and not restarted; the others go on, as TiUP's do.
//   - SIGINT or SIGTERM stops the nodes in reverse order of roles
//     (HAProxy, SQL nodes, stores, PD), each role's nodes together, each
//     with SIGTERM and SIGKILL after a timeout; a second signal kills
//     what is left. Exit status 0 if every node ran until stopped and
//     stopped cleanly, 1 otherwise, 2 if nothing could start as asked
//     (a bad flag, a port given in use, a directory in use or not a
//     playground's).
//
// The files: playground.go runs one (start, watch, stop); layout.go
// decides the nodes, ports and command lines; process.go is a child
// process; probe.go asks a node whether it serves; haproxy.go is
// HAProxy's configuration; state.go the directory and its state file;
// display.go is basalt playground display.
package playground

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Options configure a playground.
type Options struct {
	// Bin is the basalt binary the nodes run; HAProxy is haproxy's path,
	// "" if it is not installed (FindHAProxy).
	Bin, HAProxy   string
	WithoutHAProxy bool
	PD, KV, DB     int
	// Tag names the playground and keeps its directory; Dir is the
	// directory (default DefaultRoot()/tag, or a new one there).
	Tag, Dir string
	// DBPort and HAProxyPort are the ports asked for; 0 for the defaults.
	DBPort, HAProxyPort int
	LogLevel            string // the nodes' log level
	Stdout, Stderr      io.Writer
}

// DefaultRoot is the directory that holds playgrounds by name,
// ~/.basalt/playground.
func DefaultRoot() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".basalt", "playground"), nil
}

var tagPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// How long a node has to get ready, and to stop after SIGTERM before it is
// killed. A store hands its leaders to others for up to 30 s when it stops.
var (
	readyTimeout = map[Role]time.Duration{RolePD: 60 * time.Second, RoleStore: 60 * time.Second,
		RoleSQL: 60 * time.Second, RoleHAProxy: 15 * time.Second}
	stopTimeout = map[Role]time.Duration{RolePD: 15 * time.Second, RoleStore: 40 * time.Second,
		RoleSQL: 15 * time.Second, RoleHAProxy: 5 * time.Second}
)

// playground is one run.
type playground struct {
	o         Options
	generated bool // Dir was made up here: removed after a clean run
	lock      *os.File

	mu       sync.Mutex // guards st (and the state file), died
	st       *State
	children []*child
	died     int         // nodes that ended unexpectedly
	deaths   chan *child // nodes that ended unexpectedly, to report
	watchers sync.WaitGroup
	force    chan struct{} // closed by a second signal while stopping
}

// Run runs a playground until a signal arrives on sigs, and returns the
// exit status.
func Run(o Options, sigs <-chan os.Signal) int {
	p, err := open(o)
	if err != nil {
		fmt.Fprintf(o.Stderr, "basalt playground: %v\n", err)
		return 2 // nothing started
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- p.start(ctx) }()
	select {
	case err = <-started:
	case sig := <-sigs:
		fmt.Fprintf(o.Stderr, "basalt playground: %v while starting: stopping\n", sig)
		cancel()
		<-started
		err = errors.New("interrupted")
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "basalt playground: %v\n", err)
		p.stopAll(sigs)
		p.reportDeaths("ended while starting")
		p.close(false)
		return 1
	}
	p.printReady()
	for {
		select {
		case c := <-p.deaths:
			p.reportDeath(c, "exited unexpectedly")
		case sig := <-sigs:
			fmt.Fprintf(o.Stdout, "\n%v: stopping the playground\n", sig)
			ok := p.stopAll(sigs)
			p.reportDeaths("exited unexpectedly")
			p.mu.Lock()
			ok = ok && p.died == 0
			p.mu.Unlock()
			p.close(ok)
			if !ok {
				return 1
			}
			return 0
		}
	}
}

// open resolves the playground's directory, takes its lock and lays out
// its nodes.
func open(o Options) (*playground, error) {
	switch {
	case o.PD < 1:
		return nil, errors.New("--pd must be at least 1")
	case o.KV < 1:
		return nil, errors.New("--kv must be at least 1")
	case o.DB < 0:
		return nil, errors.New("--db must be 0 or more")
	case o.Tag != "" && !tagPattern.MatchString(o.Tag):
		return nil, fmt.Errorf("--tag %q: use letters, digits, '.', '_' and '-'", o.Tag)
	}
	p := &playground{o: o, force: make(chan struct{})}
	dir, name := o.Dir, o.Tag
	if dir == "" {
		root, err := DefaultRoot()
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
		if o.Tag != "" {
			dir = filepath.Join(root, o.Tag)
		} else if dir, err = os.MkdirTemp(root, "run-"); err != nil {
			return nil, err
		} else {
			p.generated = true
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = filepath.Base(dir)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if p.lock, err = lockDir(dir); err != nil {
		if errors.Is(err, errRunning) {
			return nil, fmt.Errorf("playground %q is already running in %s (basalt playground display --data-dir %s)", name, dir, dir)
		}
		return nil, err
	}
	fail := func(err error) (*playground, error) {
		p.lock.Close()
		if p.generated {
			os.RemoveAll(dir)
		}
		return nil, err
	}

	prev := map[string]Node{}
	if old, err := ReadState(dir); err == nil {
		pds, stores := 0, 0
		for _, n := range old.Nodes {
			prev[n.Name] = n
			switch n.Role {
			case RolePD:
				pds++
			case RoleStore:
				stores++
			}
		}
		if pds != o.PD {
			return fail(fmt.Errorf("%s holds a playground of %d PD members: start it with --pd %d (PD's members stay as they were made)", dir, pds, pds))
		}
		if stores > o.KV {
			return fail(fmt.Errorf("%s holds the data of %d stores: start it with --kv %d or more (a store left out would be down)", dir, stores, stores))
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	haproxy := !o.WithoutHAProxy && o.HAProxy != ""
	nodes, err := layout(dir, layoutOptions{pd: o.PD, kv: o.KV, db: o.DB, dbPort: o.DBPort, haproxyPort: o.HAProxyPort,
		haproxy: haproxy, logLevel: o.LogLevel}, prev, &ports{inUse: portInUse, free: freePort, taken: map[int]bool{}})
	if err != nil {
		return fail(err)
	}
	p.st = &State{Name: name, Tag: o.Tag, Dir: dir, PID: os.Getpid(), Nodes: nodes}
	p.deaths = make(chan *child, len(nodes)) // never full: a node dies once
	if err := p.st.write(); err != nil {
		return fail(err)
	}
	return p, nil
}

// nodes returns the nodes of a role.
func (p *playground) nodes(role Role) []*Node {
	var out []*Node
	for i := range p.st.Nodes {
		if p.st.Nodes[i].Role == role {
			out = append(out, &p.st.Nodes[i])
		}
	}
	return out
}

// start starts the nodes in order and waits for each to serve.
func (p *playground) start(ctx context.Context) error {
	o := p.o
	var kind []string
	kind = append(kind, plural(o.PD, "PD member"), plural(o.KV, "store"), plural(o.DB, "SQL node"))
	haproxy := p.nodes(RoleHAProxy)
	if len(haproxy) > 0 {
		kind = append(kind, "HAProxy")
	}
	kept := "kept"
	if p.generated {
		kept = "removed after a clean stop"
	}
	fmt.Fprintf(o.Stdout, "basalt playground %q: %s, in %s (%s)\n", p.st.Name, strings.Join(kind, ", "), p.st.Dir, kept)
	if o.DB > 0 && !o.WithoutHAProxy && o.HAProxy == "" {
		fmt.Fprintln(o.Stderr, haproxyMissing)
	}

	pds := p.nodes(RolePD)
	if err := p.startRole(ctx, "PD", pds, func(ctx context.Context, n *Node) error { return probePD(ctx, n) }); err != nil {
		return err
	}
	stores := p.nodes(RoleStore)
	if err := p.startRole(ctx, "stores", stores, func(ctx context.Context, n *Node) error { return probeStore(ctx, n) }); err != nil {
		return err
	}
	begin := time.Now()
	fmt.Fprintf(o.Stdout, "Waiting for PD to show every store Up and the cluster bootstrapped ...")
	if err := p.wait(ctx, nil, readyTimeout[RoleStore], func(ctx context.Context) error {
		return probeCluster(ctx, pds[0].Addr, stores)
	}); err != nil {
		fmt.Fprintln(o.Stdout)
		return err
	}
	fmt.Fprintf(o.Stdout, " done (%.1fs)\n", time.Since(begin).Seconds())
	sqlProbe := func(ctx context.Context, n *Node) error { return probeSQL(ctx, n.Addr) }
	if sql := p.nodes(RoleSQL); len(sql) > 0 {
		// The first SQL node creates the catalog of a new cluster; the
		// others start once it is there.
		if err := p.startRole(ctx, "SQL node "+sql[0].Name, sql[:1], sqlProbe); err != nil {
			return err
		}
		if len(sql) > 1 {
			if err := p.startRole(ctx, "SQL nodes", sql[1:], sqlProbe); err != nil {
				return err
			}
		}
		if len(haproxy) > 0 {
			cfg := haproxyConfig(p.st.Name, haproxy[0].Addr, derefs(sql))
			if err := os.MkdirAll(haproxy[0].Dir, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(haproxyConfigPath(haproxy[0]), []byte(cfg), 0o644); err != nil {
				return err
			}
			if err := p.startRole(ctx, "HAProxy", haproxy, sqlProbe); err != nil {
				return err
			}
		}
	}
	return nil
}

// startRole starts nodes together and waits until probe says each serves.
func (p *playground) startRole(ctx context.Context, what string, nodes []*Node, probe func(context.Context, *Node) error) error {
	begin := time.Now()
	fmt.Fprintf(p.o.Stdout, "Starting %s ...", what)
	var started []*child
	for _, n := range nodes {
		bin := p.o.Bin
		if n.Role == RoleHAProxy {
			bin = p.o.HAProxy
		}
		c, err := startChild(bin, n)
		if err != nil {
			fmt.Fprintln(p.o.Stdout)
			return err
		}
		p.mu.Lock()
		n.PID = c.pid()
		p.children = append(p.children, c)
		p.mu.Unlock()
		started = append(started, c)
		p.watchers.Go(func() { p.watch(c) })
	}
	p.saveState()
	for _, c := range started {
		if err := p.wait(ctx, c, readyTimeout[c.node.Role], func(ctx context.Context) error { return probe(ctx, c.node) }); err != nil {
			fmt.Fprintln(p.o.Stdout)
			return err
		}
		p.mu.Lock()
		c.node.Status = "up"
		p.mu.Unlock()
	}
	p.saveState()
	fmt.Fprintf(p.o.Stdout, " done (%.1fs)\n", time.Since(begin).Seconds())
	return nil
}

// wait calls probe until it succeeds, the node c or any other ends
// unexpectedly, ctx ends or timeout passes.
func (p *playground) wait(ctx context.Context, c *child, timeout time.Duration, probe func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := probe(pctx)
		cancel()
		if err == nil {
			return nil
		}
		p.mu.Lock()
		died := p.died
		p.mu.Unlock()
		if c != nil && c.done() || died > 0 {
			return errors.New("a node ended while starting")
		}
		if time.Now().After(deadline) {
			if c == nil {
				return fmt.Errorf("not ready within %v: %v", timeout, err)
			}
			return fmt.Errorf("%s not ready within %v: %v; the end of %s:\n%s",
				c.node.Name, timeout, err, c.node.LogFile, logTail(c.node.LogFile, 20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// watch waits for a node's process to end and, unless the playground
// stopped it, records and queues the death.
func (p *playground) watch(c *child) {
	<-c.exited
	p.mu.Lock()
	c.node.PID = 0
	expected := c.stopping.Load()
	if expected {
		c.node.Status = "stopped"
	} else {
		c.node.Status = "exited: " + c.exitStatus()
		p.died++
	}
	p.mu.Unlock()
	p.saveState()
	if !expected {
		p.deaths <- c
	}
}

// reportDeath tells the user that a node ended unexpectedly (what: how
// to say it).
func (p *playground) reportDeath(c *child, what string) {
	fmt.Fprintf(p.o.Stderr, "basalt playground: %s (pid %d) %s (%s); it is not restarted. The end of %s:\n%s\n",
		c.node.Name, c.pid(), what, c.exitStatus(), c.node.LogFile, logTail(c.node.LogFile, 15))
}

// reportDeaths reports the deaths not yet reported; the watchers have
// ended.
func (p *playground) reportDeaths(what string) {
	for len(p.deaths) > 0 {
		p.reportDeath(<-p.deaths, what)
	}
}

// stopAll stops the nodes, HAProxy first and PD last, the nodes of a role
// together. A signal on sigs meanwhile kills what is left. It reports
// whether every node stopped cleanly.
func (p *playground) stopAll(sigs <-chan os.Signal) bool {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(p.o.Stderr, "basalt playground: %v again: killing the nodes left\n", sig)
			close(p.force)
		case <-done:
		}
	}()
	p.mu.Lock()
	children := slices.Clone(p.children)
	p.mu.Unlock()
	ok := true
	for _, role := range []Role{RoleHAProxy, RoleSQL, RoleStore, RolePD} {
		var tier []*child
		for _, c := range children {
			if c.node.Role == role && !c.done() {
				tier = append(tier, c)
			}
		}
		if len(tier) == 0 {
			continue
		}
		begin := time.Now()
		var names []string
		for _, c := range tier {
			names = append(names, c.node.Name)
		}
		fmt.Fprintf(p.o.Stdout, "Stopping %s ...", strings.Join(names, ", "))
		errs := make([]error, len(tier))
		var wg sync.WaitGroup
		for i, c := range tier {
			wg.Go(func() { errs[i] = c.stop(stopTimeout[role], p.force) })
		}
		wg.Wait()
		fmt.Fprintf(p.o.Stdout, " done (%.1fs)\n", time.Since(begin).Seconds())
		for i, err := range errs {
			if err != nil {
				ok = false
				fmt.Fprintf(p.o.Stderr, "basalt playground: %v; the end of %s:\n%s\n", err, tier[i].node.LogFile, logTail(tier[i].node.LogFile, 10))
			}
		}
	}
	p.watchers.Wait() // the state file is final, every death queued
	return ok
}

// close records that the playground has stopped, releases its directory
// and removes it if the playground made it up and clean says all went
// well.
func (p *playground) close(clean bool) {
	p.mu.Lock()
	p.st.PID = 0
	p.mu.Unlock()
	p.saveState()
	p.lock.Close()
	switch {
	case p.generated && clean:
		os.RemoveAll(p.st.Dir)
	case p.generated:
		fmt.Fprintf(p.o.Stderr, "basalt playground: the nodes' data and logs are kept in %s\n", p.st.Dir)
	}
	fmt.Fprintf(p.o.Stdout, "The playground %q has stopped.\n", p.st.Name)
}

// saveState writes the state file; an error is reported, not fatal.
func (p *playground) saveState() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.st.write(); err != nil {
		fmt.Fprintf(p.o.Stderr, "basalt playground: writing the state file: %v\n", err)
	}
}

// printReady prints the nodes and how to connect.
func (p *playground) printReady() {
	w := p.o.Stdout
	p.mu.Lock()
	st := *p.st
	st.Nodes = slices.Clone(p.st.Nodes)
	p.mu.Unlock()
	fmt.Fprintf(w, "\nThe nodes (paths under %s):\n", st.Dir)
	writeTable(w, st.Dir, st.Nodes, nil)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	sql := 0
	for _, n := range st.Nodes {
		host, port, _ := strings.Cut(n.Addr, ":")
		switch n.Role {
		case RoleSQL:
			sql++
			fmt.Fprintf(tw, "Connect to %s:\tmariadb -h %s -P %s -u root\n", n.Name, host, port)
		case RoleHAProxy:
			fmt.Fprintf(tw, "Through HAProxy:\tmariadb -h %s -P %s -u root   (balance leastconn over %s)\n", host, port, plural(sql, "SQL node"))
		}
	}
	fmt.Fprintf(tw, "The cluster:\tbasalt ctl --pd http://%s store|region|member\n", st.Nodes[0].Addr)
	fmt.Fprintf(tw, "The playground:\tbasalt playground display %s\n", p.displayArgs())
	tw.Flush()
	fmt.Fprintf(w, "The playground %q is ready. Ctrl-C stops it.\n", st.Name)
}

// displayArgs are the flags of display that find this playground.
func (p *playground) displayArgs() string {
	if root, err := DefaultRoot(); err == nil && p.st.Tag != "" && p.st.Dir == filepath.Join(root, p.st.Tag) {
		return "--tag " + p.st.Tag
	}
	return "--data-dir " + p.st.Dir
}

// writeTable prints nodes as a table, with paths relative to the
// playground's directory dir; state, if not nil, gives each node's state
// column.
func writeTable(w io.Writer, dir string, nodes []Node, state func(Node) string) {
	rel := func(path string) string {
		if r, err := filepath.Rel(dir, path); err == nil && path != "" {
			return r
		}
		return dash(path)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "NAME\tROLE\tADDRESS\tSTATUS\tPID\tDATA\tLOG"
	if state != nil {
		header += "\tSTATE"
	}
	fmt.Fprintln(tw, header)
	for _, n := range nodes {
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", n.Name, n.Role, n.Addr, dash(n.StatusAddr), dash(pidString(n.PID)), rel(n.DataDir), rel(n.LogFile))
		if state != nil {
			line += "\t" + state(n)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

func pidString(pid int) string {
	if pid == 0 {
		return ""
	}
	return fmt.Sprint(pid)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func derefs(ns []*Node) []Node {
	out := make([]Node, len(ns))
	for i, n := range ns {
		out[i] = *n
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
