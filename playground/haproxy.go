package playground

import (
	"fmt"
	"os/exec"
	"strings"
)

// haproxyConfig is HAProxy's configuration for a playground: one TCP
// listener on listen that spreads connections over the SQL nodes, the
// least busy first (the reports' balance leastconn), and takes a node out
// while it does not greet as a MySQL server does (option mysql-check
// without a user reads the server's handshake and closes; with a user it
// would log in, which needs that user to exist). Until the checks have
// taken a dead node out, a connection it refuses is tried again on
// another (option redispatch, retries 3) rather than handed to the
// client broken. A session may last as long as a benchmark: client and
// server timeouts are an hour. HAProxy runs in the foreground, where its
// warnings (a server down) go to stderr, the node's log. testkit's
// StartHAProxy writes the same.
//
// One thread (nbthread 1): HAProxy 2.x starts one per CPU, and on a
// playground, where every node shares the machine's few CPUs, a second
// thread adds wake-ups and cross-thread hand-offs but no capacity
// (docs/cluster-bench/README.md has the measurements).
func haproxyConfig(name, listen string, sql []Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# HAProxy in front of the SQL nodes of basalt playground %q.
# Written by basalt playground at every start and scale-out; edits are lost.
global
    nbthread 1

defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    timeout check 2s

listen basalt
    bind %s
    balance leastconn
    option mysql-check
    option redispatch
    retries 3
`, name, listen)
	for _, n := range sql {
		fmt.Fprintf(&b, "    server %s %s check inter 2s rise 1 fall 2\n", n.Name, n.Addr)
	}
	return b.String()
}

// FindHAProxy returns the path of haproxy on $PATH, or of Debian's
// /usr/sbin/haproxy (not on a user's PATH), or "" if neither exists.
func FindHAProxy() string {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if p, err := exec.LookPath("/usr/sbin/haproxy"); err == nil {
		return p
	}
	return ""
}

// haproxyMissing tells a user how to get HAProxy.
const haproxyMissing = `HAProxy is not installed: the SQL nodes serve without it.
  To put it in front of them: sudo apt-get install haproxy (Debian, Ubuntu), then start the playground again.`
