package session_test

import (
	"context"
	"testing"
)

// TestDuplicateKeyMessages checks the 1062 message of an INSERT that hits
// an existing key, for the primary key and a unique index, in autocommit
// mode (where the duplicate is found only at commit and the statement is
// run again to report it) and in explicit transactions of both modes, and
// that nothing of a failed statement remains.
func TestDuplicateKeyMessages(t *testing.T) {
	ctx := context.Background()
	c := startConn(t)
	exec := func(q string) error {
		_, err := c.ExecContext(ctx, q)
		return err
	}
	for _, q := range []string{
		"CREATE DATABASE dk", "USE dk",
		"CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, u VARCHAR(10), v INT, UNIQUE KEY uu (u))",
		"CREATE TABLE c (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
		"INSERT INTO t (id, u, v) VALUES (1, 'one', 1), (2, 'two', 2)",
		"INSERT INTO c VALUES (1, 'x', 1)",
	} {
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cases := []struct{ q, msg string }{
		{"INSERT INTO t (id, u, v) VALUES (1, 'new', 9)", "Duplicate entry '1' for key 't.PRIMARY'"},
		{"INSERT INTO t (u, v) VALUES ('TWO', 9)", "Duplicate entry 'TWO' for key 't.uu'"},
		{"INSERT INTO t (u, v) VALUES ('a', 9), ('b', 9), ('two', 9)", "Duplicate entry 'two' for key 't.uu'"},
		{"INSERT INTO t (u, v) VALUES ('z', 9), ('z', 9)", "Duplicate entry 'z' for key 't.uu'"},
		{"INSERT INTO c VALUES (1, 'x', 9)", "Duplicate entry '1-x' for key 'c.PRIMARY'"},
		{"INSERT INTO t (u, v) SELECT 'one', 9", "Duplicate entry 'one' for key 't.uu'"},
	}
	for _, mode := range []string{"autocommit", "pessimistic", "optimistic"} {
		for _, tc := range cases {
			if mode != "autocommit" {
				if err := exec("SET tidb_txn_mode = '" + mode + "'"); err != nil {
					t.Fatal(err)
				}
				if err := exec("BEGIN"); err != nil {
					t.Fatal(err)
				}
			}
			err := exec(tc.q)
			if mysqlErrno(err) != 1062 || err.Error() != "Error 1062 (23000): "+tc.msg {
				t.Errorf("%s: %s: got %v, want 1062 %q", mode, tc.q, err, tc.msg)
			}
			if mode != "autocommit" {
				if err := exec("COMMIT"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	var n, sum int
	if err := c.QueryRowContext(ctx, "SELECT COUNT(*), SUM(v) FROM t").Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != 2 || sum != 3 {
		t.Fatalf("t has %d rows summing to %d after failed inserts, want 2 and 3", n, sum)
	}
	if err := exec("INSERT INTO t (u, v) VALUES ('three', 3)"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM c").Scan(&n); err != nil || n != 1 {
		t.Fatalf("c has %d rows (%v), want 1", n, err)
	}
}
