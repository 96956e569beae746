package session_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/slowlog"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/store/tikv"
)

// serveObserved serves a fresh Basalt with a slow log in the test's
// directory, and returns one connection to it, its address and the log's
// path.
func serveObserved(t *testing.T) (conn *sql.Conn, addr, logPath string) {
	t.Helper()
	dir := t.TempDir()
	st, err := local.Open(filepath.Join(dir, "data"), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return serveObservedOn(t, st, filepath.Join(dir, "slow.log"))
}

// serveObservedOn is serveObserved on the store st, its slow log in
// logPath.
func serveObservedOn(t *testing.T, st kv.Storage, logPath string) (*sql.Conn, string, string) {
	t.Helper()
	_, _, addr, stop := serveOn(t, st, session.Config{PessimisticByDefault: true,
		PlanCacheCapacity: 100, LockWaitTimeout: time.Second, SlowQueryFile: logPath})
	t.Cleanup(stop)
	conn := connTo(t, fmt.Sprintf("root@tcp(%s)/?multiStatements=true", addr))
	return conn, addr.String(), logPath
}

func connExec(t *testing.T, conn *sql.Conn, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func readSlowLog(t *testing.T, path string) []slowlog.Entry {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	es, err := slowlog.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestSlowLogThreshold: a statement over tidb_slow_log_threshold is in
// the log with its fields, one well under it is not; SLOW_QUERY reads it
// back.
func TestSlowLogThreshold(t *testing.T) {
	conn, _, logPath := serveObserved(t)
	ctx := context.Background()
	connExec(t, conn, "CREATE DATABASE d1", "USE d1", "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')", "SET tidb_slow_log_threshold = 100")
	connExec(t, conn, "SELECT 1", "SELECT SLEEP(0.15), v FROM t WHERE id = 2")
	es := readSlowLog(t, logPath)
	if len(es) != 1 {
		t.Fatalf("%d entries, want the SLEEP only: %+v", len(es), es)
	}
	e := es[0]
	if e.Query != "SELECT SLEEP(0.15), v FROM t WHERE id = 2;" || e.DB != "d1" || e.User != "root" || !e.Succ ||
		e.QueryTime < 150*time.Millisecond || e.ResultRows != 1 || e.Prepared || e.Digest == "" ||
		e.PlanDigest == "" || e.TxnStartTS == 0 || e.ConnID == 0 || e.CompileTime <= 0 ||
		time.Since(e.Time) > time.Minute {
		t.Errorf("entry: %+v", e)
	}
	raw, _ := os.ReadFile(logPath)
	for _, field := range []string{"# Time: ", "# Txn_start_ts: ", "# User@Host: root[root] @ ", "# Conn_ID: ",
		"# Query_time: ", "# Parse_time: ", "# Compile_time: ", "# Process_time: ", "# DB: d1\n",
		"# Is_internal: false\n", "# Digest: ", "# Mem_max: ", "# Prepared: false\n", "# Result_rows: 1\n",
		"# Succ: true\n", "# Plan_digest: ", "\nuse d1;\nSELECT SLEEP(0.15)"} {
		if !strings.Contains(string(raw), field) {
			t.Errorf("the log lacks %q:\n%s", field, raw)
		}
	}
	var n int
	var qt float64
	var user, db, query string
	var succ bool
	err := conn.QueryRowContext(ctx, "SELECT COUNT(*), MAX(Query_time), MAX(User), MAX(DB), MAX(Query), MIN(Succ) FROM information_schema.slow_query").
		Scan(&n, &qt, &user, &db, &query, &succ)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || qt < 0.15 || user != "root" || db != "d1" || query != e.Query || !succ {
		t.Errorf("SLOW_QUERY: %d rows, Query_time %v, User %q, DB %q, Query %q, Succ %v", n, qt, user, db, query, succ)
	}
	// slow_query_log (MySQL's name of tidb_enable_slow_log) off: nothing.
	connExec(t, conn, "SET slow_query_log = OFF", "SELECT SLEEP(0.15)")
	if es := readSlowLog(t, logPath); len(es) != 1 {
		t.Errorf("slow_query_log = OFF still logged: %d entries", len(es))
	}
	// long_query_time is the threshold in seconds.
	var ms int
	connExec(t, conn, "SET long_query_time = 0.5")
	if err := conn.QueryRowContext(ctx, "SELECT @@tidb_slow_log_threshold").Scan(&ms); err != nil || ms != 500 {
		t.Errorf("long_query_time = 0.5 made the threshold %d ms (%v), want 500", ms, err)
	}
}

// TestSlowLogEverything: with a threshold of 0 every statement is
// logged, failures (Succ false), prepared statements with their
// arguments, and result rows counted.
func TestSlowLogEverything(t *testing.T) {
	conn, _, logPath := serveObserved(t)
	ctx := context.Background()
	connExec(t, conn, "SET tidb_slow_log_threshold = 0", "CREATE DATABASE d1", "USE d1",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
		"SELECT * FROM t")
	if _, err := conn.ExecContext(ctx, "SELECT * FROM nosuch"); err == nil {
		t.Fatal("SELECT from a missing table did not fail")
	}
	rows, err := conn.QueryContext(ctx, "SELECT id FROM t WHERE id >= ? AND v <> ?", 2, "x")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	es := readSlowLog(t, logPath)
	want := []struct {
		query string
		rows  int64
		succ  bool
	}{
		{"SET tidb_slow_log_threshold = 0;", 0, true},
		{"CREATE DATABASE d1;", 0, true},
		{"USE d1;", 0, true},
		{"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10));", 0, true},
		{"INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');", 0, true},
		{"SELECT * FROM t;", 3, true},
		{"SELECT * FROM nosuch;", 0, false},
		{`SELECT id FROM t WHERE id >= ? AND v <> ? [arguments: (2, "x")];`, 2, true},
	}
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(es), len(want), es)
	}
	for i, w := range want {
		if e := es[i]; e.Query != w.query || e.ResultRows != w.rows || e.Succ != w.succ {
			t.Errorf("entry %d: %q rows %d succ %v, want %q rows %d succ %v", i, e.Query, e.ResultRows, e.Succ, w.query, w.rows, w.succ)
		}
	}
	if !es[7].Prepared {
		t.Errorf("the prepared statement's entry says Prepared: false")
	}
	// Process_keys: the entries the reads found; none for a statement
	// that reads nothing.
	for i, want := range map[int]int64{0: -1, 5: 3, 7: 2} {
		if es[i].ProcessKeys != want {
			t.Errorf("entry %d (%s): Process_keys %d, want %d", i, es[i].Query, es[i].ProcessKeys, want)
		}
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.slow_query WHERE Succ = 0 AND Query LIKE '%nosuch%'").Scan(&n); err != nil || n != 1 {
		t.Errorf("SLOW_QUERY finds %d failed statements (%v), want 1", n, err)
	}
}

// TestSlowLogRedacts: passwords never reach the log or the summary.
func TestSlowLogRedacts(t *testing.T) {
	conn, _, logPath := serveObserved(t)
	ctx := context.Background()
	connExec(t, conn, "SET tidb_slow_log_threshold = 0",
		"CREATE USER 'u1'@'%' IDENTIFIED BY 'Secret-1'",
		"ALTER USER 'u1'@'%' IDENTIFIED BY 'Secret-2'",
		"SET PASSWORD FOR 'u1'@'%' = 'Secret-3'")
	conn.ExecContext(ctx, "GRANT SELECT ON *.* TO 'u1'@'%' IDENTIFIED BY 'Secret-4'") // MySQL 8 refuses it; logged either way
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "Secret") {
		t.Errorf("a password reached the slow log:\n%s", raw)
	}
	for _, q := range []string{"create user", "alter user", "set password for user", "GRANT SELECT ON *.* TO 'u1'@'%';"} {
		if !strings.Contains(string(raw), q) {
			t.Errorf("the log lacks the redacted %q:\n%s", q, raw)
		}
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.statements_summary WHERE QUERY_SAMPLE_TEXT LIKE '%Secret%' OR DIGEST_TEXT LIKE '%Secret%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d summary rows hold a password (%v)", n, err)
	}
}

// TestStmtSummary: statements add up by digest and schema; prepared
// executions, errors and rows are counted; the window moves to the
// history; tidb_enable_stmt_summary = OFF empties it and stops it.
func TestStmtSummary(t *testing.T) {
	conn, _, _ := serveObserved(t)
	ctx := context.Background()
	connExec(t, conn, "CREATE DATABASE d1", "USE d1", "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	for i := 1; i <= 3; i++ {
		connExec(t, conn, fmt.Sprintf("SELECT * FROM t WHERE id >= %d", i))
	}
	for i := 1; i <= 2; i++ {
		if _, err := conn.ExecContext(ctx, "UPDATE t SET v = ? WHERE id = ?", "z", i); err != nil {
			t.Fatal(err)
		}
	}
	conn.ExecContext(ctx, "INSERT INTO t VALUES (1, 'dup')") // 1062
	type row struct {
		stmtType, digestText, sample string
		count, errors                uint64
		sumLat, maxLat, minLat, p95  uint64
		avgAffected, avgResult       float64
		prepared                     bool
		first, last                  time.Time
	}
	read := func(table, like string) []row {
		t.Helper()
		rs, err := conn.QueryContext(ctx, "SELECT STMT_TYPE, DIGEST_TEXT, QUERY_SAMPLE_TEXT, EXEC_COUNT, SUM_ERRORS, SUM_LATENCY, "+
			"MAX_LATENCY, MIN_LATENCY, P95_LATENCY, AVG_AFFECTED_ROWS, AVG_RESULT_ROWS, PREPARED, FIRST_SEEN, LAST_SEEN "+
			"FROM information_schema."+table+" WHERE SCHEMA_NAME = 'd1' AND DIGEST_TEXT LIKE ? ORDER BY SUMMARY_BEGIN_TIME", like)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var out []row
		for rs.Next() {
			var r row
			var first, last string
			if err := rs.Scan(&r.stmtType, &r.digestText, &r.sample, &r.count, &r.errors, &r.sumLat, &r.maxLat, &r.minLat,
				&r.p95, &r.avgAffected, &r.avgResult, &r.prepared, &first, &last); err != nil {
				t.Fatal(err)
			}
			r.first, _ = time.Parse("2006-01-02 15:04:05.999999", first)
			r.last, _ = time.Parse("2006-01-02 15:04:05.999999", last)
			out = append(out, r)
		}
		return out
	}
	sel := read("statements_summary", "select % from `t` where `id` >= ?")
	if len(sel) != 1 {
		t.Fatalf("%d rows for the SELECT, want 1: %+v", len(sel), sel)
	}
	if s := sel[0]; s.stmtType != "Select" || s.count != 3 || s.errors != 0 || s.avgResult != 2 || // 3, 2, 1 rows
		s.sumLat < s.maxLat || s.maxLat < s.minLat || s.p95 > s.maxLat || s.p95 == 0 ||
		s.sample != "SELECT * FROM t WHERE id >= 3" || s.prepared || s.last.Before(s.first) {
		t.Errorf("SELECT row: %+v", s)
	}
	var avgKeys, maxKeys uint64
	if err := conn.QueryRowContext(ctx, "SELECT AVG_PROCESSED_KEYS, MAX_PROCESSED_KEYS FROM information_schema.statements_summary "+
		"WHERE SCHEMA_NAME = 'd1' AND DIGEST_TEXT LIKE 'select % from `t` where `id` >= ?'").Scan(&avgKeys, &maxKeys); err != nil {
		t.Fatal(err)
	}
	if avgKeys != 2 || maxKeys != 3 { // a range scan of 3, 2 and 1 rows
		t.Errorf("AVG_PROCESSED_KEYS %d, MAX_PROCESSED_KEYS %d, want 2 and 3", avgKeys, maxKeys)
	}
	upd := read("statements_summary", "update %")
	if len(upd) != 1 || upd[0].count != 2 || upd[0].avgAffected != 1 || !upd[0].prepared || upd[0].stmtType != "Update" {
		t.Errorf("UPDATE rows: %+v", upd)
	}
	ins := read("statements_summary", "insert into `t` values ( ... )")
	if len(ins) != 1 || ins[0].count != 2 || ins[0].errors != 1 {
		t.Errorf("INSERT rows (one ok, one duplicate): %+v", ins)
	}

	// A window of 1 s: the next statement after it goes to a new window,
	// and the history holds both.
	connExec(t, conn, "SET GLOBAL tidb_stmt_summary_refresh_interval = 1")
	connExec(t, conn, "SELECT * FROM t WHERE id >= 1")
	time.Sleep(1100 * time.Millisecond)
	connExec(t, conn, "SELECT * FROM t WHERE id >= 2")
	if cur := read("statements_summary", "select % from `t` where `id` >= ?"); len(cur) != 1 || cur[0].count != 1 {
		t.Errorf("after a window: current %+v, want one execution", cur)
	}
	if h := read("statements_summary_history", "select % from `t` where `id` >= ?"); len(h) < 2 {
		t.Errorf("history %+v, want at least the last two windows", h)
	}
	connExec(t, conn, "SET GLOBAL tidb_stmt_summary_history_size = 0")
	if h := read("statements_summary_history", "select % from `t` where `id` >= ?"); len(h) != 1 {
		t.Errorf("history of size 0 holds %d rows, want the current window's only", len(h))
	}

	connExec(t, conn, "SET GLOBAL tidb_enable_stmt_summary = OFF", "SELECT * FROM t WHERE id >= 1")
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.statements_summary_history").Scan(&n); err != nil || n != 0 {
		t.Errorf("with the summary off, %d rows (%v)", n, err)
	}
	if _, err := conn.ExecContext(ctx, "SET tidb_enable_stmt_summary = ON"); err == nil {
		t.Errorf("tidb_enable_stmt_summary took a session value")
	}
}

// TestObservedStatementsPrivate: without PROCESS an account sees only
// its own statements in SLOW_QUERY and the summary; with it, everyone's.
func TestObservedStatementsPrivate(t *testing.T) {
	conn, addr, _ := serveObserved(t)
	ctx := context.Background()
	connExec(t, conn, "SET GLOBAL tidb_slow_log_threshold = 0", "CREATE USER u2 IDENTIFIED BY 'pw2'",
		"CREATE USER u3 IDENTIFIED BY 'pw3'", "GRANT PROCESS ON *.* TO u3", "SELECT 'by root'")
	asUser := func(user, pw string) *sql.Conn {
		t.Helper()
		udb, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", user, pw, addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { udb.Close() })
		c, err := udb.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	u2 := asUser("u2", "pw2")
	connExec(t, u2, "SELECT 'by u2'")
	users := func(c *sql.Conn, q string) map[string]bool {
		t.Helper()
		rs, err := c.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		out := map[string]bool{}
		for rs.Next() {
			var u string
			if err := rs.Scan(&u); err != nil {
				t.Fatal(err)
			}
			out[u] = true
		}
		return out
	}
	for _, q := range []string{"SELECT DISTINCT User FROM information_schema.slow_query",
		"SELECT DISTINCT SAMPLE_USER FROM information_schema.statements_summary"} {
		if got := users(u2, q); len(got) != 1 || !got["u2"] {
			t.Errorf("u2, without PROCESS: %s gives %v, want u2 only", q, got)
		}
		if got := users(asUser("u3", "pw3"), q); !got["u2"] || !got["root"] {
			t.Errorf("u3, with PROCESS: %s gives %v, want root and u2", q, got)
		}
	}
}

// TestObservedOnClientGo: a SQL node on a cluster (client-go's mock)
// logs and sums up its statements as an embedded one does, with the
// cluster's start timestamps.
func TestObservedOnClientGo(t *testing.T) {
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	st, err := tikv.OpenMock()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "slow.log")
	conn, _, _ := serveObservedOn(t, st, logPath)
	ctx := context.Background()
	connExec(t, conn, "SET tidb_slow_log_threshold = 0", "CREATE DATABASE d1", "USE d1",
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1), (2, 2)")
	rows, err := conn.QueryContext(ctx, "SELECT v FROM t WHERE id = ?", 2)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	var ts uint64
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT Txn_start_ts, Result_rows FROM information_schema.slow_query WHERE Query LIKE 'SELECT v FROM t WHERE id = ? [arguments: 2]%'").Scan(&ts, &n); err != nil {
		t.Fatal(err)
	}
	if ts == 0 || n != 1 {
		t.Errorf("the point select's entry: Txn_start_ts %d, Result_rows %d", ts, n)
	}
	var count int
	if err := conn.QueryRowContext(ctx, "SELECT EXEC_COUNT FROM information_schema.statements_summary WHERE SCHEMA_NAME = 'd1' AND STMT_TYPE = 'Insert'").Scan(&count); err != nil || count != 1 {
		t.Errorf("the INSERT's summary: %d executions (%v)", count, err)
	}
}
