package e2e

import (
	"context"
	"os/exec"
	"strconv"
	"testing"

	"github.com/basalt-db/basalt/bench"
	"github.com/basalt-db/basalt/testkit"
)

// TestBenchPrepareImport: the tables `basalt bench run --prepare import`
// makes (bench.PrepareByImport, through IMPORT INTO) are those sysbench
// oltp_common prepare makes on the same server: the same SHOW CREATE
// TABLE, ids 1..N, k in [1, N], c and pad of sysbench's lengths; ADMIN
// CHECK TABLE passes, and sysbench's oltp_read_write then runs on them
// without errors.
func TestBenchPrepareImport(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	const rows = 3000
	srv := testkit.StartBasalt(t, testkit.BasaltOptions{})
	db := srv.OpenDB(t, "")
	ctx := context.Background()
	mustExec(t, db, "CREATE DATABASE sbtest")
	mustExec(t, db, "CREATE DATABASE sysb")
	if _, err := bench.PrepareByImport(ctx, db, 2, rows, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	args := []string{"--tables=2", "--table-size=" + strconv.Itoa(rows)}
	runSysbench(t, srv, "oltp_common", "prepare", append([]string{"--mysql-db=sysb"}, args...)...)

	for _, tbl := range []string{"sbtest1", "sbtest2"} {
		var name, imported, prepared string
		if err := db.QueryRow("SHOW CREATE TABLE sbtest."+tbl).Scan(&name, &imported); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SHOW CREATE TABLE sysb."+tbl).Scan(&name, &prepared); err != nil {
			t.Fatal(err)
		}
		if imported != prepared {
			t.Errorf("%s imported:\n%s\nprepared by sysbench:\n%s", tbl, imported, prepared)
		}
		for _, dbName := range []string{"sbtest", "sysb"} {
			var n, minID, maxID, minK, maxK, lenC, lenPad int
			err := db.QueryRow("SELECT COUNT(*), MIN(id), MAX(id), MIN(k), MAX(k), MIN(LENGTH(c)) + MAX(LENGTH(c)), MIN(LENGTH(pad)) + MAX(LENGTH(pad)) FROM "+dbName+"."+tbl).
				Scan(&n, &minID, &maxID, &minK, &maxK, &lenC, &lenPad)
			if err != nil {
				t.Fatal(err)
			}
			if n != rows || minID != 1 || maxID != rows || minK < 1 || maxK > rows || lenC != 2*119 || lenPad != 2*59 {
				t.Errorf("%s.%s: %d rows, ids %d..%d, k %d..%d, len(c)*2 %d, len(pad)*2 %d", dbName, tbl, n, minID, maxID, minK, maxK, lenC, lenPad)
			}
		}
		mustExec(t, db, "ADMIN CHECK TABLE sbtest."+tbl)
		// k by sysbench's default distribution: most in the middle 1%.
		var middle int
		if err := db.QueryRow("SELECT COUNT(*) FROM sbtest."+tbl+" WHERE k BETWEEN ? AND ?", rows/2-rows/200-1, rows/2+rows/200+1).Scan(&middle); err != nil {
			t.Fatal(err)
		}
		if middle < rows*6/10 {
			t.Errorf("%s: %d of %d k values in the middle 1%%, want most (--rand-type=special)", tbl, middle, rows)
		}
	}
	// A failed statement fails the run (runSysbench).
	runSysbench(t, srv, "oltp_read_write", "run", append([]string{"--mysql-db=sbtest", "--time=2", "--threads=2"}, args...)...)
	mustExec(t, db, "ADMIN CHECK TABLE sbtest.sbtest1")
}
