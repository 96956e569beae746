package testkit

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/basalt-db/basalt/bench"
)

// TestParseSysbench reads outputs captured from sysbench 1.0.20 in
// testdata/sysbench: a run's summary (with one deadlock retried) and a run
// that failed at thread initialisation.
func TestParseSysbench(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "sysbench", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	run := read("run.txt")
	got := parseSysbench(run)
	want := SysbenchResult{Output: run, Transactions: 6553, TPS: 3252.72, Queries: 39320, QPS: 19517.34, IgnoredErrors: 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run.txt: got %+v, want %+v", got, want)
	}
	if lines := bench.FatalLines(run); len(lines) != 0 {
		t.Errorf("run.txt: FATAL lines %q, want none", lines)
	}

	lines := bench.FatalLines(read("fatal.txt"))
	if len(lines) != 7 || lines[1] != `FATAL: MySQL error: 1146 "Table 'sbtest.sbtest5' doesn't exist"` {
		t.Errorf("fatal.txt: FATAL lines %q", lines)
	}
}
