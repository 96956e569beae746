package session_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/pingcap/tidb/pkg/parser"
)

// showBindings reads SHOW <scope> BINDINGS on conn: each row's columns by
// name.
func showBindings(t *testing.T, conn *sql.Conn, scope string) []map[string]string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "SHOW "+scope+" BINDINGS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	want := "Original_sql Bind_sql Default_db Status Create_time Update_time Charset Collation Source Sql_digest Plan_digest"
	if got := strings.Join(cols, " "); got != want {
		t.Fatalf("SHOW BINDINGS columns: %s, want TiDB's %s", got, want)
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]string, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i, c := range cols {
			m[c] = vals[i]
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShowBindings: SHOW BINDINGS in TiDB's columns, by scope, its digest
// the statement's, and DROP BINDING FOR SQL DIGEST with it.
func TestShowBindings(t *testing.T) {
	conn := startConn(t)
	ctx := context.Background()
	for _, q := range []string{
		"CREATE DATABASE sb", "USE sb",
		"CREATE TABLE t (id INT PRIMARY KEY, a INT, KEY ka (a))",
		"CREATE BINDING FOR SELECT * FROM t WHERE a = 1 USING SELECT * FROM t IGNORE INDEX (ka) WHERE a = 1",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if g := showBindings(t, conn, "GLOBAL"); len(g) != 0 {
		t.Fatalf("SHOW GLOBAL BINDINGS lists a session binding: %v", g)
	}
	list := showBindings(t, conn, "")
	if len(list) != 1 {
		t.Fatalf("SHOW BINDINGS: %d rows, want 1: %v", len(list), list)
	}
	b := list[0]
	for col, want := range map[string]string{
		"Original_sql": "select * from `sb` . `t` where `a` = ?",
		"Bind_sql":     "SELECT * FROM `sb`.`t` IGNORE INDEX (`ka`) WHERE `a` = 1",
		"Default_db":   "sb", "Status": "enabled", "Source": "manual", "Plan_digest": "",
	} {
		if b[col] != want {
			t.Errorf("%s = %q, want %q", col, b[col], want)
		}
	}
	for _, col := range []string{"Create_time", "Update_time"} {
		ts, err := time.ParseInLocation("2006-01-02 15:04:05.000000", b[col], time.Local)
		if err != nil || time.Since(ts) > time.Minute || time.Since(ts) < 0 {
			t.Errorf("%s = %q: not the time the binding was made", col, b[col])
		}
	}
	// The digest is that of the normalized text (the parser's, as TiDB's).
	digest := b["Sql_digest"]
	if _, d := parser.NormalizeDigestForBinding(b["Original_sql"]); d.String() != digest {
		t.Fatalf("Sql_digest %q is not the digest of Original_sql (%s)", digest, d)
	}
	if _, err := conn.ExecContext(ctx, "DROP SESSION BINDING FOR SQL DIGEST '"+digest+"'"); err != nil {
		t.Fatal(err)
	}
	if l := showBindings(t, conn, "SESSION"); len(l) != 0 {
		t.Fatalf("the binding is still there after DROP BINDING FOR SQL DIGEST: %v", l)
	}
}

// TestBindingPrepared: a prepared statement (binary protocol, plan cache
// on) uses a binding made after it was prepared and executed, and stops
// using it once it is dropped.
func TestBindingPrepared(t *testing.T) {
	conn := startConn(t)
	ctx := context.Background()
	for _, q := range []string{
		"CREATE DATABASE bp", "USE bp",
		"CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, KEY ka (a), KEY kb (b))",
		"INSERT INTO t VALUES (1, 1, 1), (2, 1, 2), (3, 2, 1)",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st, err := conn.PrepareContext(ctx, "SELECT id FROM t WHERE a = ? AND b = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fromBinding := func() int {
		var id, used int
		if err := st.QueryRowContext(ctx, 1, 2).Scan(&id); err != nil || id != 2 {
			t.Fatalf("the prepared statement returned %d, %v; want row 2", id, err)
		}
		if err := conn.QueryRowContext(ctx, "SELECT @@last_plan_from_binding").Scan(&used); err != nil {
			t.Fatal(err)
		}
		return used
	}
	if fromBinding() != 0 || fromBinding() != 0 {
		t.Fatal("@@last_plan_from_binding is 1 before any binding exists")
	}
	if _, err := conn.ExecContext(ctx, "CREATE GLOBAL BINDING FOR SELECT id FROM t WHERE a = 1 AND b = 1 USING SELECT id FROM t FORCE INDEX (kb) WHERE a = 1 AND b = 1"); err != nil {
		t.Fatal(err)
	}
	if fromBinding() != 1 || fromBinding() != 1 {
		t.Fatal("the prepared statement does not use the binding made after its plan was cached")
	}
	if _, err := conn.ExecContext(ctx, "DROP GLOBAL BINDING FOR SELECT id FROM t WHERE a = 1 AND b = 1"); err != nil {
		t.Fatal(err)
	}
	if fromBinding() != 0 {
		t.Fatal("the prepared statement still uses the dropped binding")
	}
}
