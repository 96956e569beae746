package testkit

import (
	"net"
	"strconv"
	"testing"
)

// BasaltOptions adjusts StartBasalt. The zero value starts a fresh server.
type BasaltOptions struct {
	// DataDir is the --data-dir; empty means a new t.TempDir().
	DataDir string
	// Args are more flags for the command line, such as "--config", path.
	Args []string
	// Bin is the basalt binary to run; empty builds this tree's (an older
	// build, to measure a change against).
	Bin string
}

// StartBasalt builds basalt (see BuildBasalt) and starts it on free ports:
//
//	basalt --host 127.0.0.1 --port P --status-port S --data-dir D [opts.Args]
//
// It returns once a MySQL connection as root succeeds.
func StartBasalt(t testing.TB, opts BasaltOptions) *Server {
	t.Helper()
	bin := opts.Bin
	if bin == "" {
		bin = BuildBasalt(t)
	}
	dataDir := opts.DataDir
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	ports := freePorts(t, 2)
	args := []string{
		"--host", "127.0.0.1",
		"--port", strconv.Itoa(ports[0]),
		"--status-port", strconv.Itoa(ports[1]),
		"--data-dir", dataDir,
	}
	srv := startServer(t, Basalt, bin, append(args, opts.Args...), ports[0])
	srv.statusPort = ports[1]
	return srv
}

// StatusAddr is the host:port of a Basalt server's status port (/status,
// /metrics, /dashboard); "" for a server StartBasalt did not start.
func (s *Server) StatusAddr() string {
	if s.statusPort == 0 {
		return ""
	}
	return net.JoinHostPort(s.host, strconv.Itoa(s.statusPort))
}
