package testkit

import "testing"

// StartTarget starts the server a suite was asked to test: target is the
// value of the suite's environment variable (BASALT_E2E_TARGET,
// BASALT_SLT_TARGET), "basalt" or empty for a fresh basalt, "mariadb" for
// the reference server.
func StartTarget(t testing.TB, target string) *Server {
	t.Helper()
	switch Flavor(target) {
	case Basalt, "":
		return StartBasalt(t, BasaltOptions{})
	case MariaDB:
		return StartMariaDB(t)
	}
	t.Fatalf("testkit: unknown target %q: want %q or %q", target, Basalt, MariaDB)
	return nil
}
