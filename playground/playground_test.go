package playground

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/basalt-db/basalt/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestPlayground runs basalt playground twice on one tagged directory, as
// a user would: 1 PD, 3 stores, 2 SQL nodes and HAProxy (when installed).
// The first run writes through one SQL node; HAProxy sends two sessions
// to the two SQL nodes; scale-out adds a store (PD shows it Up) and a SQL
// node (it reads the table, and HAProxy sends it a third session);
// scale-in removes store1 (PD moves its regions away and makes it a
// Tombstone; the rows are still there) and the new SQL node (HAProxy
// lets go of it); display shows every node up; SIGTERM stops every node
// and the playground exits 0. The second run reuses the data and PD's and
// the stores' ports, and starts the three stores the data has although
// --kv asks for two: the other SQL node reads what the first run wrote
// and writes; a store killed with SIGKILL is reported and not restarted,
// the cluster goes on without it, and SIGTERM stops the rest with exit
// status 1. The stores heartbeat PD every second (--kv.config), so that
// PD moves regions in seconds.
func TestPlayground(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of processes")
	}
	bin := testkit.BuildBasalt(t)
	begin := time.Now()
	phase := func(what string) { t.Logf("%5.1fs %s", time.Since(begin).Seconds(), what) }
	dir := t.TempDir()
	dbPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	haproxyPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	haproxy := FindHAProxy() != ""
	if !haproxy {
		t.Log("haproxy is not installed (apt-get install haproxy): its part of the test is skipped")
	}
	kvConfig := filepath.Join(t.TempDir(), "kv.toml")
	if err := os.WriteFile(kvConfig, []byte("[raftstore]\npd-heartbeat-tick-interval = \"1s\"\npd-store-heartbeat-tick-interval = \"1s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"playground", "--db", "2", "--tag", "test", "--data-dir", dir, "--kv.config", kvConfig,
		"--db.port", strconv.Itoa(dbPort), "--haproxy.port", strconv.Itoa(haproxyPort), "--log-level", "warn"}

	// The first run.
	pg := startPlayground(t, bin, append(args, "--kv", "3")...)
	phase("the first run is ready")
	st := pg.state(t, dir)
	roles := map[Role]int{}
	for _, n := range st.Nodes {
		roles[n.Role]++
		if n.Status != "up" || !alive(n.PID) {
			t.Errorf("%s: status %q, pid %d alive %v; want up", n.Name, n.Status, n.PID, alive(n.PID))
		}
	}
	want := map[Role]int{RolePD: 1, RoleStore: 3, RoleSQL: 2}
	if haproxy {
		want[RoleHAProxy] = 1
	}
	if fmt.Sprint(roles) != fmt.Sprint(want) {
		t.Fatalf("nodes by role: %v, want %v", roles, want)
	}
	db1, db2 := node(t, st, "db1"), node(t, st, "db2")
	if db1.Addr != fmt.Sprintf("127.0.0.1:%d", dbPort) {
		t.Errorf("db1 at %s, want --db.port %d", db1.Addr, dbPort)
	}
	if haproxy {
		// Two sessions through HAProxy at once: leastconn sends them to
		// different SQL nodes.
		hp := openDB(t, node(t, st, "haproxy").Addr)
		ctx := context.Background()
		for range 2 {
			conn, err := hp.Conn(ctx)
			if err != nil {
				t.Fatalf("through HAProxy: %v", err)
			}
			defer conn.Close()
			var one int
			if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("through HAProxy: %v", err)
			}
		}
		for _, n := range []Node{db1, db2} {
			if c := connections(t, n); c < 1 {
				t.Errorf("%s has %d connections with two open through HAProxy; want one each", n.Name, c)
			}
		}
	}
	exec1 := openDB(t, db1.Addr)
	// The status page: the stores as PD counts them, and db1's statements
	// per second between two loads with statements run between them.
	loadStatusPage(t, st.ControlAddr)
	mustExec(t, exec1, "CREATE TABLE test.kv (k INT PRIMARY KEY, v VARCHAR(20))")
	mustExec(t, exec1, "INSERT INTO test.kv VALUES (1, 'one'), (2, 'two')")
	page := loadStatusPage(t, st.ControlAddr)
	if n := strings.Count(page, "<td>Up</td>"); n != 3 {
		t.Errorf("the status page shows %d stores Up, want 3:\n%s", n, page)
	}
	if m := regexp.MustCompile(`<td>db1</td><td>[^<]*</td><td class="n">([0-9.]+)</td>`).FindStringSubmatch(page); m == nil || m[1] == "0.0" {
		t.Errorf("the status page shows no statements per second on db1, which ran some:\n%s", page)
	}
	exec1.Close()

	out, err := exec.Command(bin, "playground", "scale-out", "--data-dir", dir, "--kv", "1", "--db", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("scale-out: %v\n%s", err, out)
	}
	for _, name := range []string{"store4", "db3"} {
		if !regexp.MustCompile(`(?m)^` + name + ` `).Match(out) {
			t.Errorf("scale-out does not list %s:\n%s", name, out)
		}
	}
	phase("scaled out")
	st = pg.state(t, dir)
	var stores []*Node
	for _, n := range st.Nodes {
		if n.Role == RoleStore {
			stores = append(stores, &n)
		}
	}
	if err := probeCluster(context.Background(), node(t, st, "pd1").Addr, stores); err != nil || len(stores) != 4 {
		t.Errorf("after scale-out, %d stores: %v", len(stores), err)
	}
	db3 := node(t, st, "db3")
	if got := rows(t, openDB(t, db3.Addr)); got != "1 one, 2 two" {
		t.Errorf("db3 reads %q, want what db1 wrote", got)
	}
	if haproxy {
		hp := openDB(t, node(t, st, "haproxy").Addr)
		ctx := context.Background()
		for range 3 {
			conn, err := hp.Conn(ctx)
			if err != nil {
				t.Fatalf("through HAProxy: %v", err)
			}
			defer conn.Close()
			if err := conn.PingContext(ctx); err != nil {
				t.Fatalf("through HAProxy: %v", err)
			}
		}
		if c := connections(t, db3); c < 1 {
			t.Errorf("db3 has no connection with three open through HAProxy: it was not added")
		}
	}

	all := st // every node that ran, for the check that none is left
	for _, name := range []string{"store1", "db3"} {
		out, err := exec.Command(bin, "playground", "scale-in", "--data-dir", dir, "--name", name).CombinedOutput()
		if err != nil {
			t.Fatalf("scale-in %s: %v\n%s", name, err, out)
		}
		phase(name + " scaled in")
	}
	st = pg.state(t, dir)
	for _, n := range st.Nodes {
		if n.Name == "store1" || n.Name == "db3" {
			t.Errorf("%s is in the state file after its scale-in", n.Name)
		}
	}
	for _, name := range []string{"store1", "db3"} {
		if n := node(t, all, name); alive(n.PID) {
			t.Errorf("%s (pid %d) runs after its scale-in", name, n.PID)
		}
	}
	pdStoreList, err := pdStores(context.Background(), node(t, st, "pd1").Addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pdStoreList {
		if s.Store.Address == node(t, all, "store1").Addr && s.Status.StateName != "Tombstone" {
			t.Errorf("PD shows store1 %s after its scale-in, want Tombstone", s.Status.StateName)
		}
	}
	if got := rows(t, openDB(t, db1.Addr)); got != "1 one, 2 two" {
		t.Errorf("db1 reads %q after store1's scale-in", got)
	}
	if haproxy {
		cfg, err := os.ReadFile(filepath.Join(dir, "haproxy", "haproxy.cfg"))
		if err != nil || strings.Contains(string(cfg), "server db3") || !strings.Contains(string(cfg), "server db2") {
			t.Errorf("HAProxy's configuration after db3's scale-in (%v):\n%s", err, cfg)
		}
	}

	out, err = exec.Command(bin, "playground", "display", "--data-dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("display: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "running (pid ") {
		t.Errorf("display does not show the playground running:\n%s", out)
	}
	for _, n := range st.Nodes {
		if !regexp.MustCompile(`(?m)^` + n.Name + ` .* up$`).Match(out) {
			t.Errorf("display does not show %s up:\n%s", n.Name, out)
		}
	}

	phase("the first run served")
	if code := pg.stop(t); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0\n%s", code, pg.output())
	}
	for _, n := range all.Nodes {
		if alive(n.PID) {
			t.Errorf("%s (pid %d) runs after the playground stopped", n.Name, n.PID)
		}
	}
	if after, err := ReadState(dir); err != nil {
		t.Error(err)
	} else {
		for _, n := range after.Nodes {
			if n.Status != "stopped" || n.PID != 0 {
				t.Errorf("state file after the stop: %s status %q pid %d", n.Name, n.Status, n.PID)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	phase("the first run has stopped")

	// The second run, on the same directory, without HAProxy.
	pg = startPlayground(t, bin, append(args, "--kv", "2", "--without-haproxy")...)
	phase("the second run is ready")
	if !strings.Contains(pg.output(), "holds the data of 3 stores: starting 3 (--kv 2)") {
		t.Errorf("the second run does not say it starts the 3 stores of the data:\n%s", pg.output())
	}
	st2 := pg.state(t, dir)
	for _, n := range st.Nodes {
		if n.Role != RolePD && n.Role != RoleStore {
			continue
		}
		if m := node(t, st2, n.Name); m.Addr != n.Addr || m.StatusAddr != n.StatusAddr || m.PeerAddr != n.PeerAddr {
			t.Errorf("%s moved: %s %s %s, then %s %s %s", n.Name, n.Addr, n.StatusAddr, n.PeerAddr, m.Addr, m.StatusAddr, m.PeerAddr)
		}
	}
	for _, n := range st2.Nodes {
		if n.Role == RoleHAProxy {
			t.Errorf("HAProxy started with --without-haproxy")
		}
	}
	exec2 := openDB(t, node(t, st2, "db2").Addr)
	if got := rows(t, exec2); got != "1 one, 2 two" {
		t.Errorf("db2 reads %q after the restart, want what db1 wrote", got)
	}
	mustExec(t, exec2, "INSERT INTO test.kv VALUES (3, 'three')")
	read1 := openDB(t, node(t, st2, "db1").Addr)
	if got := rows(t, read1); got != "1 one, 2 two, 3 three" {
		t.Errorf("db1 reads %q, want db2's write too", got)
	}

	store3 := node(t, st2, "store3")
	if err := syscall.Kill(store3.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	report := fmt.Sprintf("store3 (pid %d) exited unexpectedly (signal: killed)", store3.PID)
	pg.waitFor(t, report, 10*time.Second)
	phase("store3 killed and reported")
	out, _ = exec.Command(bin, "playground", "display", "--data-dir", dir).CombinedOutput()
	if !regexp.MustCompile(`(?m)^store3 .* exited: signal: killed$`).Match(out) {
		t.Errorf("display does not show store3 exited:\n%s", out)
	}
	// The others go on: two stores of three still serve.
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := tryRows(read1)
		if err == nil && got == "1 one, 2 two, 3 three" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("with store3 down db1 reads %q, %v", got, err)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	phase("the cluster serves without store3")
	read1.Close()
	exec2.Close()
	if code := pg.stop(t); code != 1 {
		t.Errorf("exit status %d after SIGTERM with a store dead, want 1\n%s", code, pg.output())
	}
	phase("the second run has stopped")
	for _, n := range st2.Nodes {
		if alive(n.PID) {
			t.Errorf("%s (pid %d) runs after the playground stopped", n.Name, n.PID)
		}
	}
}

// playgroundProc is a basalt playground process run by a test.
type playgroundProc struct {
	cmd      *exec.Cmd
	mu       sync.Mutex
	out, err bytes.Buffer
	exited   chan struct{}
	waitErr  error
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startPlayground starts basalt with args and waits until it says it is
// ready. The test's cleanup stops it if it still runs.
func startPlayground(t *testing.T, bin string, args ...string) *playgroundProc {
	t.Helper()
	p := &playgroundProc{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = lockedWriter{&p.mu, &p.out}, lockedWriter{&p.mu, &p.err}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.stop(t)
		}
		if t.Failed() {
			t.Logf("basalt %s:\n%s", strings.Join(args, " "), p.output())
		}
	})
	p.waitFor(t, "is ready", 60*time.Second)
	return p
}

// output is what the playground wrote.
func (p *playgroundProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "--- stdout\n" + p.out.String() + "--- stderr\n" + p.err.String()
}

// waitFor waits until the playground's stdout or stderr holds s.
func (p *playgroundProc) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.output(), s) {
		select {
		case <-p.exited:
			t.Fatalf("the playground exited (%v) before writing %q:\n%s", p.waitErr, s, p.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the playground did not write %q within %v:\n%s", s, timeout, p.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop sends SIGTERM and returns the exit status.
func (p *playgroundProc) stop(t *testing.T) int {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(90 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("the playground did not stop within 90s of SIGTERM")
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		return ee.ExitCode()
	}
	if p.waitErr != nil {
		t.Errorf("the playground: %v", p.waitErr)
		return -1
	}
	return 0
}

func (p *playgroundProc) state(t *testing.T, dir string) *State {
	t.Helper()
	st, err := ReadState(dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.output())
	}
	return st
}

func node(t *testing.T, st *State, name string) Node {
	t.Helper()
	for _, n := range st.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s in the state file", name)
	return Node{}
}

func openDB(t *testing.T, addr string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", addr
	cfg.Timeout = 10 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, stmt string) {
	t.Helper()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// rows returns test.kv's rows as "k v, k v".
func rows(t *testing.T, db *sql.DB) string {
	t.Helper()
	s, err := tryRows(db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryRows(db *sql.DB) (string, error) {
	rs, err := db.Query("SELECT k, v FROM test.kv ORDER BY k")
	if err != nil {
		return "", err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var k int
		var v string
		if err := rs.Scan(&k, &v); err != nil {
			return "", err
		}
		out = append(out, fmt.Sprintf("%d %s", k, v))
	}
	return strings.Join(out, ", "), rs.Err()
}

// connections is a SQL node's count of open connections (its /status).
func connections(t *testing.T, n Node) int {
	t.Helper()
	resp, err := http.Get("http://" + n.StatusAddr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Connections int `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Connections
}

// loadStatusPage loads the playground's status page from its control port.
func loadStatusPage(t *testing.T, controlAddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + controlAddr + "/")
	if err != nil {
		t.Fatalf("the status page: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the status page: %s %v\n%s", resp.Status, err, b)
	}
	return string(b)
}
