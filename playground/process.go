package playground

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// child is one running node: its process, whose stdout and stderr go to
// the node's log file. exited is closed once the process has ended (err
// says how); stopping is set before the playground signals it, so that
// its end is expected.
type child struct {
	node     *Node
	cmd      *exec.Cmd
	exited   chan struct{}
	err      error // cmd.Wait's; read after exited is closed
	stopping atomic.Bool
	cgroup   string // its CPU cap's cgroup (cgroup.go), if any
}

// startChild starts bin with the node's arguments in the node's
// directory and the playground's environment with the node's Env added,
// appending its output to the node's log file. The child is
// in a process group of its own, so that a Ctrl-C at the terminal reaches
// the playground alone, which stops the nodes in order; if the
// playground dies, the children get SIGTERM (Linux).
func startChild(bin string, n *Node) (*child, error) {
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(n.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own copy
	fmt.Fprintf(log, "--- basalt playground starts %s at %s: %s%s %s\n", n.Name,
		time.Now().Format(time.RFC3339), envPrefix(n.Env), bin, strings.Join(n.Args, " "))
	cmd := exec.Command(bin, n.Args...)
	cmd.Dir = n.Dir
	if len(n.Env) > 0 {
		cmd.Env = append(os.Environ(), n.Env...) // exec keeps a key's last value
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", n.Name, err)
	}
	c := &child{node: n, cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// envPrefix is env as a shell would have it before a command: "K=V K=V ",
// or "" for none.
func envPrefix(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return strings.Join(env, " ") + " "
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// done reports whether the process has ended.
func (c *child) done() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// exitStatus says how the process ended: "exit status 1", "signal:
// killed".
func (c *child) exitStatus() string {
	if c.err == nil {
		return "exit status 0"
	}
	return c.err.Error()
}

// stop sends SIGTERM and waits for the process to end, sending SIGKILL
// after timeout or at once when force is closed. It returns nil if the
// process ended with status 0 after SIGTERM, or had ended before.
func (c *child) stop(timeout time.Duration, force <-chan struct{}) error {
	c.stopping.Store(true)
	if c.done() {
		return nil // already reported
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("%s did not stop within %v of SIGTERM and was killed", c.node.Name, timeout)
	case <-force:
		_ = c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("%s was killed", c.node.Name)
	}
	if c.err != nil && !cleanExit(c.node.Role, c.err) {
		return fmt.Errorf("%s stopped with %s", c.node.Name, c.exitStatus())
	}
	return nil
}

// cleanExit reports whether err is how a node ends after SIGTERM when
// all is well: status 0, or for HAProxy, which leaves on SIGTERM with
// the signal's status, that.
func cleanExit(role Role, err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	if role == RoleHAProxy {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return ws.Signaled() && ws.Signal() == syscall.SIGTERM || ws.ExitStatus() == 0 || ws.ExitStatus() == 128+int(syscall.SIGTERM)
		}
	}
	return ee.ExitCode() == 0
}

// logTail returns the last n lines of a log file, each indented.
func logTail(file string, n int) string {
	b, err := readTail(file, 64<<10)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return "  " + strings.Join(lines, "\n  ")
}

// readTail reads at most the last limit bytes of file.
func readTail(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := st.Size() - limit
	if off < 0 {
		off = 0
	}
	b := make([]byte, st.Size()-off)
	_, err = f.ReadAt(b, off)
	return b, err
}
