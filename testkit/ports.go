package testkit

import (
	"net"
	"testing"
)

// freePorts returns n distinct TCP ports that were free on 127.0.0.1 a
// moment ago. Another process may take one before the server binds it; the
// server then fails to start and the test says so.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testkit: finding a free port: %v", err)
		}
		// Held open until all are chosen, so the n ports differ.
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}
