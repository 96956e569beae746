package testkit

import (
	"path/filepath"
	"testing"
)

// StartSQLNode starts a SQL node on cluster c, a basalt process over the
// cluster's PD (see StartBasalt):
//
//	basalt --store tikv --path <PD members> --log-level <level> [args]
//
// Any number of SQL nodes may serve one cluster. The node is stopped when
// the test ends.
func (c *Cluster) StartSQLNode(t testing.TB, args ...string) *Server {
	t.Helper()
	// A SQL node keeps no data; its slow log would go to the working
	// directory, the test's package.
	slow := filepath.Join(t.TempDir(), "basalt-slow.log")
	return StartBasalt(t, BasaltOptions{
		Args: append([]string{"--store", "tikv", "--path", c.PDList(), "--log-level", logLevel(), "--log-slow-query", slow}, args...),
	})
}
