package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// longDDLEnv runs TestOnlineDDL's longer variant: more schema changes,
// more threads, both --db-ps-mode values.
const longDDLEnv = "BASALT_E2E_ONLINE_DDL_LONG"

// TestOnlineDDL changes the schema of a 100,000-row sysbench table while
// sysbench oltp_read_write (4 threads) runs against it, for as long as the
// changes take:
//
//  1. CREATE DATABASE sbtest; oltp_common prepare (1 table x 100,000 rows).
//  2. oltp_read_write in back-to-back runs of a few seconds, from before the
//     first change until after the last; any statement error or lost
//     connection fails the test (deadlocks and lock wait timeouts, which
//     sysbench retries, are only counted).
//  3. ALTER TABLE ADD INDEX on c (backfilled), then ADD COLUMN with a
//     default (no row rewritten); with BASALT_E2E_ONLINE_DDL_LONG=1 also
//     ADD COLUMN ... AFTER, MODIFY (one that rewrites the rows of the
//     indexed k), DROP COLUMN, ADD UNIQUE INDEX and DROP INDEX, with 8
//     threads and prepared statements on and off.
//  4. ADMIN CHECK TABLE (CHECK TABLE on MariaDB); the row count is still
//     100,000 (oltp_read_write deletes and reinserts the same ids); every
//     row reads the added column's default; the new index answers.
func TestOnlineDDL(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	cfg := loadConfig(t)
	long := os.Getenv(longDDLEnv) != ""
	const rows = 100000
	threads, psModes := 4, []string{"auto"}
	steps := []string{
		"ALTER TABLE sbtest.sbtest1 ADD INDEX c_1 (c)",
		"ALTER TABLE sbtest.sbtest1 ADD COLUMN extra INT NOT NULL DEFAULT 7",
	}
	if long {
		threads, psModes = 8, []string{"auto", "disable"}
		steps = append(steps,
			"ALTER TABLE sbtest.sbtest1 ADD COLUMN note VARCHAR(20) DEFAULT 'n' AFTER k",
			"ALTER TABLE sbtest.sbtest1 MODIFY extra BIGINT NOT NULL DEFAULT 7",
			"ALTER TABLE sbtest.sbtest1 ADD UNIQUE INDEX idk (id, k)",
			// Rewrites every row and rebuilds k_1 and idk (ddl/modify.go).
			"ALTER TABLE sbtest.sbtest1 MODIFY k BIGINT UNSIGNED NOT NULL DEFAULT 0",
			"ALTER TABLE sbtest.sbtest1 DROP COLUMN note",
			"ALTER TABLE sbtest.sbtest1 DROP INDEX idk",
			"ALTER TABLE sbtest.sbtest1 MODIFY pad CHAR(60) NOT NULL DEFAULT ''",
		)
	}

	srv := testkit.StartTarget(t, cfg.target)
	admin := srv.OpenDB(t, "")
	mustExec(t, admin, "CREATE DATABASE sbtest")
	table := []string{"--tables=1", "--table-size=" + strconv.Itoa(rows)}
	start := time.Now()
	runSysbench(t, srv, "oltp_common", "prepare", table...)
	t.Logf("prepared %d rows in %v", rows, time.Since(start).Round(time.Millisecond))

	// The load: rounds of oltp_read_write until the changes are done.
	var (
		mu        sync.Mutex
		loadErrs  []error
		txns      int64
		ignored   int64
		runs      int
		ddlDone   = make(chan struct{})
		loadDone  = make(chan struct{})
		roundTime = "--time=4"
	)
	go func() {
		defer close(loadDone)
		for i := 0; ; i++ {
			ps := psModes[i%len(psModes)]
			args := append([]string{"oltp_read_write"}, table...)
			args = append(args, roundTime, "--threads="+strconv.Itoa(threads), "--db-ps-mode="+ps, "run")
			res, err := testkit.Sysbench(t, srv, args...)
			mu.Lock()
			runs++
			txns += res.Transactions
			ignored += res.IgnoredErrors
			if err == nil && res.Reconnects > 0 {
				err = &reconnectError{res.Reconnects}
			}
			if err != nil {
				loadErrs = append(loadErrs, err)
			}
			mu.Unlock()
			select {
			case <-ddlDone:
				return
			default:
			}
			if err != nil {
				return
			}
		}
	}()

	time.Sleep(time.Second) // the first round is running
	ddlStart := time.Now()
	for _, q := range steps {
		select {
		case <-loadDone:
			t.Fatalf("the load stopped before %q: %v", q, loadErrs)
		default:
		}
		s := time.Now()
		if _, err := admin.Exec(q); err != nil {
			close(ddlDone)
			<-loadDone
			t.Fatalf("%s: %v", q, err)
		}
		t.Logf("%-62s %v", q, time.Since(s).Round(time.Millisecond))
	}
	ddlTime := time.Since(ddlStart)
	close(ddlDone)
	<-loadDone
	t.Logf("schema changes took %v; sysbench: %d runs, %d transactions, %d ignored errors (deadlocks, lock wait timeouts)",
		ddlTime.Round(time.Millisecond), runs, txns, ignored)
	for _, err := range loadErrs {
		t.Error(err)
	}
	if txns == 0 {
		t.Error("sysbench completed no transaction during the schema changes")
	}

	checkTable(t, srv.Flavor(), admin, "sbtest.sbtest1")
	if n := countRows(t, admin, "sbtest.sbtest1"); n != rows {
		t.Errorf("sbtest1 holds %d rows, want %d", n, rows)
	}
	var n int64
	if err := admin.QueryRow("SELECT COUNT(*) FROM sbtest.sbtest1 WHERE extra = 7").Scan(&n); err != nil || n != rows {
		t.Errorf("rows with the added column's default: %d (%v), want %d", n, err, rows)
	}
	// The new index finds what a full scan finds.
	var c string
	if err := admin.QueryRow("SELECT c FROM sbtest.sbtest1 WHERE id = 5000").Scan(&c); err != nil {
		t.Fatal(err)
	}
	var byIndex, byScan int64
	if err := admin.QueryRow("SELECT COUNT(*) FROM sbtest.sbtest1 WHERE c = ?", c).Scan(&byIndex); err != nil {
		t.Fatal(err)
	}
	if err := admin.QueryRow("SELECT COUNT(*) FROM sbtest.sbtest1 WHERE CONCAT(c, '') = ?", c).Scan(&byScan); err != nil {
		t.Fatal(err)
	}
	if byIndex != byScan || byIndex == 0 {
		t.Errorf("rows with c of row 5000: %d by index, %d by scan", byIndex, byScan)
	}
}

type reconnectError struct{ n int64 }

func (e *reconnectError) Error() string {
	return "sysbench lost " + strconv.FormatInt(e.n, 10) + " connections"
}
