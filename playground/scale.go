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
	"strings"
	"syscall"
	"time"
)

// The control port. A running playground serves, on 127.0.0.1 at the
// address its state file records (control_addr):
//
//	POST /scale-out   {"role": "store" | "sql", "count": N}
//	                  200 and the new nodes (JSON) once each serves;
//	                  otherwise an error status and the reason as text
//
// A scale-out starts the nodes and waits for them as the start does
// (new stores: PD shows every store Up); new SQL nodes join HAProxy's
// configuration, which HAProxy reloads without closing its port. One
// operation runs at a time; a stop waits for the one under way, which a
// signal cancels. A node that fails to start is stopped and stays listed
// with its status. TiUP's playground takes its scale-out commands the
// same way, on a port of its own.

// scaleRequest is the body of POST /scale-out.
type scaleRequest struct {
	Role  Role `json:"role"`
	Count int  `json:"count"`
}

// serveControl serves the control port until the returned function is
// called; ctx ends the operations under way.
func (p *playground) serveControl(ctx context.Context) (stop func(), err error) {
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return func() {}, err
	}
	mux := http.NewServeMux()
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
	added, err := grow(p.st.Dir, current, role, count, p.o.LogLevel,
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
	st, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no playground in %s", dir)
	}
	if err != nil {
		return nil, err
	}
	if !running(dir) || st.ControlAddr == "" {
		return nil, fmt.Errorf("the playground %q in %s is not running", st.Name, dir)
	}
	body, _ := json.Marshal(scaleRequest{Role: role, Count: count})
	// Starting takes up to a minute a node; the playground bounds it.
	client := &http.Client{Timeout: 10 * time.Minute}
	resp, err := client.Post("http://"+st.ControlAddr+"/scale-out", "application/json", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, errors.New(strings.TrimSpace(string(msg)))
	}
	var nodes []Node
	if err := json.NewDecoder(resp.Body).Decode(&nodes); err != nil {
		return nil, err
	}
	return nodes, nil
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
