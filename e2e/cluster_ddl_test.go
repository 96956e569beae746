package e2e

import (
	"database/sql"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// clusterDDLEnv runs TestClusterOnlineDDL.
const clusterDDLEnv = "BASALT_E2E_CLUSTER_DDL"

// TestClusterOnlineDDL runs sysbench oltp_write_only (4 threads, in
// rounds of 5 s) on SQL node B of a cluster (1 PD, 3 stores) while node A adds two indexes
// to the table it writes, one after the other:
//
//  1. oltp_common prepare on B: 1 table x 5,000 rows.
//  2. oltp_write_only on B, from 2 s before the first change until the
//     last is done; on A: ADD INDEX c_1 (c), then ADD INDEX k_c (k, c),
//     each backfilled while B writes.
//  3. sysbench reports no failed statement (deadlocks and lock wait
//     timeouts, which it retries, are only counted; an 8028 would fail
//     it) and lost no connection.
//  4. ADMIN CHECK TABLE passes on A and on B; the table still holds 5,000
//     rows (write_only deletes and reinserts the same ids); each new
//     index counts as many entries as the table has rows.
//
// It runs only with BASALT_E2E_CLUSTER_DDL=1 (40 to 45 s on a busy 2-core
// machine, each ADD INDEX 8 to 23 s of it).
func TestClusterOnlineDDL(t *testing.T) {
	if os.Getenv(clusterDDLEnv) == "" {
		t.Skip("set " + clusterDDLEnv + "=1 to run it (a minute or more)")
	}
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	const rows = 5000
	c := testkit.StartCluster(t, 3, "")
	a := c.StartSQLNode(t, "--lease", "3s")
	b := c.StartSQLNode(t, "--lease", "3s")
	dbA, dbB := a.OpenDB(t, ""), b.OpenDB(t, "")
	mustExec(t, dbA, "CREATE DATABASE sbtest")
	table := []string{"--tables=1", "--table-size=" + strconv.Itoa(rows)}
	runSysbench(t, b, "oltp_common", "prepare", table...)

	// The load: rounds of oltp_write_only on B until the changes are
	// done.
	var (
		total    testkit.SysbenchResult
		loadErrs []error
		rounds   int
		ddlDone  = make(chan struct{})
		loadDone = make(chan struct{})
	)
	go func() {
		defer close(loadDone)
		args := append([]string{"oltp_write_only"}, table...)
		args = append(args, "--time=5", "--threads=4", "run")
		for {
			res, err := testkit.Sysbench(t, b, args...)
			rounds++
			total.Transactions += res.Transactions
			total.IgnoredErrors += res.IgnoredErrors
			total.Reconnects += res.Reconnects
			if err != nil {
				loadErrs = append(loadErrs, err)
				return
			}
			select {
			case <-ddlDone:
				return
			default:
			}
		}
	}()

	time.Sleep(2 * time.Second)
	for _, q := range []string{
		"ALTER TABLE sbtest.sbtest1 ADD INDEX c_1 (c)",
		"ALTER TABLE sbtest.sbtest1 ADD INDEX k_c (k, c)",
	} {
		select {
		case <-loadDone:
			t.Fatalf("the load stopped before %q: %v", q, loadErrs)
		default:
		}
		start := time.Now()
		if _, err := dbA.Exec(q); err != nil {
			close(ddlDone)
			<-loadDone
			t.Fatalf("on A: %s: %v", q, err)
		}
		t.Logf("on A: %s: %v", q, time.Since(start).Round(time.Millisecond))
	}
	close(ddlDone)
	<-loadDone
	t.Logf("sysbench oltp_write_only on B: %d rounds of 5 s, %d transactions, %d ignored errors (deadlocks, lock wait timeouts), %d reconnects",
		rounds, total.Transactions, total.IgnoredErrors, total.Reconnects)
	for _, err := range loadErrs {
		t.Error(err)
	}
	if total.Reconnects > 0 {
		t.Errorf("sysbench lost %d connections", total.Reconnects)
	}
	if total.Transactions == 0 {
		t.Error("sysbench completed no transaction")
	}

	for _, db := range []*sql.DB{dbA, dbB} {
		checkTable(t, testkit.Basalt, db, "sbtest.sbtest1")
	}
	if n := countRows(t, dbB, "sbtest.sbtest1"); n != rows {
		t.Errorf("sbtest1 holds %d rows, want %d", n, rows)
	}
	for _, ix := range []string{"c_1", "k_c"} {
		var n int64
		if err := dbB.QueryRow("SELECT COUNT(*) FROM sbtest.sbtest1 USE INDEX (" + ix + ") WHERE c >= ''").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != rows {
			t.Errorf("index %s counts %d rows, want %d", ix, n, rows)
		}
	}
}
