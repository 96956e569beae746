package testkit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/basalt-db/basalt/bench"
)

// Flavor names the software behind a Server.
type Flavor string

// The servers testkit can start.
const (
	Basalt  Flavor = "basalt"
	MariaDB Flavor = "mariadb"
)

const (
	// readyTimeout bounds how long a starting server may take to accept a
	// MySQL connection.
	readyTimeout = 30 * time.Second
	// stopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	stopTimeout = 10 * time.Second
)

// Server is a database server process started by a test, listening on
// 127.0.0.1. Restart starts the same command line again, so the ports and
// the data directory survive restarts.
type Server struct {
	flavor Flavor
	host   string
	port   int
	bin    string
	args   []string
	log    *bench.TailBuffer
	proc   *process // nil when not running
}

// process is one run of the server's command line.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	err    error         // cmd.Wait's result; read only after exited is closed
}

// startServer starts bin with args, waits until it accepts MySQL connections
// on port, and registers the cleanup that stops it and, if the test failed,
// prints its log.
func startServer(t testing.TB, flavor Flavor, bin string, args []string, port int) *Server {
	t.Helper()
	s := &Server{flavor: flavor, host: "127.0.0.1", port: port, bin: bin, args: args, log: &bench.TailBuffer{}}
	t.Cleanup(func() {
		if s.proc != nil {
			if err := s.Stop(); err != nil {
				t.Errorf("testkit: stopping %s: %v", flavor, err)
			}
		}
		if t.Failed() {
			t.Logf("testkit: %s %v\n--- output ---\n%s--- end of output ---", bin, args, s.log)
		}
	})
	if err := s.start(); err != nil {
		t.Fatalf("testkit: %v", err)
	}
	return s
}

// Flavor reports which software the server runs.
func (s *Server) Flavor() Flavor { return s.flavor }

// Host is the address the server listens on, always 127.0.0.1.
func (s *Server) Host() string { return s.host }

// Port is the server's MySQL protocol port.
func (s *Server) Port() int { return s.port }

// DSN returns a go-sql-driver/mysql data source name for root, with an
// empty password, over TCP; db may be empty.
func (s *Server) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(s.host, strconv.Itoa(s.port))
	cfg.DBName = db
	cfg.Timeout = 10 * time.Second
	return cfg.FormatDSN()
}

// OpenDB opens a connection pool to db (which may be empty) and closes it
// when t ends.
func (s *Server) OpenDB(t testing.TB, db string) *sql.DB {
	t.Helper()
	pool, err := sql.Open("mysql", s.DSN(db))
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

// Stop sends SIGTERM and waits for the process to exit, killing it after
// ten seconds. It returns nil only if the process exited with status 0; a
// process that had already died reports how it died.
func (s *Server) Stop() error {
	p := s.proc
	if p == nil {
		return fmt.Errorf("%s is not running", s.flavor)
	}
	s.proc = nil
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM and was killed", s.flavor, stopTimeout)
	}
	if p.err != nil {
		return fmt.Errorf("%s exited after SIGTERM: %w", s.flavor, p.err)
	}
	return nil
}

// Kill sends SIGKILL, as a crash would, and waits for the process to exit.
func (s *Server) Kill() {
	p := s.proc
	if p == nil {
		return
	}
	s.proc = nil
	p.cmd.Process.Kill()
	<-p.exited
	fmt.Fprintf(s.log, "--- testkit: killed with SIGKILL ---\n")
}

// Restart stops the server if it is running (an unclean stop is an error)
// and starts it again with the same ports and data directory, returning
// once it accepts connections.
func (s *Server) Restart() error {
	if s.proc != nil {
		if err := s.Stop(); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.log, "--- testkit: restarting ---\n")
	return s.start()
}

// start runs the command line and waits until a MySQL connection succeeds.
func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = bench.SysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.flavor, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	s.proc = p
	return s.waitReady()
}

// waitReady polls with a MySQL ping until one succeeds, the process exits or
// readyTimeout passes.
func (s *Server) waitReady() error {
	pool, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return err
	}
	defer pool.Close()
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = pool.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.proc.exited:
			return errors.Join(fmt.Errorf("%s exited before accepting connections", s.flavor), s.proc.err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s accepted no MySQL connection on port %d within %v: %w", s.flavor, s.port, readyTimeout, err)
		}
	}
}

// Output returns the server's stdout and stderr so far (the last MiB).
func (s *Server) Output() string { return s.log.String() }

// PID is the process id of the running server, or 0 when it is stopped.
func (s *Server) PID() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}
