package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// StartHAProxy starts HAProxy in front of SQL nodes, configured as basalt
// playground configures it (playground/haproxy.go, which this package
// cannot import: playground's tests import testkit): one TCP
// listener on a free loopback port that spreads connections over the
// nodes, the least busy first, takes a node out once two health checks two
// seconds apart find no MySQL greeting, and meanwhile tries a connection
// the node refuses on another. The returned Server is HAProxy's process
// and listener: a client of it reaches one of the nodes. It skips the
// test when HAProxy is not installed.
func StartHAProxy(t testing.TB, nodes ...*Server) *Server {
	t.Helper()
	bin := findHAProxy()
	if bin == "" {
		t.Skip("testkit: HAProxy is not installed (apt-get install haproxy)")
	}
	port := freePorts(t, 1)[0]
	var b strings.Builder
	fmt.Fprintf(&b, `global
    nbthread 1

defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    timeout check 2s

listen basalt
    bind 127.0.0.1:%d
    balance leastconn
    option mysql-check
    option redispatch
    retries 3
`, port)
	for i, n := range nodes {
		fmt.Fprintf(&b, "    server db%d %s:%d check inter 2s rise 1 fall 2\n", i+1, n.Host(), n.Port())
	}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// -db: in the foreground, its warnings (a server down) on stderr.
	s := startServer(t, nodes[0].Flavor(), bin, []string{"-db", "-f", cfg}, port)
	// HAProxy ends on SIGTERM without exiting 0, which Stop would report
	// as an unclean stop: it keeps nothing, so it is killed instead (this
	// cleanup runs before startServer's).
	t.Cleanup(s.Kill)
	return s
}

// findHAProxy is haproxy on $PATH, or Debian's /usr/sbin/haproxy (not on a
// user's PATH), or "".
func findHAProxy() string {
	for _, p := range []string{"haproxy", "/usr/sbin/haproxy"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	return ""
}
