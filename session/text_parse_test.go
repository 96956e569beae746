package session_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/store/local"
)

// TestTextInsertTemplate: text INSERTs that differ only in their literals
// are parsed once and each writes its own values; a statement of the same
// shape in another database, or under a sql mode that parses it
// differently, is parsed again.
func TestTextInsertTemplate(t *testing.T) {
	drv, conn := serveTextConn(t)
	connExec(t, conn, "CREATE DATABASE d1", "CREATE DATABASE d2",
		"CREATE TABLE d1.t (id INT PRIMARY KEY, c VARCHAR(20), k INT)", "CREATE TABLE d2.t (id INT PRIMARY KEY, c VARCHAR(20), k INT)",
		"USE d1")
	before, plans := drv.TextParseHits(), drv.TextPlanHits()
	for i := 1; i <= 20; i++ {
		connExec(t, conn, fmt.Sprintf("INSERT INTO t (id, c, k) VALUES (%d, 'v-%d', %d)", i, i, 1000+i))
	}
	connExec(t, conn, "INSERT INTO t (id, c, k) VALUES (21, 'it''s', 1021)")
	if got := drv.TextParseHits() - before; got != 20 {
		t.Errorf("%d of 21 INSERTs of one shape taken from the template, want 20", got)
	}
	// The first is planned, the others run its plan (testdata/text_plan.test
	// checks that they answer as if planned).
	if got := drv.TextPlanHits() - plans; got != 20 {
		t.Errorf("%d of 21 INSERTs of one shape ran the template's plan, want 20", got)
	}
	query := func(q, want string) {
		t.Helper()
		var got string
		if err := conn.QueryRowContext(context.Background(), q).Scan(&got); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", q, got, want)
		}
	}
	query("SELECT CONCAT(COUNT(*), ' ', SUM(id), ' ', SUM(k), ' ', SUM(c = CONCAT('v-', id))) FROM d1.t", "21 231 21231 20")
	query("SELECT c FROM d1.t WHERE id = 21", "it's")

	// The same text in another database writes there.
	plans = drv.TextPlanHits()
	connExec(t, conn, "USE d2", "INSERT INTO t (id, c, k) VALUES (1, 'w', 5)", "INSERT INTO t (id, c, k) VALUES (2, 'x', 6)")
	if got := drv.TextPlanHits() - plans; got != 1 {
		t.Errorf("%d of 2 INSERTs in another database ran the template's plan, want 1 (the second)", got)
	}
	query("SELECT CONCAT(COUNT(*), ' ', SUM(k)) FROM d2.t", "2 11")
	query("SELECT COUNT(*) FROM d1.t", "21")

	// || is OR, then CONCAT under PIPES_AS_CONCAT.
	connExec(t, conn, "INSERT INTO t (id, c, k) VALUES (3, '1' || '0', 7)", "INSERT INTO t (id, c, k) VALUES (4, '0' || '5', 8)",
		"SET sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')",
		"INSERT INTO t (id, c, k) VALUES (5, '1' || '0', 9)", "INSERT INTO t (id, c, k) VALUES (6, '0' || '5', 10)")
	query("SELECT GROUP_CONCAT(c ORDER BY id) FROM d2.t WHERE id >= 3", "1,1,10,05")
}

// TestTextTemplateNotFromAnotherQuery: a query that fails to parse
// leaves its shape looked up and no template; the next query, which
// mentions "trigger" and so takes no template, must not become the
// failed query's template (its literals sit where the failed query's
// did), or a later query of the failed one's shape would run it.
func TestTextTemplateNotFromAnotherQuery(t *testing.T) {
	_, conn := serveTextConn(t)
	connExec(t, conn, "CREATE DATABASE d", "USE d", "CREATE TABLE t (id INT PRIMARY KEY, c VARCHAR(20))")
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (1, 'x') ,,"); err == nil {
		t.Fatal("a syntax error ran")
	}
	connExec(t, conn, "INSERT INTO t VALUES (1, 'x') /* trigger */ ON DUPLICATE KEY UPDATE c = c")
	if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (2, 'y') ,,"); err == nil {
		t.Fatal("INSERT INTO t VALUES (2, 'y') ,, ran, as the query before it")
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows (%v), want 1", n, err)
	}
}

// serveTextConn serves a new embedded store and returns the driver and a
// connection to it, closed when the test ends.
func serveTextConn(t *testing.T) (*session.Driver, *sql.Conn) {
	t.Helper()
	st, err := local.Open(filepath.Join(t.TempDir(), "data"), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	drv, _, addr, stop := serveOn(t, st, session.Config{PessimisticByDefault: true, PlanCacheCapacity: 100, LockWaitTimeout: time.Second})
	t.Cleanup(stop)
	return drv, connTo(t, fmt.Sprintf("root@tcp(%s)/", addr))
}
