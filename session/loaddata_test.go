package session_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basalt-db/basalt/session"
	"github.com/go-sql-driver/mysql"
)

// The clauses and data errors of LOAD DATA are in testdata/loaddata.test,
// compared with MariaDB; these tests cover what a script cannot set up:
// the server's switches, privileges, and inputs too big to write out.

// execAll runs statements on a *sql.DB or *sql.Conn, failing the test at
// the first error.
func execAll(t *testing.T, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func wantCode(t *testing.T, err error, code uint16) {
	t.Helper()
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != code {
		t.Fatalf("got %v, want error %d", err, code)
	}
}

// TestLoadDataLocalInfile: local_infile off refuses LOAD DATA LOCAL with
// MySQL 8's 3948, on it streams the client's data, however long.
func TestLoadDataLocalInfile(t *testing.T) {
	ctx := context.Background()
	conn := startConn(t)
	execAll(t, conn, "CREATE DATABASE ld", "USE ld", "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")

	const rows = 100000
	mysql.RegisterReaderHandler("ldrows", func() io.Reader {
		pr, pw := io.Pipe()
		go func() {
			for i := 1; i <= rows; i++ {
				fmt.Fprintf(pw, "%d\tvalue %d\n", i, i)
			}
			pw.Close()
		}()
		return pr
	})
	defer mysql.DeregisterReaderHandler("ldrows")

	execAll(t, conn, "SET GLOBAL local_infile = 0")
	_, err := conn.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::ldrows' INTO TABLE t")
	wantCode(t, err, 3948)
	execAll(t, conn, "SET GLOBAL local_infile = 1")

	res, err := conn.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::ldrows' INTO TABLE t")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != rows {
		t.Errorf("rows affected %d, want %d", n, rows)
	}
	var n, sum int64
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*), SUM(id) FROM t WHERE v = CONCAT('value ', id)").Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if n != rows || sum != rows*(rows+1)/2 {
		t.Errorf("loaded %d rows (sum %d), want %d", n, sum, rows)
	}

	// A load that fails half way (over its memory quota) leaves nothing,
	// and the client's stream is read to its end: the connection goes on.
	execAll(t, conn, "DELETE FROM t", "SET tidb_mem_quota_query = 1048576")
	_, err = conn.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::ldrows' INTO TABLE t")
	wantCode(t, err, 8175)
	execAll(t, conn, "SET tidb_mem_quota_query = DEFAULT")
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 0 {
		t.Errorf("after a failed load: %d rows, %v; want 0", n, err)
	}
}

// TestLoadDataSecureFilePriv: secure_file_priv confines LOAD DATA INFILE
// to a directory (1290 outside it, symbolic links followed), or forbids
// it (NULL).
func TestLoadDataSecureFilePriv(t *testing.T) {
	ctx := context.Background()
	dir, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{dir, outside} {
		if err := os.WriteFile(filepath.Join(d, "f.tsv"), []byte("1\tx\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "f.tsv"), filepath.Join(dir, "link.tsv")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		priv string
		path string
		code uint16 // 0: loads
	}{
		{dir, filepath.Join(dir, "f.tsv"), 0},
		{dir, filepath.Join(outside, "f.tsv"), 1290},
		{dir, filepath.Join(dir, "..", filepath.Base(outside), "f.tsv"), 1290},
		{dir, filepath.Join(dir, "link.tsv"), 1290},
		{"NULL", filepath.Join(dir, "f.tsv"), 1290},
		{"", filepath.Join(outside, "f.tsv"), 0},
	} {
		_, _, addr, stop := serveStore(t, t.TempDir(), session.Config{SecureFilePriv: c.priv, LockWaitTimeout: time.Second})
		db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/", addr))
		if err != nil {
			t.Fatal(err)
		}
		execAll(t, db, "CREATE DATABASE ld", "CREATE TABLE ld.t (id INT PRIMARY KEY, v VARCHAR(5))")
		_, err = db.ExecContext(ctx, fmt.Sprintf("LOAD DATA INFILE '%s' INTO TABLE ld.t", c.path))
		if c.code == 0 && err != nil {
			t.Errorf("secure_file_priv %q, %s: %v", c.priv, c.path, err)
		}
		if c.code != 0 {
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != c.code {
				t.Errorf("secure_file_priv %q, %s: got %v, want %d", c.priv, c.path, err, c.code)
			}
		}
		var priv sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT @@secure_file_priv").Scan(&priv); err != nil {
			t.Fatal(err)
		}
		if want := c.priv; priv.String != want && !(want == "NULL" && !priv.Valid) {
			t.Errorf("@@secure_file_priv = %v, want %q", priv, want)
		}
		db.Close()
		stop()
	}
}

// TestLoadDataPrivileges: the server's files need FILE (1045 without, as
// MySQL answers), LOCAL only INSERT on the table, REPLACE DELETE too.
func TestLoadDataPrivileges(t *testing.T) {
	ctx := context.Background()
	_, _, addr := serveBasalt(t)
	root, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	path := filepath.Join(t.TempDir(), "f.tsv")
	if err := os.WriteFile(path, []byte("1\tx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	execAll(t, root, "CREATE DATABASE ld", "CREATE TABLE ld.t (id INT PRIMARY KEY, v VARCHAR(5))",
		"CREATE USER u@'%'", "GRANT INSERT ON ld.* TO u@'%'")
	u, err := sql.Open("mysql", fmt.Sprintf("u@tcp(%s)/ld?allowAllFiles=true", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()

	_, err = u.ExecContext(ctx, fmt.Sprintf("LOAD DATA INFILE '%s' INTO TABLE t", path))
	wantCode(t, err, 1045)
	// Not a prepared statement, as in MySQL.
	_, err = u.PrepareContext(ctx, fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE t", path))
	wantCode(t, err, 1295)
	_, err = u.ExecContext(ctx, fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' REPLACE INTO TABLE t", path))
	wantCode(t, err, 1142)
	execAll(t, u, fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE t", path))
	execAll(t, root, "GRANT FILE ON *.* TO u@'%'")
	execAll(t, u, fmt.Sprintf("LOAD DATA INFILE '%s' IGNORE INTO TABLE t", path))
}
