package bench

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

const (
	// defaultReadyTimeout bounds how long a starting server may take to
	// accept a MySQL connection (MariaDB's crash recovery after a restore
	// counts).
	defaultReadyTimeout = 60 * time.Second
	// defaultStopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	defaultStopTimeout = 30 * time.Second
)

// Process supervises a database server process listening for MySQL
// connections on 127.0.0.1:Port: it starts the command line, waits until a
// ping as root succeeds, and stops it with SIGTERM (SIGKILL after
// StopTimeout). The bench targets and testkit's test servers both run on
// it. Its methods are not safe for concurrent use.
type Process struct {
	Name string // for messages
	Bin  string
	Args []string
	Port int
	// Log receives the process's stdout and stderr; Start makes one if nil.
	Log *TailBuffer
	// ReadyTimeout and StopTimeout override defaultReadyTimeout and
	// defaultStopTimeout when non-zero.
	ReadyTimeout, StopTimeout time.Duration
	// Repick, if set, is called when Port is taken at the first Start
	// (free when the target was made, another program has bound it
	// since): it chooses free ports and sets Port and Args anew. Later
	// starts keep their ports (a restarted playground resumes its nodes).
	Repick func() error

	run     *process // nil when not running
	started bool
}

// process is one run of a server's command line.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	err    error         // cmd.Wait's result; read only after exited is closed
}

// Running reports whether the process was started and not yet stopped.
func (s *Process) Running() bool { return s.run != nil }

// PID is the process id of the running server, or 0 when it is stopped.
func (s *Process) PID() int {
	if s.run == nil {
		return 0
	}
	return s.run.cmd.Process.Pid
}

// Start runs the command line and waits until a MySQL ping as root
// succeeds, the process exits or the ready timeout passes. It does nothing
// if the process is running.
func (s *Process) Start(ctx context.Context) error {
	if s.run != nil {
		return nil
	}
	if s.Log == nil {
		s.Log = &TailBuffer{}
	}
	err := s.checkPort()
	if err != nil && s.Repick != nil && !s.started {
		if err = s.Repick(); err == nil {
			err = s.checkPort()
		}
	}
	if err != nil {
		return err
	}
	s.started = true
	cmd := exec.Command(s.Bin, s.Args...)
	cmd.Stdout, cmd.Stderr = s.Log, s.Log
	cmd.SysProcAttr = SysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.Name, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	s.run = p

	pool, err := sql.Open("mysql", rootDSN("127.0.0.1", s.Port, "root", "", ""))
	if err != nil {
		return err
	}
	defer pool.Close()
	timeout := cmp.Or(s.ReadyTimeout, defaultReadyTimeout)
	deadline := time.Now().Add(timeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = pool.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			s.run = nil
			return fmt.Errorf("%s exited before accepting connections (%v); its output ends:\n%s", s.Name, p.err, Tail(s.Log.String(), 20))
		case <-ctx.Done():
			s.Stop()
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("%s accepted no MySQL connection on port %d within %v: %v", s.Name, s.Port, timeout, err)
		}
	}
}

// Stop sends SIGTERM and waits for the process to exit, killing it after
// the stop timeout. It returns nil if the server was not running or exited
// with status 0; a process that had already died reports how it died.
func (s *Process) Stop() error {
	p := s.run
	if p == nil {
		return nil
	}
	s.run = nil
	p.cmd.Process.Signal(syscall.SIGTERM)
	timeout := cmp.Or(s.StopTimeout, defaultStopTimeout)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM and was killed", s.Name, timeout)
	}
	if p.err != nil {
		return fmt.Errorf("%s exited after SIGTERM: %w", s.Name, p.err)
	}
	return nil
}

// Kill sends SIGKILL, as a crash would, and waits for the process to exit.
func (s *Process) Kill() {
	p := s.run
	if p == nil {
		return
	}
	s.run = nil
	p.cmd.Process.Kill()
	<-p.exited
}

// rootDSN is a go-sql-driver/mysql data source name over TCP.
func rootDSN(host string, port int, user, password, db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = user, password
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	cfg.DBName = db
	cfg.Timeout = 10 * time.Second
	return cfg.FormatDSN()
}

// checkPort fails if Port cannot be bound on 127.0.0.1 now.
func (s *Process) checkPort() error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
	if err != nil {
		return fmt.Errorf("starting %s: port %d is in use: %w", s.Name, s.Port, err)
	}
	return l.Close()
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// copyDir copies the regular files, directories and symbolic links under
// src to dst, which must not exist.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		case info.Mode().IsRegular():
			return copyFile(path, to, info.Mode().Perm())
		}
		return nil // sockets, pipes: nothing to keep
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// FindProgram returns the path of name on $PATH, else fallback if that
// exists, else "".
func FindProgram(name, fallback string) string {
	if path, err := exec.LookPath(name); err == nil {
		return path
	}
	if _, err := os.Stat(fallback); err == nil {
		return fallback
	}
	return ""
}

// errMissing is wrapped by the errors for missing external programs.
var errMissing = errors.New("not installed")

// programVersion returns the first line of "bin args...", or "".
func programVersion(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(firstLine(string(out)))
}
