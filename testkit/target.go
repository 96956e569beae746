package testkit

import (
	"path/filepath"
	"testing"
)

// The targets StartTarget knows besides the flavors' names.
const (
	// TargetMockTiKV is a basalt SQL node on client-go's in-process mock
	// cluster (--store mocktikv).
	TargetMockTiKV = "mocktikv"
	// TargetCluster is a basalt SQL node (--store tikv) on a cluster of
	// its own: one PD and three stores, processes of the same binary.
	TargetCluster = "cluster"
)

// StartTarget starts the server a suite was asked to test: target is the
// value of the suite's environment variable (BASALT_E2E_TARGET,
// BASALT_SLT_TARGET), "basalt" or empty for a fresh basalt, "mariadb" for
// the reference server, "mocktikv" or "cluster" for basalt over client-go
// (see TargetMockTiKV, TargetCluster).
func StartTarget(t testing.TB, target string) *Server {
	t.Helper()
	switch target {
	case TargetMockTiKV:
		return StartBasalt(t, BasaltOptions{Args: []string{"--store", "mocktikv",
			"--log-slow-query", filepath.Join(t.TempDir(), "basalt-slow.log")}})
	case TargetCluster:
		return StartCluster(t, 3, "").StartSQLNode(t)
	}
	switch Flavor(target) {
	case Basalt, "":
		return StartBasalt(t, BasaltOptions{})
	case MariaDB:
		return StartMariaDB(t)
	}
	t.Fatalf("testkit: unknown target %q: want %q, %q, %q or %q", target, Basalt, MariaDB, TargetMockTiKV, TargetCluster)
	return nil
}
