package testkit

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strconv"
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
	flavor     Flavor
	host       string
	proc       *bench.Process
	statusPort int // Basalt's --status-port; 0 if unknown
}

// startServer starts bin with args, waits until it accepts MySQL connections
// on port, and registers the cleanup that stops it and, if the test failed,
// prints its log.
func startServer(t testing.TB, flavor Flavor, bin string, args []string, port int) *Server {
	t.Helper()
	s := &Server{flavor: flavor, host: "127.0.0.1", proc: &bench.Process{
		Name: string(flavor), Bin: bin, Args: args, Port: port, Log: &bench.TailBuffer{},
		ReadyTimeout: readyTimeout, StopTimeout: stopTimeout,
	}}
	t.Cleanup(func() {
		if s.proc.Running() {
			if err := s.Stop(); err != nil {
				t.Errorf("testkit: stopping %s: %v", flavor, err)
			}
		}
		if t.Failed() {
			t.Logf("testkit: %s %v\n--- output ---\n%s--- end of output ---", bin, args, s.proc.Log)
		}
	})
	if err := s.proc.Start(context.Background()); err != nil {
		t.Fatalf("testkit: %v", err)
	}
	return s
}

// Flavor reports which software the server runs.
func (s *Server) Flavor() Flavor { return s.flavor }

// Host is the address the server listens on, always 127.0.0.1.
func (s *Server) Host() string { return s.host }

// Port is the server's MySQL protocol port.
func (s *Server) Port() int { return s.proc.Port }

// DSN returns a go-sql-driver/mysql data source name for root, with an
// empty password, over TCP; db may be empty.
func (s *Server) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(s.host, strconv.Itoa(s.proc.Port))
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
	if !s.proc.Running() {
		return fmt.Errorf("%s is not running", s.flavor)
	}
	return s.proc.Stop()
}

// Kill sends SIGKILL, as a crash would, and waits for the process to exit.
func (s *Server) Kill() {
	if !s.proc.Running() {
		return
	}
	s.proc.Kill()
	fmt.Fprintf(s.proc.Log, "--- testkit: killed with SIGKILL ---\n")
}

// Restart stops the server if it is running (an unclean stop is an error)
// and starts it again with the same ports and data directory, returning
// once it accepts connections.
func (s *Server) Restart() error {
	if s.proc.Running() {
		if err := s.proc.Stop(); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.proc.Log, "--- testkit: restarting ---\n")
	return s.proc.Start(context.Background())
}

// Output returns the server's stdout and stderr so far (the last MiB).
func (s *Server) Output() string { return s.proc.Log.String() }

// PID is the process id of the running server, or 0 when it is stopped.
func (s *Server) PID() int { return s.proc.PID() }
