package sqllogictest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
	"github.com/cockroachdb/datadriven"
)

// TestRunFile runs scripts against MariaDB, the reference server, to check
// what the runner counts and reports (testdata/run_file):
//
//	run file=NAME [limit=N] [timeout=DURATION]
//
// prints the counts and every failure of testdata/NAME. It skips when
// MariaDB is not installed.
func TestRunFile(t *testing.T) {
	srv := testkit.StartMariaDB(t)
	db := srv.OpenDB(t, "")
	datadriven.RunTest(t, "testdata/run_file", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "run" {
			t.Fatalf("unknown command %q", d.Cmd)
		}
		var name string
		d.ScanArgs(t, "file", &name)
		opts := Options{MaxFailures: 100}
		if d.HasArg("limit") {
			d.ScanArgs(t, "limit", &opts.MaxRecords)
		}
		if d.HasArg("timeout") {
			var s string
			d.ScanArgs(t, "timeout", &s)
			var err error
			if opts.RecordTimeout, err = time.ParseDuration(s); err != nil {
				t.Fatal(err)
			}
		}
		res, err := RunFile(context.Background(), db, "testdata/"+name, opts)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		var out strings.Builder
		fmt.Fprintf(&out, "%d passed, %d failed, %d skipped\n", res.Passed, res.Failed, res.Skipped)
		for _, f := range res.Failures {
			fmt.Fprintln(&out, f)
		}
		var left int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name LIKE 'slt\\_%'").Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left > 0 {
			t.Errorf("%d script databases left behind", left)
		}
		return out.String()
	})
}
