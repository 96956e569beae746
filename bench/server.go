package bench

import (
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
	// readyTimeout bounds how long a starting server may take to accept a
	// MySQL connection (MariaDB's crash recovery after a restore counts).
	readyTimeout = 60 * time.Second
	// stopTimeout is how long stop waits after SIGTERM before SIGKILL.
	stopTimeout = 30 * time.Second
)

// server is a database server process this package started, listening on
// 127.0.0.1:port. Its methods are not safe for concurrent use.
type server struct {
	name string // for messages
	bin  string
	args []string
	port int
	log  *TailBuffer
	proc *process // nil when not running
}

// process is one run of a server's command line.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	err    error         // cmd.Wait's result; read only after exited is closed
}

// start runs the command line and waits until a MySQL ping as root
// succeeds, the process exits or readyTimeout passes.
func (s *server) start(ctx context.Context) error {
	if s.proc != nil {
		return nil
	}
	if s.log == nil {
		s.log = &TailBuffer{}
	}
	if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))); err != nil {
		return fmt.Errorf("starting %s: port %d is in use: %w", s.name, s.port, err)
	} else {
		l.Close()
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = SysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.name, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	s.proc = p

	pool, err := sql.Open("mysql", rootDSN("127.0.0.1", s.port, "root", "", ""))
	if err != nil {
		return err
	}
	defer pool.Close()
	deadline := time.Now().Add(readyTimeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = pool.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			s.proc = nil
			return fmt.Errorf("%s exited before accepting connections (%v); its output ends:\n%s", s.name, p.err, Tail(s.log.String(), 20))
		case <-ctx.Done():
			s.stop()
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return fmt.Errorf("%s accepted no MySQL connection on port %d within %v: %v", s.name, s.port, readyTimeout, err)
		}
	}
}

// stop sends SIGTERM and waits for the process to exit, killing it after
// stopTimeout. It returns nil if the server was not running or exited
// with status 0.
func (s *server) stop() error {
	p := s.proc
	if p == nil {
		return nil
	}
	s.proc = nil
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM and was killed", s.name, stopTimeout)
	}
	if p.err != nil {
		return fmt.Errorf("%s exited after SIGTERM: %v", s.name, p.err)
	}
	return nil
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
