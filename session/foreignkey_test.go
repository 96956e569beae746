package session_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/bench"
	"github.com/basalt-db/basalt/testkit"
	"github.com/go-sql-driver/mysql"
)

// TestForeignKeyLocks: a child row added by an open pessimistic
// transaction holds its parent row: a DELETE of the parent waits for that
// transaction and, once it commits, fails with 1451; rolled back, the
// DELETE goes through. An optimistic transaction that added a child fails
// its commit when another transaction deleted the parent meanwhile.
func TestForeignKeyLocks(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn := func() *sql.Conn {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := conn(), conn()
	exec := func(c *sql.Conn, q string) error {
		_, err := c.ExecContext(ctx, q)
		return err
	}
	must := func(c *sql.Conn, qs ...string) {
		t.Helper()
		for _, q := range qs {
			if err := exec(c, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	must(a, "CREATE DATABASE fk", "USE fk", "CREATE TABLE p (id INT PRIMARY KEY)",
		"CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id))",
		"INSERT INTO p VALUES (1), (2), (3)")
	must(b, "USE fk")

	// Committed: the waiting DELETE then finds the child.
	must(a, "BEGIN", "INSERT INTO c VALUES (1, 1)")
	done := make(chan error, 1)
	go func() { done <- exec(b, "DELETE FROM p WHERE id = 1") }()
	select {
	case err := <-done:
		t.Fatalf("DELETE of a parent held by an open child insert did not wait: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	must(a, "COMMIT")
	if err := <-done; mysqlErrno(err) != 1451 {
		t.Fatalf("DELETE after the child's commit: got %v, want 1451", err)
	}

	// Rolled back: the DELETE goes through.
	must(a, "BEGIN", "INSERT INTO c VALUES (2, 2)")
	go func() { done <- exec(b, "DELETE FROM p WHERE id = 2") }()
	time.Sleep(200 * time.Millisecond)
	must(a, "ROLLBACK")
	if err := <-done; err != nil {
		t.Fatalf("DELETE after the child's rollback: %v", err)
	}

	// An autocommit DELETE (an optimistic transaction of its own) meets
	// the open child insert at its commit.
	must(a, "INSERT INTO p VALUES (4)", "BEGIN", "INSERT INTO c VALUES (4, 4)")
	go func() { done <- exec(b, "DELETE FROM p WHERE id = 4") }()
	time.Sleep(200 * time.Millisecond)
	must(a, "COMMIT")
	if err := <-done; mysqlErrno(err) != 1451 {
		t.Fatalf("autocommit DELETE after the child's commit: got %v, want 1451", err)
	}

	// Optimistic: the parent deleted under the child's transaction.
	must(a, "BEGIN OPTIMISTIC", "INSERT INTO c VALUES (3, 3)")
	must(b, "DELETE FROM p WHERE id = 3")
	if err := exec(a, "COMMIT"); err == nil {
		t.Fatal("an optimistic child insert committed after its parent was deleted")
	}
	var n int
	if err := a.QueryRowContext(ctx, "SELECT COUNT(*) FROM c WHERE pid = 3").Scan(&n); err != nil || n != 0 {
		t.Fatalf("orphans: %d, %v", n, err)
	}
}

// TestForeignKeysMatchMariaDB runs testdata/fk_messages.sql on Basalt and
// on a MariaDB started for the test and compares their whole answers:
// the text of each error (not only its code, as the scripts do), SHOW
// CREATE TABLE and information_schema rows. Needs mariadbd (skipped
// without it, and with -short).
func TestForeignKeysMatchMariaDB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MariaDB")
	}
	data, err := os.ReadFile("testdata/fk_messages.sql")
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			stmts = append(stmts, l)
		}
	}
	maria := testkit.StartMariaDB(t)
	a := fkTranscript(t, startBasalt(t), stmts)
	b := fkTranscript(t, maria.DSN(""), stmts)
	for i := range stmts {
		if a[i] != b[i] {
			t.Errorf("%s\n  Basalt:  %s\n  MariaDB: %s", stmts[i], a[i], b[i])
		}
	}
}

// fkTranscript runs stmts in a new database fkmsg on one connection and
// returns each one's answer as text.
func fkTranscript(t *testing.T, dsn string, stmts []string) []string {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{"CREATE DATABASE fkmsg", "USE fkmsg"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(err error) string {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return fmt.Sprintf("error %d: %s", me.Number, me.Message)
		}
		return err.Error()
	}
	var out []string
	for _, q := range stmts {
		if !strings.HasPrefix(q, "SHOW") && !strings.HasPrefix(q, "SELECT") {
			if _, err := c.ExecContext(ctx, q); err != nil {
				out = append(out, answer(err))
			} else {
				out = append(out, "ok")
			}
			continue
		}
		rows, err := c.QueryContext(ctx, q)
		if err != nil {
			out = append(out, answer(err))
			continue
		}
		cols, _ := rows.Columns()
		var text []string
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if v.Valid {
					text = append(text, v.String)
				} else {
					text = append(text, "NULL")
				}
			}
		}
		rows.Close()
		out = append(out, strings.Join(text, " | "))
	}
	return out
}

// TestForeignKeyDumpRestore restores mariadb-dump's output of a MariaDB
// database with foreign keys into Basalt with the mariadb client: the
// dump creates a child before its parent (tables in name order) and
// loads rows in any order under its SET FOREIGN_KEY_CHECKS=0, wraps rows
// in ALTER TABLE ... DISABLE/ENABLE KEYS, and restores the setting at the
// end. The constraints and rows must arrive as MariaDB has them, and be
// enforced afterwards. Needs mariadbd, mariadb-dump and mariadb.
func TestForeignKeyDumpRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MariaDB")
	}
	dump, client := bench.FindProgram("mariadb-dump", "/usr/bin/mariadb-dump"), bench.FindProgram("mariadb", "/usr/bin/mariadb")
	if dump == "" || client == "" {
		t.Skip("mariadb-dump or mariadb is not installed")
	}
	maria := testkit.StartMariaDB(t)
	mdb := maria.OpenDB(t, "")
	for _, q := range []string{
		"CREATE DATABASE fkdump", "USE fkdump",
		"CREATE TABLE z_parent (id INT PRIMARY KEY, code VARCHAR(5), UNIQUE KEY code (code))",
		"CREATE TABLE a_child (id INT PRIMARY KEY, pid INT, code VARCHAR(5), FOREIGN KEY (pid) REFERENCES z_parent (id) ON DELETE CASCADE, CONSTRAINT by_code FOREIGN KEY (code) REFERENCES z_parent (code) ON UPDATE SET NULL)",
		"CREATE TABLE m_tree (id INT PRIMARY KEY, up INT, FOREIGN KEY (up) REFERENCES m_tree (id))",
		"INSERT INTO z_parent VALUES (1, 'one'), (2, 'two')",
		"INSERT INTO a_child VALUES (10, 1, 'two'), (20, 2, NULL)",
		"INSERT INTO m_tree VALUES (5, NULL), (1, 5), (3, 1)",
	} {
		if _, err := mdb.Exec(q); err != nil {
			t.Fatalf("MariaDB: %s: %v", q, err)
		}
	}
	out, err := osexec.Command(dump, "-h", maria.Host(), "-P", strconv.Itoa(maria.Port()), "-uroot",
		"--skip-add-locks", "--databases", "fkdump").Output()
	if err != nil {
		t.Fatalf("mariadb-dump: %v", err)
	}
	_, _, addr := serveBasalt(t)
	host, port, _ := net.SplitHostPort(addr.String())
	load := osexec.Command(client, "-h", host, "-P", port, "-uroot")
	load.Stdin = bytes.NewReader(out)
	if msg, err := load.CombinedOutput(); err != nil {
		t.Fatalf("loading the dump into Basalt: %v\n%s", err, msg)
	}
	bdb, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/fkdump", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	for _, q := range []string{
		"SELECT CONSTRAINT_NAME, TABLE_NAME, REFERENCED_TABLE_NAME, UNIQUE_CONSTRAINT_NAME, UPDATE_RULE, DELETE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = 'fkdump' ORDER BY CONSTRAINT_NAME",
		"SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = 'fkdump' ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION",
		"SELECT id, pid, code FROM fkdump.a_child ORDER BY id",
		"SELECT id, up FROM fkdump.m_tree ORDER BY id",
		"SELECT @@foreign_key_checks",
	} {
		if a, b := queryText(t, bdb, q), queryText(t, mdb, q); a != b {
			t.Errorf("%s\n  Basalt:  %s\n  MariaDB: %s", q, a, b)
		}
	}
	if _, err := bdb.Exec("INSERT INTO fkdump.a_child VALUES (30, 9, NULL)"); mysqlErrno(err) != 1452 {
		t.Errorf("a child without parent after the restore: got %v, want 1452", err)
	}
	if _, err := bdb.Exec("DELETE FROM fkdump.z_parent WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if got := queryText(t, bdb, "SELECT COUNT(*) FROM fkdump.a_child"); got != "1" {
		t.Errorf("ON DELETE CASCADE after the restore left %s rows, want 1", got)
	}
}

// queryText runs q and returns its rows as text.
func queryText(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		return "error: " + err.Error()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var text []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if v.Valid {
				text = append(text, v.String)
			} else {
				text = append(text, "NULL")
			}
		}
	}
	return strings.Join(text, " | ")
}
