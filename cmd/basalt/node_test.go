package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/config"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/store/local"
	"github.com/go-sql-driver/mysql"
)

// fakeEngine stands in for the SQL engine: root without a password, and
// sessions that answer every statement with OK, except "SLEEP", which waits
// for its context.
type fakeEngine struct {
	srv    atomic.Pointer[server.Server]
	closed atomic.Bool
	open   atomic.Int32 // sessions open
}

func newFakeEngine(fe *fakeEngine) engineFunc {
	return func(kv.Storage, *config.Config, buildInfo) (engine, error) { return fe, nil }
}

func (e *fakeEngine) SetServer(s *server.Server) { e.srv.Store(s) }
func (e *fakeEngine) Close() error               { e.closed.Store(true); return nil }

func (e *fakeEngine) LookupUser(_ context.Context, user, _ string) (server.Credential, bool, error) {
	return server.Credential{}, user == "root", nil
}

func (e *fakeEngine) OpenSession(context.Context, server.ConnInfo) (server.Session, error) {
	e.open.Add(1)
	return &fakeSession{e: e}, nil
}

type fakeSession struct{ e *fakeEngine }

func (s *fakeSession) ExecuteQuery(ctx context.Context, sql string, _ bool, w server.ResultWriter) error {
	if sql == "SLEEP" {
		<-ctx.Done()
		return ctx.Err()
	}
	return w.WriteResult(server.Result{}, false)
}
func (s *fakeSession) Prepare(context.Context, string) (server.Stmt, error) {
	return nil, errno.New(1295, "not supported")
}
func (s *fakeSession) UseDB(context.Context, string) error { return nil }
func (s *fakeSession) FieldList(context.Context, string, string) ([]server.Column, error) {
	return nil, nil
}
func (s *fakeSession) Status() server.StatusFlags  { return server.StatusAutocommit }
func (s *fakeSession) WarningCount() uint16        { return 0 }
func (s *fakeSession) CurrentDB() string           { return "" }
func (s *fakeSession) Reset(context.Context) error { return nil }
func (s *fakeSession) Close() error                { s.e.open.Add(-1); return nil }

// testConfig is a valid configuration on free ports and a fresh data
// directory.
func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Port = freePort(t)
	cfg.Status.StatusPort = freePort(t)
	cfg.Path = filepath.Join(t.TempDir(), "data")
	cfg.Storage.SyncLog = false
	cfg.Storage.BlockCache.Capacity = 8 * config.MiB
	cfg.RocksDB.DefaultCF.WriteBufferSize = 4 * config.MiB
	return cfg
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func openDB(t *testing.T, port int) *sql.DB {
	t.Helper()
	mc := mysql.NewConfig()
	mc.User, mc.Net, mc.Addr = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", port)
	mc.Timeout = 5 * time.Second
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A node serves MySQL and the status port; shutdown cancels a running
// statement after the timeout, closes the sessions, the engine and the
// store, whose directory can then be opened again.
func TestNodeLifecycle(t *testing.T) {
	cfg := testConfig(t)
	fe := &fakeEngine{}
	n, err := startNode(cfg, buildInfo{Version: "test"}, discardLogger(), newFakeEngine(fe))
	if err != nil {
		t.Fatal(err)
	}
	if fe.srv.Load() == nil {
		t.Error("the engine was not given the server")
	}

	db := openDB(t, cfg.Port)
	if _, err := db.Exec("DO 1"); err != nil {
		t.Fatalf("query: %v", err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	resp, err := (&netClient{}).get(fmt.Sprintf("http://127.0.0.1:%d/status", cfg.Status.StatusPort))
	if err != nil || !strings.Contains(resp, `"connections":`) || !strings.Contains(resp, "8.4.0-Basalt-test") {
		t.Errorf("/status: %v %s", err, resp)
	}

	// A statement still running at shutdown is cancelled after the timeout.
	sleepErr := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(context.Background(), "SLEEP")
		sleepErr <- err
	}()
	waitFor(t, "the statement to run", func() bool { return processRunning(fe.srv.Load()) })

	start := time.Now()
	if err := n.shutdown(300 * time.Millisecond); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	if err := <-sleepErr; err == nil {
		t.Error("the running statement succeeded after shutdown")
	}
	if n := fe.open.Load(); n != 0 {
		t.Errorf("%d sessions still open", n)
	}
	if !fe.closed.Load() {
		t.Error("engine not closed")
	}
	if _, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.Port), time.Second); err == nil {
		t.Error("the MySQL port still accepts connections")
	}
	if _, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.Status.StatusPort), time.Second); err == nil {
		t.Error("the status port still accepts connections")
	}
	s, err := local.Open(cfg.Path, local.Options{NoSync: true})
	if err != nil {
		t.Fatalf("the store was not released: %v", err)
	}
	s.Close()
}

func processRunning(s *server.Server) bool {
	if s == nil {
		return false
	}
	for _, p := range s.ProcessList() {
		if p.Info == "SLEEP" {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// netClient is a tiny HTTP GET, to keep the test free of keep-alive pools
// that would hold the status port open.
type netClient struct{}

func (netClient) get(url string) (string, error) {
	host := strings.TrimPrefix(url, "http://")
	host, path, _ := strings.Cut(host, "/")
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET /%s HTTP/1.0\r\nHost: %s\r\n\r\n", path, host)
	var b bytes.Buffer
	_, err = b.ReadFrom(c)
	return b.String(), err
}

// Start fails with one clear error, and releases what it took, when a port
// is taken or the data directory is refused.
func TestNodeStartErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port

	notBasalt := t.TempDir()
	os.WriteFile(filepath.Join(notBasalt, "important.txt"), []byte("x"), 0o644)

	for _, tc := range []struct {
		name   string
		change func(*config.Config)
		want   string
	}{
		{"MySQL port in use", func(c *config.Config) { c.Port = takenPort },
			fmt.Sprintf("cannot listen on 127.0.0.1:%d for the MySQL port: the address is already in use", takenPort)},
		{"status port in use", func(c *config.Config) { c.Status.StatusPort = takenPort },
			"for the status port: the address is already in use (is another server running?); choose another with --status-port, or disable it with --status-port 0"},
		{"host not local", func(c *config.Config) { c.Host = "192.0.2.1" },
			"no interface has address 192.0.2.1"},
		{"data directory not Basalt's", func(c *config.Config) { c.Path = notBasalt },
			"is not a Basalt data directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			tc.change(cfg)
			fe := &fakeEngine{}
			_, err := startNode(cfg, buildInfo{}, discardLogger(), newFakeEngine(fe))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			// The ports are free again.
			for _, p := range []int{cfg.Port, cfg.Status.StatusPort} {
				if p == takenPort {
					continue
				}
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
				if err != nil {
					t.Errorf("port %d not released: %v", p, err)
				} else {
					l.Close()
				}
			}
		})
	}

	// A data directory another process has open.
	cfg := testConfig(t)
	s, err := local.Open(cfg.Path, local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := startNode(cfg, buildInfo{}, discardLogger(), newFakeEngine(&fakeEngine{})); err == nil ||
		!strings.Contains(err.Error(), "is in use by another Basalt process") {
		t.Errorf("locked data directory: err = %v", err)
	}
}

// serve prints how to connect, runs until a signal, and exits 0 after a
// clean shutdown; with the status port disabled it prints no status URL.
func TestServeUntilSignal(t *testing.T) {
	cfg := testConfig(t)
	cfg.Status.StatusPort = 0
	cfg.InitialRootPassword = "pw"
	cfg.Warnings = []string{"config key performance.tcp-keep-alive is TiDB's and has no effect in Basalt; ignored"}
	var stdout, stderr syncBuffer
	sigs := make(chan os.Signal, 1)
	status := make(chan int, 1)
	go func() { status <- serve(cfg, &stdout, &stderr, sigs, newFakeEngine(&fakeEngine{})) }()

	waitFor(t, "the ready message", func() bool { return strings.Contains(stdout.String(), "ready") })
	want := fmt.Sprintf("mysql -h 127.0.0.1 -P %d -u root -p\n", cfg.Port)
	if !strings.Contains(stdout.String(), want) || strings.Contains(stdout.String(), "status:") {
		t.Errorf("stdout:\n%s\nwant %q and no status line", stdout.String(), want)
	}
	sigs <- syscall.SIGTERM
	select {
	case s := <-status:
		if s != 0 {
			t.Errorf("exit status %d\nstderr: %s", s, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "shutting down") || !strings.Contains(stderr.String(), "stopped") ||
		!strings.Contains(stderr.String(), `level=WARN msg="config key performance.tcp-keep-alive is TiDB's`) {
		t.Errorf("log:\n%s", stderr.String())
	}
}

// serve reports a start failure on stderr and returns 1.
func TestServeStartFailure(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := testConfig(t)
	cfg.Port = taken.Addr().(*net.TCPAddr).Port
	var stdout, stderr syncBuffer
	if s := serve(cfg, &stdout, &stderr, make(chan os.Signal), newFakeEngine(&fakeEngine{})); s != 1 {
		t.Errorf("exit status %d, want 1", s)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "basalt: cannot listen on ") {
		t.Errorf("stderr:\n%s\nwant one line", stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines and the
// test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
