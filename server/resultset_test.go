package server

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestResultSets round-trips every column type, NULLs and extremes through
// the Go driver in text rows (COM_QUERY) and binary rows (COM_STMT_EXECUTE),
// and the shapes of responses: OK packets, errors, multiple results.
func TestResultSets(t *testing.T) {
	ts := startServer(t, Config{})
	datadriven.RunTest(t, "testdata/resultset", func(t *testing.T, d *datadriven.TestData) string {
		return runDriverCommand(t, ts, d)
	})
}
