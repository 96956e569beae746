package e2e

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/testkit"
)

// sysbenchTables is the data set of the OLTP workloads: four tables of
// 10,000 rows in database sbtest, made by oltp_common prepare.
var sysbenchTables = []string{"--tables=4", "--table-size=10000"}

// sysbenchWorkloads are sysbench 1.0's scripts over the prepared tables, in
// the order they run. bulk_insert, which needs tables of its own, runs after
// them.
var sysbenchWorkloads = []string{
	"oltp_point_select",
	"oltp_read_only",
	"oltp_write_only",
	"oltp_read_write",
	"oltp_update_index",
	"oltp_update_non_index",
	"oltp_insert",
	"oltp_delete",
	"select_random_points",
	"select_random_ranges",
}

// sysbenchThreads is the concurrency of every run.
const sysbenchThreads = 16

// TestSysbench runs every sysbench workload, with and without server-side
// prepared statements, against a fresh server, then checks that the tables
// are consistent and that their row counts survive a clean restart:
//
//  1. CREATE DATABASE sbtest; oltp_common prepare (4 tables x 10,000 rows).
//  2. Each workload for the configured time with 16 threads, once per
//     --db-ps-mode; any statement error fails it. Deadlocks and lock wait
//     timeouts, which sysbench retries, are logged; a lost connection fails.
//  3. bulk_insert into its own 16 tables (database sbtest_bulk), prepared
//     and cleaned up around each run; every row it counted must be there.
//  4. ADMIN CHECK TABLE (CHECK TABLE on MariaDB) of each table; row counts.
//  5. SIGTERM, which must end the server with status 0; restart on the same
//     data directory; the row counts must be unchanged.
//  6. oltp_common cleanup.
func TestSysbench(t *testing.T) {
	testSysbench(t, loadConfig(t))
}

// TestSysbenchOnCluster is TestSysbench, with 2-second runs and prepared
// statements only, against a SQL node on 1 PD and 3 stores (processes of
// the binary, 3 replicas, sync-log on): every workload served with no
// failed statement, the tables consistent, a restarted SQL node serving
// the same rows. BASALT_E2E_TARGET=cluster runs the full TestSysbench
// there instead.
func TestSysbenchOnCluster(t *testing.T) {
	cfg := loadConfig(t)
	if cfg.target == testkit.TargetCluster {
		t.Skip("TestSysbench runs on the cluster (BASALT_E2E_TARGET=cluster)")
	}
	cfg.target, cfg.seconds, cfg.psModes = testkit.TargetCluster, 2, cfg.psModes[:1]
	testSysbench(t, cfg)
}

func testSysbench(t *testing.T, cfg config) {
	srv := testkit.StartTarget(t, cfg.target)
	admin := srv.OpenDB(t, "")
	mustExec(t, admin, "CREATE DATABASE sbtest")
	runSysbench(t, srv, "oltp_common", "prepare", sysbenchTables...)

	duration := "--time=" + strconv.Itoa(cfg.seconds)
	threads := "--threads=" + strconv.Itoa(sysbenchThreads)
	for _, workload := range sysbenchWorkloads {
		for _, ps := range cfg.psModes {
			t.Run(workload+"/ps="+ps, func(t *testing.T) {
				runSysbench(t, srv, workload, "run", append(sysbenchTables, duration, threads, "--db-ps-mode="+ps)...)
			})
		}
	}
	for _, ps := range cfg.psModes {
		t.Run("bulk_insert/ps="+ps, func(t *testing.T) {
			testBulkInsert(t, srv, admin, duration, threads, "--db-ps-mode="+ps)
		})
	}

	before := make(map[string]int64)
	for _, table := range sbtestTables() {
		checkTable(t, srv.Flavor(), admin, table)
		before[table] = countRows(t, admin, table)
	}
	t.Logf("row counts: %v", before)

	if err := srv.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	admin = srv.OpenDB(t, "")
	for _, table := range sbtestTables() {
		if n := countRows(t, admin, table); n != before[table] {
			t.Errorf("%s: %d rows after the restart, %d before", table, n, before[table])
		}
	}

	runSysbench(t, srv, "oltp_common", "cleanup", sysbenchTables...)
}

// testBulkInsert runs bulk_insert once on fresh tables and checks that they
// hold every row sysbench reported inserting (one row is one "transaction").
func testBulkInsert(t *testing.T, srv *testkit.Server, admin *sql.DB, args ...string) {
	const db = "sbtest_bulk"
	mustExec(t, admin, "CREATE DATABASE "+db)
	defer mustExec(t, admin, "DROP DATABASE "+db)
	args = append([]string{"--mysql-db=" + db}, args...)
	runSysbench(t, srv, "bulk_insert", "prepare", args...)
	res := runSysbench(t, srv, "bulk_insert", "run", args...)
	var rows int64
	for i := 1; i <= sysbenchThreads; i++ {
		rows += countRows(t, admin, fmt.Sprintf("%s.sbtest%d", db, i))
	}
	if rows != res.Transactions {
		t.Errorf("bulk_insert reported %d rows inserted; the tables hold %d", res.Transactions, rows)
	}
	runSysbench(t, srv, "bulk_insert", "cleanup", args...)
}

// runSysbench runs "sysbench script args... command" and logs its figures.
// A failed statement or a lost connection fails the test.
func runSysbench(t *testing.T, srv *testkit.Server, script, command string, args ...string) testkit.SysbenchResult {
	t.Helper()
	cmdline := append(append([]string{script}, args...), command)
	res, err := testkit.Sysbench(t, srv, cmdline...)
	if err != nil {
		t.Fatal(err)
	}
	if command != "run" {
		return res
	}
	t.Logf("%s: %d transactions (%.1f/s), %d queries (%.1f/s), %d ignored errors, %d reconnects",
		strings.Join(cmdline, " "), res.Transactions, res.TPS, res.Queries, res.QPS, res.IgnoredErrors, res.Reconnects)
	if res.Transactions == 0 {
		t.Errorf("no transaction completed:\n%s", res.Output)
	}
	if res.Reconnects > 0 {
		t.Errorf("sysbench lost %d connections:\n%s", res.Reconnects, res.Output)
	}
	return res
}

// sbtestTables names the tables of oltp_common prepare.
func sbtestTables() []string {
	tables := make([]string, 4)
	for i := range tables {
		tables[i] = fmt.Sprintf("sbtest.sbtest%d", i+1)
	}
	return tables
}

// checkTable runs the server's own consistency check of a table. Basalt's
// ADMIN CHECK TABLE fails with an error if a row and its index entries
// disagree. MariaDB's CHECK TABLE answers with rows of (Table, Op,
// Msg_type, Msg_text) that end with "status OK".
func checkTable(t *testing.T, flavor testkit.Flavor, db *sql.DB, table string) {
	t.Helper()
	if flavor != testkit.MariaDB {
		mustExec(t, db, "ADMIN CHECK TABLE "+table)
		return
	}
	rows, err := db.Query("CHECK TABLE " + table)
	if err != nil {
		t.Fatalf("CHECK TABLE %s: %v", table, err)
	}
	defer rows.Close()
	var report []string
	var last [4]string
	for rows.Next() {
		if err := rows.Scan(&last[0], &last[1], &last[2], &last[3]); err != nil {
			t.Fatalf("CHECK TABLE %s: %v", table, err)
		}
		report = append(report, strings.Join(last[:], " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("CHECK TABLE %s: %v", table, err)
	}
	if last[2] != "status" || last[3] != "OK" {
		t.Errorf("CHECK TABLE %s:\n%s", table, strings.Join(report, "\n"))
	}
}

func countRows(t *testing.T, db *sql.DB, table string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatalf("counting %s: %v", table, err)
	}
	return n
}

func mustExec(t *testing.T, db *sql.DB, stmt string) {
	t.Helper()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}
