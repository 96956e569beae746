package testkit

import "testing"

// StartSQLNode starts a SQL node on cluster c, a basalt process over the
// cluster's PD (see StartBasalt):
//
//	basalt --store tikv --path <PD> --log-level <level> [args]
//
// Any number of SQL nodes may serve one cluster. The node is stopped when
// the test ends.
func (c *Cluster) StartSQLNode(t testing.TB, args ...string) *Server {
	t.Helper()
	return StartBasalt(t, BasaltOptions{
		Args: append([]string{"--store", "tikv", "--path", c.PD, "--log-level", logLevel()}, args...),
	})
}
