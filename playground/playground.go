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
//     to start; every store the data has starts, whatever --kv says.
//   - The directory (layout in state.go) is removed on exit only when the
//     playground named it itself (no --tag, no --data-dir) and everything
//     ran and stopped cleanly; otherwise it is kept for the next run or
//     for its logs.
//   - A node that dies is reported on stderr (its name, how it ended, the
//     end of its log) and not restarted; the others go on, as TiUP's do.
//   - While it runs, the playground serves scale-out on a control port of
//     127.0.0.1 (scale.go), recorded in the state file: more stores or
//     SQL nodes, started and waited for as at start, HAProxy reloaded.
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
// display.go is basalt playground display; scale.go is scale-out.
package playground

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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
	// PDConfig, KVConfig and DBConfig are config files for the nodes of
	// each role (their --config), as TiUP playground's --pd.config,
	// --kv.config and --db.config; "" for none.
	PDConfig, KVConfig, DBConfig string
	// PDEnv, KVEnv and DBEnv add KEY=VALUE entries to the environment of
	// each role's nodes (--pd.env, --kv.env, --db.env), after the
	// playground's defaults for the role (layout.go, roleEnv).
	PDEnv, KVEnv, DBEnv []string
	// DBCPUs and KVCPUs cap each SQL node's and each store's CPU, in
	// CPUs (cgroup.go); 0 for no cap.
	DBCPUs, KVCPUs float64
	LogLevel       string // the nodes' log level
	Stdout, Stderr io.Writer
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

	// opMu orders the operations that start or stop nodes: the start,
	// each scale-out, the stop. stopping is set under it.
	opMu     sync.Mutex
	stopping bool

	mu       sync.Mutex // guards st, the nodes' PID and Status, children and the deaths
	st       *State     // its Nodes are written from nodes by saveState
	nodes    []*Node
	children []*child
	died     int           // nodes that ended unexpectedly
	deaths   []*child      // of those, the ones not yet reported
	death    chan struct{} // a token when deaths grows
	watchers sync.WaitGroup
	force    chan struct{} // closed by a second signal while stopping

	rates queryRates // the status page's statements per second (status.go)
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
	go func() {
		p.opMu.Lock()
		defer p.opMu.Unlock()
		started <- p.start(ctx)
	}()
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
		p.stop(sigs)
		p.reportDeaths("ended while starting")
		p.close(false)
		return 1
	}
	stopControl, err := p.serveControl(ctx)
	if err != nil {
		fmt.Fprintf(o.Stderr, "basalt playground: the control port, for scale-out: %v\n", err)
	}
	p.printReady()
	for {
		select {
		case <-p.death:
			p.reportDeaths("exited unexpectedly")
		case sig := <-sigs:
			fmt.Fprintf(o.Stdout, "\n%v: stopping the playground\n", sig)
			cancel() // a scale-out under way gives up
			stopControl()
			ok := p.stop(sigs)
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
	if err := checkCPUCaps(o, name); err != nil {
		return fail(err)
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
			// A store left out would be down, and its regions' replicas
			// lost: start every store the data has.
			fmt.Fprintf(o.Stderr, "basalt playground: %s holds the data of %d stores: starting %d (--kv %d)\n", dir, stores, stores, o.KV)
			p.o.KV = stores
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	for _, f := range []*string{&p.o.PDConfig, &p.o.KVConfig, &p.o.DBConfig} {
		if *f == "" {
			continue
		}
		if *f, err = filepath.Abs(*f); err != nil { // the nodes run in their own directories
			return fail(err)
		}
		if _, err := os.Stat(*f); err != nil {
			return fail(err)
		}
	}
	nodes, err := layout(dir, p.layoutOptions(), prev, &ports{inUse: portInUse, free: freePort, taken: map[int]bool{}})
	if err != nil {
		return fail(err)
	}
	p.st = &State{Name: name, Tag: o.Tag, Dir: dir, PID: os.Getpid()}
	for i := range nodes {
		p.nodes = append(p.nodes, &nodes[i])
	}
	p.death = make(chan struct{}, 1)
	if err := p.writeState(); err != nil {
		return fail(err)
	}
	return p, nil
}

// layoutOptions are the options' part that layout and grow take.
func (p *playground) layoutOptions() layoutOptions {
	o := p.o
	return layoutOptions{pd: o.PD, kv: o.KV, db: o.DB, dbPort: o.DBPort, haproxyPort: o.HAProxyPort,
		haproxy: !o.WithoutHAProxy && o.HAProxy != "", logLevel: o.LogLevel,
		pdConfig: o.PDConfig, kvConfig: o.KVConfig, dbConfig: o.DBConfig,
		env:     map[Role][]string{RolePD: o.PDEnv, RoleStore: o.KVEnv, RoleSQL: o.DBEnv},
		oneProc: runtime.NumCPU() <= 2 && os.Getenv("GOMAXPROCS") == ""}
}

// byRole returns the nodes of a role.
func (p *playground) byRole(role Role) []*Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*Node
	for _, n := range p.nodes {
		if n.Role == role {
			out = append(out, n)
		}
	}
	return out
}

// start starts the nodes in order and waits for each to serve.
func (p *playground) start(ctx context.Context) error {
	var op op
	o := p.o
	var kind []string
	kind = append(kind, plural(o.PD, "PD member"), plural(o.KV, "store"), plural(o.DB, "SQL node"))
	haproxy := p.byRole(RoleHAProxy)
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

	pds := p.byRole(RolePD)
	if err := p.startRole(ctx, &op, "PD", pds, func(ctx context.Context, n *Node) error { return probePD(ctx, n) }); err != nil {
		return err
	}
	stores := p.byRole(RoleStore)
	if err := p.startStores(ctx, &op, "stores", stores); err != nil {
		return err
	}
	if sql := p.byRole(RoleSQL); len(sql) > 0 {
		// The first SQL node creates the catalog of a new cluster; the
		// others start once it is there.
		if err := p.startRole(ctx, &op, "SQL node "+sql[0].Name, sql[:1], probeSQLNode); err != nil {
			return err
		}
		if len(sql) > 1 {
			if err := p.startRole(ctx, &op, "SQL nodes", sql[1:], probeSQLNode); err != nil {
				return err
			}
		}
		if len(haproxy) > 0 {
			if err := p.writeHAProxyConfig(); err != nil {
				return err
			}
			if err := p.startRole(ctx, &op, "HAProxy", haproxy, probeSQLNode); err != nil {
				return err
			}
		}
	}
	return nil
}

func probeSQLNode(ctx context.Context, n *Node) error { return probeSQL(ctx, n.Addr) }

// startStores starts stores and waits until each serves and PD shows
// every store of the playground Up and the cluster bootstrapped.
func (p *playground) startStores(ctx context.Context, op *op, what string, stores []*Node) error {
	if err := p.startRole(ctx, op, what, stores, func(ctx context.Context, n *Node) error { return probeStore(ctx, n) }); err != nil {
		return err
	}
	pd := p.byRole(RolePD)[0].Addr
	all := p.byRole(RoleStore)
	begin := time.Now()
	fmt.Fprintf(p.o.Stdout, "Waiting for PD to show every store Up and the cluster bootstrapped ...")
	if err := p.wait(ctx, op, nil, readyTimeout[RoleStore], func(ctx context.Context) error {
		var up []*Node
		for _, n := range all {
			if p.status(n) == "up" {
				up = append(up, n) // not one that has died meanwhile
			}
		}
		return probeCluster(ctx, pd, up)
	}); err != nil {
		fmt.Fprintln(p.o.Stdout)
		return err
	}
	fmt.Fprintf(p.o.Stdout, " done (%.1fs)\n", time.Since(begin).Seconds())
	return nil
}

// writeHAProxyConfig writes HAProxy's configuration for the SQL nodes
// that are up.
func (p *playground) writeHAProxyConfig() error {
	h := p.byRole(RoleHAProxy)[0]
	var sql []Node
	for _, n := range p.byRole(RoleSQL) {
		if p.status(n) == "up" {
			sql = append(sql, *n)
		}
	}
	if err := os.MkdirAll(h.Dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(haproxyConfigPath(h), []byte(haproxyConfig(p.st.Name, h.Addr, sql)), 0o644)
}

// status is a node's Status.
func (p *playground) status(n *Node) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return n.Status
}

// op is one operation's started nodes: the start, or a scale-out. It
// fails if one of them ends.
type op struct{ children []*child }

// failed returns a node of op that has ended, or nil.
func (o *op) failed() *child {
	for _, c := range o.children {
		if c.done() {
			return c
		}
	}
	return nil
}

// startRole starts nodes together as part of op, and waits until probe
// says each serves.
func (p *playground) startRole(ctx context.Context, op *op, what string, nodes []*Node, probe func(context.Context, *Node) error) error {
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
		if cpus := p.o.cpusFor(n.Role); cpus > 0 {
			if c.cgroup, err = capCPU(p.st.Name, n.Name, c.pid(), cpus); err != nil {
				_ = c.cmd.Process.Kill()
				<-c.exited
				fmt.Fprintln(p.o.Stdout)
				return err
			}
		}
		p.mu.Lock()
		n.PID = c.pid()
		p.children = append(p.children, c)
		p.mu.Unlock()
		started = append(started, c)
		op.children = append(op.children, c)
		p.watchers.Go(func() { p.watch(c) })
	}
	p.saveState()
	for _, c := range started {
		if err := p.wait(ctx, op, c, readyTimeout[c.node.Role], func(ctx context.Context) error { return probe(ctx, c.node) }); err != nil {
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

// wait calls probe until it succeeds, a node of op ends, ctx ends or
// timeout passes. c, if not nil, is the node waited for.
func (p *playground) wait(ctx context.Context, op *op, c *child, timeout time.Duration, probe func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := probe(pctx)
		cancel()
		if err == nil {
			return nil
		}
		if d := op.failed(); d != nil {
			return fmt.Errorf("%s ended while starting (%s)", d.node.Name, d.exitStatus())
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
	if err := removeCgroup(c.cgroup); err != nil {
		fmt.Fprintf(p.o.Stderr, "basalt playground: %s's cgroup: %v\n", c.node.Name, err)
	}
	p.mu.Lock()
	c.node.PID = 0
	expected := c.stopping.Load()
	if expected {
		c.node.Status = "stopped"
	} else {
		c.node.Status = "exited: " + c.exitStatus()
		p.died++
	}
	if !expected {
		p.deaths = append(p.deaths, c)
		select {
		case p.death <- struct{}{}:
		default: // a token is there already
		}
	}
	p.mu.Unlock()
	p.saveState()
}

// reportDeath tells the user that a node ended unexpectedly (what: how
// to say it).
func (p *playground) reportDeath(c *child, what string) {
	fmt.Fprintf(p.o.Stderr, "basalt playground: %s (pid %d) %s (%s); it is not restarted. The end of %s:\n%s\n",
		c.node.Name, c.pid(), what, c.exitStatus(), c.node.LogFile, logTail(c.node.LogFile, 15))
}

// reportDeaths reports the deaths not yet reported.
func (p *playground) reportDeaths(what string) {
	p.mu.Lock()
	deaths := p.deaths
	p.deaths = nil
	p.mu.Unlock()
	for _, c := range deaths {
		p.reportDeath(c, what)
	}
}

// stop stops the nodes, HAProxy first and PD last, the nodes of a role
// together, once the operation under way has ended. A signal on sigs
// meanwhile kills what is left. It reports whether every node stopped
// cleanly.
func (p *playground) stop(sigs <-chan os.Signal) bool {
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
	p.opMu.Lock()
	p.stopping = true
	p.opMu.Unlock()
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
	p.watchers.Wait() // the state file is final, every death listed
	return ok
}

// close records that the playground has stopped, releases its directory
// and removes it if the playground made it up and clean says all went
// well.
func (p *playground) close(clean bool) {
	p.mu.Lock()
	p.st.PID, p.st.ControlAddr = 0, ""
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
	if err := p.writeState(); err != nil {
		fmt.Fprintf(p.o.Stderr, "basalt playground: writing the state file: %v\n", err)
	}
}

// writeState writes the state file.
func (p *playground) writeState() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st.Nodes = p.st.Nodes[:0]
	for _, n := range p.nodes {
		p.st.Nodes = append(p.st.Nodes, *n)
	}
	return p.st.write()
}

// snapshot returns a copy of the state.
func (p *playground) snapshot() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := *p.st
	st.Nodes = nil
	for _, n := range p.nodes {
		st.Nodes = append(st.Nodes, *n)
	}
	return st
}

// printReady prints the nodes and how to connect.
func (p *playground) printReady() {
	w := p.o.Stdout
	st := p.snapshot()
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
	if st.ControlAddr != "" {
		fmt.Fprintf(tw, "Its status page:\thttp://%s/\n", st.ControlAddr)
	}
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

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
