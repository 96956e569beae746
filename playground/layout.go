package playground

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Role is what a node of a playground is.
type Role string

// The roles, in the order they start; they stop in the reverse order
// (HAProxy first, so that no new client reaches a stopping SQL node; PD
// last, as stores report to it while they stop).
const (
	RolePD      Role = "pd"
	RoleStore   Role = "store"
	RoleSQL     Role = "sql"
	RoleHAProxy Role = "haproxy"
)

// Node is one process of a playground, as the state file records it.
type Node struct {
	Name string `json:"name"` // pd1, store1, db1, haproxy
	Role Role   `json:"role"`
	// Addr is what clients dial: PD's client address, a store's gRPC
	// address, a SQL node's or HAProxy's MySQL address; host:port.
	Addr string `json:"addr"`
	// PeerAddr is a PD member's peer address (etcd's).
	PeerAddr string `json:"peer_addr,omitempty"`
	// StatusAddr serves HTTP: PD's API (its client address), a store's
	// and a SQL node's status port. Empty for HAProxy.
	StatusAddr string `json:"status_addr,omitempty"`
	// DataDir is PD's and a store's data; empty for stateless nodes.
	DataDir string `json:"data_dir,omitempty"`
	// Dir is the node's working directory, which holds its log and,
	// for HAProxy, its configuration.
	Dir     string   `json:"dir"`
	LogFile string   `json:"log_file"`
	Args    []string `json:"args"` // the command line after the program
	// Env is what the node's environment adds to the playground's, as
	// KEY=VALUE; a later entry wins over an earlier one and over the
	// playground's own (roleEnv).
	Env []string `json:"env,omitempty"`
	PID int      `json:"pid,omitempty"`
	// Status is starting, up, leaving (being scaled in), stopped, or
	// "exited: " and how.
	Status string `json:"status"`
}

// The default ports of the first SQL node and of HAProxy, as TiUP
// playground's; a default that is in use gives way to a free port, a port
// given on the command line does not.
const (
	DefaultDBPort      = 4000
	DefaultHAProxyPort = 3390
)

// ports hands out the ports of one layout. Its functions are the world
// outside: inUse says whether a port is taken now, free finds one that is
// not. A port handed out once is not handed out again, and a free port
// that the last run's nodes had is not handed to another node (layout
// fills avoid).
type ports struct {
	inUse func(port int) bool
	free  func() (int, error)
	taken map[int]bool
	avoid map[int]bool
}

// want returns port if it is free. If it is not (or is 0): an error
// naming why the port matters if must, else a free port.
func (p *ports) want(port int, must bool, why string) (int, error) {
	if port != 0 && !p.taken[port] && !p.inUse(port) {
		p.taken[port] = true
		return port, nil
	}
	if must {
		return 0, fmt.Errorf("port %d (%s) is in use", port, why)
	}
	for range 100 {
		q, err := p.free()
		if err != nil {
			return 0, err
		}
		if !p.taken[q] && !p.avoid[q] {
			p.taken[q] = true
			return q, nil
		}
	}
	return 0, fmt.Errorf("no free port found")
}

// layoutOptions are what a layout depends on besides ports.
type layoutOptions struct {
	pd, kv, db          int
	dbPort, haproxyPort int // 0: the default, which may give way
	haproxy             bool
	logLevel            string
	// The roles' config files (--config), absolute; "" for none.
	pdConfig, kvConfig, dbConfig string
	// env adds to each role's environment (--pd.env, --kv.env,
	// --db.env), after roleEnv's defaults.
	env map[Role][]string
	// oneProc: PD members and stores get GOMAXPROCS=1 (roleEnv). The
	// playground sets it on a machine of at most two CPUs where the
	// user's environment sets no GOMAXPROCS of its own.
	oneProc bool
}

// layout decides every node of a playground in dir: names, ports,
// directories and command lines. prev holds the nodes of the last run in
// dir, by name: PD members and stores keep their ports, which their data
// records (etcd's member list, PD's store addresses), and refuse to
// start if one is taken; SQL nodes keep theirs when free. The stores are
// the last run's (by name: a scale-in may have left gaps), then new
// ones, o.kv in all.
func layout(dir string, o layoutOptions, prev map[string]Node, p *ports) ([]Node, error) {
	if p.avoid == nil {
		p.avoid = map[int]bool{}
	}
	for _, n := range prev {
		for _, port := range n.ports() {
			p.avoid[port] = true
		}
	}
	keep := func(name string, pick func(Node) string) int {
		if n, ok := prev[name]; ok {
			return portOf(pick(n))
		}
		return 0
	}
	// stateful gives a PD member or a store the port it had, or fails; a
	// new one gets a free port.
	stateful := func(name string, pick func(Node) string, what string) (int, error) {
		old := keep(name, pick)
		return p.want(old, old != 0, fmt.Sprintf("%s's %s, which its data in %s records", name, what, dir))
	}
	var nodes []Node

	var initial []string
	for i := 1; i <= o.pd; i++ {
		n := newNode(dir, fmt.Sprintf("pd%d", i), RolePD)
		client, err := stateful(n.Name, func(n Node) string { return n.Addr }, "client port")
		if err != nil {
			return nil, err
		}
		peer, err := stateful(n.Name, func(n Node) string { return n.PeerAddr }, "peer port")
		if err != nil {
			return nil, err
		}
		n.Addr, n.StatusAddr, n.PeerAddr = addr(client), addr(client), addr(peer)
		n.DataDir = filepath.Join(n.Dir, "data")
		initial = append(initial, n.Name+"=http://"+n.PeerAddr)
		nodes = append(nodes, n)
	}
	for i := range nodes {
		n := &nodes[i]
		n.Args = []string{"pd", "--name", n.Name, "--data-dir", n.DataDir,
			"--client-urls", "http://" + n.Addr, "--peer-urls", "http://" + n.PeerAddr}
		if o.pd > 1 {
			n.Args = append(n.Args, "--initial-cluster", strings.Join(initial, ","))
		}
		n.Args = append(n.Args, "--log-level", o.logLevel)
		n.Args = withConfig(n.Args, o.pdConfig)
		n.Env = roleEnv(RolePD, o)
	}
	pds := pdList(nodes)

	for _, name := range names(prev, RoleStore, "store", o.kv) {
		n := newNode(dir, name, RoleStore)
		port, err := stateful(n.Name, func(n Node) string { return n.Addr }, "address")
		if err != nil {
			return nil, err
		}
		status, err := stateful(n.Name, func(n Node) string { return n.StatusAddr }, "status address")
		if err != nil {
			return nil, err
		}
		n.setStore(pds, port, status, o)
		nodes = append(nodes, n)
	}

	for i := 1; i <= o.db; i++ {
		n := newNode(dir, fmt.Sprintf("db%d", i), RoleSQL)
		var port int
		var err error
		if i == 1 {
			port, err = p.want(cmp.Or(o.dbPort, DefaultDBPort), o.dbPort != 0, "--db.port")
		} else {
			port, err = p.want(keep(n.Name, func(n Node) string { return n.Addr }), false, "")
		}
		if err != nil {
			return nil, err
		}
		status, err := p.want(keep(n.Name, func(n Node) string { return n.StatusAddr }), false, "")
		if err != nil {
			return nil, err
		}
		n.setSQL(pds, port, status, o)
		nodes = append(nodes, n)
	}

	if o.haproxy && o.db > 0 {
		n := newNode(dir, "haproxy", RoleHAProxy)
		port, err := p.want(cmp.Or(o.haproxyPort, DefaultHAProxyPort), o.haproxyPort != 0, "--haproxy.port")
		if err != nil {
			return nil, err
		}
		n.Addr = addr(port)
		// Master-worker mode (-W): SIGUSR2 reloads the configuration
		// (after a scale-out) without closing the port; -db keeps it in
		// the foreground, its messages on stderr.
		n.Args = []string{"-W", "-db", "-f", haproxyConfigPath(&n)}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// grow lays out count more nodes of role, a store or a SQL node, beside
// nodes (a scale-out): the next names, on free ports that no node has
// had.
func grow(dir string, nodes []Node, role Role, count int, o layoutOptions, p *ports) ([]Node, error) {
	prefix := map[Role]string{RoleStore: "store", RoleSQL: "db"}[role]
	if prefix == "" {
		return nil, fmt.Errorf("cannot add a %s node", role)
	}
	if p.avoid == nil {
		p.avoid = map[int]bool{}
	}
	byName := map[string]Node{}
	for _, n := range nodes {
		for _, port := range n.ports() {
			p.avoid[port] = true
		}
		byName[n.Name] = n
	}
	have := len(names(byName, role, prefix, 0))
	var out []Node
	for _, name := range names(byName, role, prefix, have+count)[have:] {
		n := newNode(dir, name, role)
		port, err := p.want(0, false, "")
		if err != nil {
			return nil, err
		}
		status, err := p.want(0, false, "")
		if err != nil {
			return nil, err
		}
		if role == RoleStore {
			n.setStore(pdList(nodes), port, status, o)
		} else {
			n.setSQL(pdList(nodes), port, status, o)
		}
		out = append(out, n)
	}
	return out, nil
}

// names returns the names of the nodes of role in prev, prefix and a
// number, in the order of their numbers, then new names numbered after
// the highest, up to n names in all.
func names(prev map[string]Node, role Role, prefix string, n int) []string {
	var nums []int
	for _, node := range prev {
		if node.Role == role {
			v, _ := strconv.Atoi(strings.TrimPrefix(node.Name, prefix))
			nums = append(nums, v)
		}
	}
	slices.Sort(nums)
	next := 1
	if len(nums) > 0 {
		next = nums[len(nums)-1] + 1
	}
	for ; len(nums) < n; next++ {
		nums = append(nums, next)
	}
	out := make([]string, len(nums))
	for i, v := range nums {
		out[i] = fmt.Sprintf("%s%d", prefix, v)
	}
	return out
}

// newNode is a node of role named name, with its directory and log under
// dir.
func newNode(dir, name string, role Role) Node {
	d := filepath.Join(dir, name)
	return Node{Name: name, Role: role, Dir: d, LogFile: filepath.Join(d, name+".log"), Status: "starting"}
}

// setStore gives a store its addresses, data directory and command line.
func (n *Node) setStore(pdList string, port, status int, o layoutOptions) {
	n.Addr, n.StatusAddr = addr(port), addr(status)
	n.DataDir = filepath.Join(n.Dir, "data")
	n.Args = withConfig([]string{"store", "--pd", pdList, "--addr", n.Addr, "--status-addr", n.StatusAddr,
		"--data-dir", n.DataDir, "--log-level", o.logLevel}, o.kvConfig)
	n.Env = roleEnv(RoleStore, o)
}

// setSQL gives a SQL node its addresses and command line.
func (n *Node) setSQL(pdList string, port, status int, o layoutOptions) {
	n.Addr, n.StatusAddr = addr(port), addr(status)
	n.Args = withConfig([]string{"--store", "tikv", "--path", pdList, "--host", loopback,
		"--port", strconv.Itoa(port), "--status-port", strconv.Itoa(status), "--log-level", o.logLevel}, o.dbConfig)
	n.Env = roleEnv(RoleSQL, o)
}

// roleEnv is the environment a node of role adds to the playground's:
// the role's defaults, then what o.env gives the role (a later entry
// wins).
//
// With o.oneProc (a machine of at most two CPUs), PD members and stores
// run with GOMAXPROCS=1. Every node shares the machine's CPUs (sysbench
// and HAProxy too), and Go's scheduler, given one P per CPU, wakes idle
// Ps to steal each new goroutine: context switches that a store's short
// requests pay for and no parallelism repays (on a 2-vCPU playground
// under point select the leader made 0.9-1.2 context switches per query
// with 1 against 1.5-1.7 with 2, docs/cluster-bench/README.md). On a
// larger machine a store's parallelism may pay, and that was not
// measured, so Go's default stays. SQL nodes keep the default.
func roleEnv(role Role, o layoutOptions) []string {
	var env []string
	switch role {
	case RolePD, RoleStore:
		if o.oneProc {
			env = append(env, "GOMAXPROCS=1")
		}
	}
	return append(env, o.env[role]...)
}

// withConfig adds --config file to args, if file is not "". The flags
// before it still win: each role's flags override its config file.
func withConfig(args []string, file string) []string {
	if file == "" {
		return args
	}
	return append(args, "--config", file)
}

// pdList is PD's client addresses, as stores' --pd and SQL nodes' --path
// take them.
func pdList(nodes []Node) string {
	var list []string
	for _, n := range nodes {
		if n.Role == RolePD {
			list = append(list, n.Addr)
		}
	}
	return strings.Join(list, ",")
}

// ports are the ports a node has.
func (n Node) ports() []int {
	var out []int
	for _, a := range []string{n.Addr, n.PeerAddr, n.StatusAddr} {
		if p := portOf(a); p != 0 {
			out = append(out, p)
		}
	}
	return out
}

// portOf is the port of host:port, 0 if there is none.
func portOf(hostPort string) int {
	_, port, _ := strings.Cut(hostPort, ":")
	v, _ := strconv.Atoi(port)
	return v
}

// haproxyConfigPath is where HAProxy's configuration is written.
func haproxyConfigPath(n *Node) string { return filepath.Join(n.Dir, "haproxy.cfg") }

// loopback is the one address every node listens on.
const loopback = "127.0.0.1"

func addr(port int) string { return loopback + ":" + strconv.Itoa(port) }
