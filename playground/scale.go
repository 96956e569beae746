package playground

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The control port. A running playground serves, on 127.0.0.1 at the
// address its state file records (control_addr):
//
//	POST /scale-out   {"role": "store" | "sql", "count": N}
//	                  200 and the new nodes (JSON) once each serves
//	POST /scale-in    {"name": "store2"}
//	                  200 and the node (JSON) once it is gone
//
// and otherwise an error status with the reason as text.
//
// A scale-out starts the nodes and waits for them as the start does
// (new stores: PD shows every store Up); new SQL nodes join HAProxy's
// configuration, which HAProxy reloads without closing its port. A node
// that fails to start is stopped and stays listed with its status.
//
// A scale-in of a SQL node takes it out of HAProxy's configuration
// first, then stops it. A store is taken offline through PD (DELETE
// /pd/api/v1/store/{id}), which moves its regions to the other stores
// and then makes it a Tombstone; then it is stopped. It is refused when
// fewer stores than max-replicas would be left. Either way the node
// leaves the state file and its directory is removed: it is not started
// again.
//
// One operation runs at a time; a stop waits for the one under way,
// which a signal cancels. TiUP's playground takes its scale commands
// the same way, on a port of its own.

// scaleRequest is the body of POST /scale-out and /scale-in.
type scaleRequest struct {
	Role  Role   `json:"role,omitempty"`
	Count int    `json:"count,omitempty"`
	Name  string `json:"name,omitempty"`
}

// serveControl serves the control port until the returned function is
// called; ctx ends the operations under way.
func (p *playground) serveControl(ctx context.Context) (stop func(), err error) {
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return func() {}, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.serveStatus)
	mux.HandleFunc("POST /scale-out", func(w http.ResponseWriter, r *http.Request) {
		var req scaleRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if req.Count < 1 || (req.Role != RoleStore && req.Role != RoleSQL) {
			http.Error(w, `scale-out takes {"role": "store" or "sql", "count": 1 or more}`, http.StatusBadRequest)
			return
		}
		nodes, err := p.scaleOut(r.Context(), req.Role, req.Count)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(nodes)
	})
	mux.HandleFunc("POST /scale-in", func(w http.ResponseWriter, r *http.Request) {
		var req scaleRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		n, err := p.scaleIn(r.Context(), req.Name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(n)
	})
	srv := &http.Server{Handler: mux, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(l) }()
	p.mu.Lock()
	p.st.ControlAddr = l.Addr().String()
	p.mu.Unlock()
	p.saveState()
	return func() { _ = srv.Close() }, nil
}

// scaleOut adds count nodes of role, starts them and waits until they
// serve, and returns them.
func (p *playground) scaleOut(ctx context.Context, role Role, count int) ([]Node, error) {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	if p.stopping {
		return nil, errors.New("the playground is stopping")
	}
	current := p.snapshot().Nodes
	added, err := grow(p.st.Dir, current, role, count, p.layoutOptions(),
		&ports{inUse: portInUse, free: freePort, taken: map[int]bool{}})
	if err != nil {
		return nil, err
	}
	var nodes []*Node
	var names []string
	p.mu.Lock()
	for i := range added {
		p.nodes = append(p.nodes, &added[i])
		nodes = append(nodes, &added[i])
		names = append(names, added[i].Name)
	}
	p.mu.Unlock()
	what := strings.Join(names, ", ")
	fmt.Fprintf(p.o.Stdout, "Scale-out: %s\n", what)
	var op op
	if role == RoleStore {
		err = p.startStores(ctx, &op, what, nodes)
	} else {
		err = p.startRole(ctx, &op, what, nodes, probeSQLNode)
		if err == nil {
			err = p.reloadHAProxy(ctx)
		}
	}
	if err != nil {
		for _, c := range op.children {
			_ = c.stop(stopTimeout[c.node.Role], p.force)
		}
		return nil, fmt.Errorf("scale-out of %s: %w", what, err)
	}
	out := make([]Node, len(nodes))
	p.mu.Lock()
	for i, n := range nodes {
		out[i] = *n
	}
	p.mu.Unlock()
	for _, n := range out {
		fmt.Fprintf(p.o.Stdout, "Scale-out: %s (%s) serves at %s\n", n.Name, n.Role, n.Addr)
	}
	return out, nil
}

// scaleInTimeout bounds how long PD may take to move a store's regions
// away.
const scaleInTimeout = 10 * time.Minute

// scaleIn removes the node name, a store or a SQL node, and returns it.
func (p *playground) scaleIn(ctx context.Context, name string) (Node, error) {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	if p.stopping {
		return Node{}, errors.New("the playground is stopping")
	}
	var c *child
	p.mu.Lock()
	for _, ch := range p.children {
		if ch.node.Name == name && !ch.done() {
			c = ch
		}
	}
	p.mu.Unlock()
	switch {
	case c == nil:
		return Node{}, fmt.Errorf("no node %q runs", name)
	case c.node.Role != RoleStore && c.node.Role != RoleSQL:
		return Node{}, fmt.Errorf("%s is a %s node: only stores and SQL nodes scale in", name, c.node.Role)
	}
	n := c.node
	fmt.Fprintf(p.o.Stdout, "Scale-in: %s\n", name)
	if n.Role == RoleSQL {
		p.mu.Lock()
		n.Status = "leaving"
		p.mu.Unlock()
		if err := p.reloadHAProxy(ctx); err != nil {
			return Node{}, err
		}
	} else if err := p.removeStore(ctx, n); err != nil {
		return Node{}, err
	}
	if err := c.stop(stopTimeout[n.Role], p.force); err != nil {
		return Node{}, err
	}
	<-c.exited
	p.mu.Lock()
	p.nodes = slices.DeleteFunc(p.nodes, func(m *Node) bool { return m == n })
	p.children = slices.DeleteFunc(p.children, func(m *child) bool { return m == c })
	out := *n
	p.mu.Unlock()
	p.saveState()
	if err := os.RemoveAll(n.Dir); err != nil {
		fmt.Fprintf(p.o.Stderr, "basalt playground: removing %s: %v\n", n.Dir, err)
	}
	fmt.Fprintf(p.o.Stdout, "Scale-in: %s is gone\n", name)
	return out, nil
}

// removeStore has PD take store n offline and waits until it is a
// Tombstone, its regions moved to the other stores.
func (p *playground) removeStore(ctx context.Context, n *Node) error {
	pd := p.byRole(RolePD)[0].Addr
	st, err := pdStoreAt(ctx, pd, n.Addr)
	if err != nil {
		return err
	}
	replicas, err := pdMaxReplicas(ctx, pd)
	if err != nil {
		return err
	}
	all, err := pdStores(ctx, pd)
	if err != nil {
		return err
	}
	up := 0
	for _, s := range all {
		if s.Status.StateName == "Up" && s.Store.ID != st.Store.ID {
			up++
		}
	}
	if up < replicas {
		return fmt.Errorf("%s cannot leave: %d stores would be Up, and each region wants %d replicas (scale out a store first)", n.Name, up, replicas)
	}
	if err := pdRemoveStore(ctx, pd, st.Store.ID); err != nil {
		return err
	}
	p.mu.Lock()
	n.Status = "leaving"
	p.mu.Unlock()
	p.saveState()
	begin := time.Now()
	fmt.Fprintf(p.o.Stdout, "Waiting for PD to move %s's regions (%d) away ...", n.Name, st.Status.RegionCount)
	err = p.wait(ctx, &op{}, nil, scaleInTimeout, func(ctx context.Context) error {
		list, err := pdStores(ctx, pd)
		if err != nil {
			return err
		}
		for _, s := range list {
			if s.Store.ID == st.Store.ID && s.Status.StateName != "Tombstone" {
				return fmt.Errorf("%s is %s with %d regions", n.Name, s.Status.StateName, s.Status.RegionCount)
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(p.o.Stdout)
		return err
	}
	fmt.Fprintf(p.o.Stdout, " done (%.1fs)\n", time.Since(begin).Seconds())
	return nil
}

// reloadHAProxy rewrites HAProxy's configuration and has it reload
// (SIGUSR2 to its master process), if it runs, and waits until a session
// through it works.
func (p *playground) reloadHAProxy(ctx context.Context) error {
	p.mu.Lock()
	var h *child
	for _, c := range p.children {
		if c.node.Role == RoleHAProxy && !c.done() {
			h = c
		}
	}
	p.mu.Unlock()
	if h == nil {
		return nil
	}
	if err := p.writeHAProxyConfig(); err != nil {
		return err
	}
	if err := h.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		return fmt.Errorf("reloading HAProxy: %w", err)
	}
	return p.wait(ctx, &op{children: []*child{h}}, h, readyTimeout[RoleHAProxy], func(ctx context.Context) error {
		return probeSQL(ctx, h.node.Addr)
	})
}

// ScaleOut asks the playground running in dir to add count nodes of role
// (RoleStore or RoleSQL), and returns them once they serve.
func ScaleOut(dir string, role Role, count int) ([]Node, error) {
	var nodes []Node
	err := control(dir, "/scale-out", scaleRequest{Role: role, Count: count}, &nodes)
	return nodes, err
}

// ScaleIn asks the playground running in dir to remove the node name, a
// store or a SQL node, and returns it once it is gone.
func ScaleIn(dir, name string) (Node, error) {
	var n Node
	err := control(dir, "/scale-in", scaleRequest{Name: name}, &n)
	return n, err
}

// control posts req to the control port of the playground running in dir
// and decodes its answer into out.
func control(dir, path string, req scaleRequest, out any) error {
	st, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no playground in %s", dir)
	}
	if err != nil {
		return err
	}
	if !running(dir) || st.ControlAddr == "" {
		return fmt.Errorf("the playground %q in %s is not running", st.Name, dir)
	}
	body, _ := json.Marshal(req)
	// The playground bounds each step; this only guards against a hang.
	client := &http.Client{Timeout: 30 * time.Minute}
	resp, err := client.Post("http://"+st.ControlAddr+path, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return errors.New(strings.TrimSpace(string(msg)))
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Running returns the directories under root of the playgrounds that run
// now.
func Running(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if e.IsDir() && running(dir) {
			out = append(out, dir)
		}
	}
	return out, nil
}

// WriteNodes prints nodes as display's table does, without the state;
// dir is the playground's directory, which paths are shown under.
func WriteNodes(w io.Writer, dir string, nodes []Node) { writeTable(w, dir, nodes, nil) }
