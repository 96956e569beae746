package session_test

import (
	"context"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/session"
)

// TestSelectIntoPrepared runs SELECT ... INTO @var as a prepared statement
// (go-sql-driver prepares statements with arguments), and checks that the
// text protocol's cut of the INTO clause leaves a '?' outside it alone.
func TestSelectIntoPrepared(t *testing.T) {
	ctx := context.Background()
	conn := startConn(t)
	for _, q := range []string{
		"CREATE DATABASE si", "USE si",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO t VALUES (1, 'one'), (2, 'two')",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	res, err := conn.ExecContext(ctx, "SELECT id, v INTO @i, @v FROM t WHERE id = ?", 2)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Errorf("rows affected %d, want 1", n)
	}
	var i int
	var v string
	if err := conn.QueryRowContext(ctx, "SELECT @i, @v").Scan(&i, &v); err != nil {
		t.Fatal(err)
	}
	if i != 2 || v != "two" {
		t.Errorf("@i, @v = %d, %q; want 2, two", i, v)
	}
	if _, err := conn.ExecContext(ctx, "SELECT v INTO @v FROM t WHERE id > ?", 0); err == nil {
		t.Error("two rows INTO one variable: no error")
	}
}

func TestCutSelectInto(t *testing.T) {
	for _, c := range []struct {
		sql, cut string
		vars     map[int][]string
		n        int
	}{
		{"SELECT a INTO @x FROM t", "SELECT a   FROM t", map[int][]string{0: {"x"}}, 1},
		{"select a, b from t into @X , @`y z`", "select a, b from t  ", map[int][]string{0: {"x", "y z"}}, 1},
		{"SELECT 'into @x' INTO @a -- INTO @b\n", "SELECT 'into @x'   -- INTO @b\n", map[int][]string{0: {"a"}}, 1},
		{"SELECT 1; SELECT (SELECT 2) INTO @a;", "SELECT 1; SELECT (SELECT 2)  ;", map[int][]string{1: {"a"}}, 2},
		{"INSERT INTO t VALUES (1)", "", nil, 0},
		{"SELECT a INTO @@x FROM t", "", nil, 0},
		{"SELECT a INTO OUTFILE '/tmp/x' FROM t", "", nil, 0},
	} {
		cut, vars, n, ok := session.CutSelectInto(c.sql)
		if !ok {
			if c.vars != nil {
				t.Errorf("%q: not cut", c.sql)
			}
			continue
		}
		if c.vars == nil {
			t.Errorf("%q: cut to %q", c.sql, cut)
			continue
		}
		if cut != c.cut || n != c.n || len(vars) != len(c.vars) {
			t.Errorf("%q: got %q %v (%d statements), want %q %v (%d)", c.sql, cut, vars, n, c.cut, c.vars, c.n)
			continue
		}
		for k, want := range c.vars {
			if got := vars[k]; strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%q: statement %d vars %v, want %v", c.sql, k, got, want)
			}
		}
	}
}
