package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Cluster is a Basalt cluster of processes on loopback ports, started by
// a test from the built binary: one PD member (`basalt pd`) or several,
// and storage nodes (`basalt store`), each with its own data directory
// under the test's temporary directory. Processes are killed when the
// test ends.
type Cluster struct {
	t   testing.TB
	bin string
	dir string
	// PD is PD's client address, host:port: the first member's when
	// there are several (see PDs).
	PD string
	// PDs are the members' client addresses; PDNames their process names
	// ("pd" when there is one member, else "pd1", "pd2"...).
	PDs, PDNames []string
	// StoreConfig is the TOML every store starts with (may be empty).
	StoreConfig string

	mu     sync.Mutex
	procs  map[string]*proc
	args   map[string][]string // each process's command line, for a restart
	stores []string            // store names, "store1"...
	ports  map[string][2]int
}

type proc struct {
	cmd  *exec.Cmd
	log  *lockedWriter
	done chan struct{}
}

// StartCluster starts PD and n stores, each store with storeConfig as its
// config file, and waits until PD answers and every store serves.
func StartCluster(t testing.TB, n int, storeConfig string) *Cluster {
	t.Helper()
	return StartClusterPDs(t, 1, n, storeConfig)
}

// StartClusterPDs is StartCluster with pds PD members, which form one
// etcd cluster (--initial-cluster) and elect a leader; stores and SQL
// nodes are given every member's address.
func StartClusterPDs(t testing.TB, pds, n int, storeConfig string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: BuildBasalt(t), dir: t.TempDir(), StoreConfig: storeConfig,
		procs: map[string]*proc{}, ports: map[string][2]int{}, args: map[string][]string{}}
	t.Cleanup(c.killAll)
	ports := freePorts(t, 2*pds)
	var initial []string
	for i := range pds {
		name := "pd"
		if pds > 1 {
			name = fmt.Sprintf("pd%d", i+1)
		}
		c.PDNames = append(c.PDNames, name)
		c.PDs = append(c.PDs, fmt.Sprintf("127.0.0.1:%d", ports[2*i]))
		initial = append(initial, fmt.Sprintf("pd%d=http://127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	c.PD = c.PDs[0]
	for i, name := range c.PDNames {
		args := []string{"pd", "--name", fmt.Sprintf("pd%d", i+1), "--data-dir", filepath.Join(c.dir, name),
			"--client-urls", "http://" + c.PDs[i], "--peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			"--log-level", logLevel()}
		if pds > 1 {
			args = append(args, "--initial-cluster", strings.Join(initial, ","))
		}
		c.start(name, args...)
	}
	// A member answers /health once etcd has a quorum and PD a leader.
	for i, name := range c.PDNames {
		c.waitHTTP(name, "http://"+c.PDs[i]+"/pd/api/v1/health")
	}
	for range n {
		c.AddStore()
	}
	return c
}

// StartPD restarts a PD member that was killed or stopped, on its ports
// and data directory, and waits until it answers.
func (c *Cluster) StartPD(name string) {
	c.t.Helper()
	c.mu.Lock()
	args := c.args[name]
	c.mu.Unlock()
	c.start(name, args...)
	for i, n := range c.PDNames {
		if n == name {
			c.waitHTTP(name, "http://"+c.PDs[i]+"/pd/api/v1/health")
		}
	}
}

// PDLeader is the name of the PD member that leads ("pd1"...), as the
// first running member to answer names it; it waits up to 20 s for one
// to name a running leader.
func (c *Cluster) PDLeader() string {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, addr := range c.PDs {
			if c.PID(c.PDNames[i]) == 0 {
				continue
			}
			resp, err := http.Get("http://" + addr + "/pd/api/v1/members")
			if err != nil {
				continue
			}
			var m struct {
				Leader struct {
					Name string `json:"name"`
				} `json:"leader"`
			}
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			name := m.Leader.Name
			if len(c.PDNames) == 1 && name == "pd1" {
				name = c.PDNames[0] // the member pd1 runs as "pd"
			}
			if err == nil && slices.Contains(c.PDNames, name) && c.PID(name) != 0 {
				return name
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("testkit: no PD member names a running leader")
	return ""
}

// PDList is the members' client addresses as stores' --pd and SQL
// nodes' --path take them: comma-separated.
func (c *Cluster) PDList() string { return strings.Join(c.PDs, ",") }

// AddStore starts one more store and returns its name.
func (c *Cluster) AddStore() string {
	c.t.Helper()
	c.mu.Lock()
	name := fmt.Sprintf("store%d", len(c.stores)+1)
	c.stores = append(c.stores, name)
	c.mu.Unlock()
	ports := freePorts(c.t, 2)
	c.mu.Lock()
	c.ports[name] = [2]int{ports[0], ports[1]}
	c.mu.Unlock()
	c.StartStore(name)
	return name
}

// DataDir is the data directory a store has, or will have once started.
func (c *Cluster) DataDir(name string) string { return filepath.Join(c.dir, name) }

// StoreAddr is a store's gRPC address.
func (c *Cluster) StoreAddr(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("127.0.0.1:%d", c.ports[name][0])
}

// StatusAddr is a store's HTTP status address.
func (c *Cluster) StatusAddr(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("127.0.0.1:%d", c.ports[name][1])
}

// PID is a running process's ID ("pd", "store1"...), 0 if it is not
// running: for a test that reads its memory from /proc.
func (c *Cluster) PID(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.procs[name]; p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Exited says whether a process the cluster started has ended (killed,
// or by itself).
func (c *Cluster) Exited(name string) bool {
	c.mu.Lock()
	p := c.procs[name]
	c.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StartStore (re)starts a store on its ports and data directory, and
// waits until it serves its status page.
func (c *Cluster) StartStore(name string) {
	c.t.Helper()
	dir := c.DataDir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	cfg := filepath.Join(dir, "store.toml")
	if err := os.WriteFile(cfg, []byte(c.StoreConfig), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.start(name, "store", "--pd", c.PDList(), "--addr", c.StoreAddr(name), "--status-addr", c.StatusAddr(name),
		"--data-dir", dir, "--config", cfg, "--log-level", logLevel())
	c.waitHTTP(name, "http://"+c.StatusAddr(name)+"/status")
}

// Kill kills a process with SIGKILL (kill -9) and waits for it to end.
func (c *Cluster) Kill(name string) {
	c.signal(name, syscall.SIGKILL)
}

// Stop stops a process with SIGTERM and waits for it to end.
func (c *Cluster) Stop(name string) {
	c.signal(name, syscall.SIGTERM)
}

func (c *Cluster) signal(name string, sig syscall.Signal) {
	c.mu.Lock()
	p := c.procs[name]
	delete(c.procs, name)
	c.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		c.t.Errorf("testkit: %s did not end within 60s of %v", name, sig)
	}
}

// Log returns what a process has written so far.
func (c *Cluster) Log(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.procs[name]; p != nil {
		return p.log.String()
	}
	return ""
}

// Logs returns every running process's output, for a failing test.
func (c *Cluster) Logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for name, p := range c.procs {
		fmt.Fprintf(&b, "--- %s\n%s", name, p.log.String())
	}
	return b.String()
}

func (c *Cluster) start(name string, args ...string) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	log := &lockedWriter{w: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("testkit: starting %s: %v", name, err)
	}
	p := &proc{cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.mu.Lock()
	c.procs[name] = p
	c.args[name] = args
	c.mu.Unlock()
}

func (c *Cluster) waitHTTP(name, url string) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		c.mu.Lock()
		p := c.procs[name]
		c.mu.Unlock()
		select {
		case <-p.done:
			c.t.Fatalf("testkit: %s exited at start:\n%s", name, p.log.String())
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("testkit: %s does not answer %s:\n%s", name, url, p.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *Cluster) killAll() {
	c.mu.Lock()
	names := make([]string, 0, len(c.procs))
	for n, p := range c.procs {
		names = append(names, n)
		select {
		case <-p.done:
			// It ended by itself (a crash, a fatal error): a failing
			// test says why.
			if c.t.Failed() {
				c.t.Logf("testkit: %s had exited (%v); its output:\n%s", n, p.cmd.ProcessState, tail(p.log.String(), 32<<10))
			}
		default:
		}
	}
	c.mu.Unlock()
	for _, n := range names {
		c.Kill(n)
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// logLevel is the processes' log level: $BASALT_TEST_LOG_LEVEL, or warn.
func logLevel() string {
	if l := os.Getenv("BASALT_TEST_LOG_LEVEL"); l != "" {
		return l
	}
	return "warn"
}

// lockedWriter lets a process's stdout and stderr share a buffer that the
// test reads while the process runs.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
