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

	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/store/tikv"
)

// TestImportInto imports a CSV of several thousand rows into a table with
// a secondary and a unique index through go-sql-driver/mysql, then checks
// TiDB's result row, ADMIN CHECK TABLE, counts and sums by the table and
// by each index, a read at a snapshot taken before the import (empty),
// and that later INSERT and UPDATE work; then that a duplicate key in the
// input leaves the next table empty.
func TestImportInto(t *testing.T) {
	const n = 5000
	dir := t.TempDir()
	var b strings.Builder
	var sumK int64
	for i := 1; i <= n; i++ {
		k := (i * 7919) % 1000
		sumK += int64(k)
		fmt.Fprintf(&b, "%d,%d,\"c-%d\",\"pad, %d\"\n", i, k, i, i)
	}
	file := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dsn := startBasalt(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	one := func(q string, dest ...any) {
		t.Helper()
		if err := conn.QueryRowContext(ctx, q).Scan(dest...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE imp")
	exec("USE imp")
	exec("CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(20) NOT NULL, pad VARCHAR(30), UNIQUE KEY uc (c), KEY kk (k))")
	var before uint64
	exec("BEGIN")
	one("SELECT @@tidb_current_ts", &before)
	exec("COMMIT")

	// What the import collects is in its sorter, bounded apart: it does
	// not count against the statement's memory quota as a transaction's
	// write buffer does.
	exec("SET tidb_mem_quota_query = 262144")
	rows, err := conn.QueryContext(ctx, fmt.Sprintf("IMPORT INTO t FROM '%s'", file))
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	want := "Job_ID Data_Source Target_Table Table_ID Phase Status Source_File_Size Imported_Rows Result_Message Create_Time Start_Time End_Time Created_By"
	if strings.Join(cols, " ") != want {
		t.Fatalf("columns %v, want TiDB's %s", cols, want)
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		t.Fatalf("no result row: %v", rows.Err())
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	if string(vals[1]) != file || string(vals[2]) != "`imp`.`t`" || string(vals[5]) != "finished" || string(vals[7]) != fmt.Sprint(n) {
		t.Fatalf("result row: source %s, table %s, status %s, rows %s", vals[1], vals[2], vals[5], vals[7])
	}
	// The file's size as TiDB shows it (units.BytesSize): 4 significant
	// digits, binary units.
	if st, err := os.Stat(file); err != nil || string(vals[6]) != fmt.Sprintf("%.4gKiB", float64(st.Size())/1024) {
		t.Fatalf("Source_File_Size %s for a file of %v bytes", vals[6], st.Size())
	}
	rows.Close()
	exec("SET tidb_mem_quota_query = DEFAULT")

	exec("ADMIN CHECK TABLE t")
	var count, sum, sumIdx int64
	one("SELECT COUNT(*), SUM(k) FROM t", &count, &sum)
	if count != n || sum != sumK {
		t.Fatalf("count %d, sum(k) %d; want %d, %d", count, sum, n, sumK)
	}
	one("SELECT COUNT(*), SUM(k) FROM t FORCE INDEX (kk) WHERE k >= 0", &count, &sumIdx)
	if count != n || sumIdx != sumK {
		t.Fatalf("by index kk: count %d, sum %d", count, sumIdx)
	}
	var id int
	one("SELECT id FROM t WHERE c = 'c-4321'", &id)
	if id != 4321 {
		t.Fatalf("by unique index: id %d", id)
	}
	var pad string
	one("SELECT pad FROM t WHERE id = 777", &pad)
	if pad != "pad, 777" {
		t.Fatalf("pad of 777: %q", pad)
	}

	// The import committed after `before`: a snapshot there is empty.
	exec(fmt.Sprintf("SET tidb_snapshot = '%d'", before))
	one("SELECT COUNT(*) FROM t", &count)
	if count != 0 {
		t.Fatalf("a snapshot before the import sees %d rows", count)
	}
	exec("SET tidb_snapshot = ''")

	exec("INSERT INTO t VALUES (0, 5, 'c-0', 'new')")
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO t VALUES (%d, 5, 'c-17', 'dup')", n+1)); err == nil || !strings.Contains(err.Error(), "1062") {
		t.Fatalf("a duplicate of an imported unique value: %v, want 1062", err)
	}
	exec("UPDATE t SET k = k + 1000, c = 'moved' WHERE id = 10")
	exec("DELETE FROM t WHERE id = 11")
	exec("ADMIN CHECK TABLE t")
	one("SELECT COUNT(*) FROM t WHERE k >= 1000", &count)
	if count != 1 {
		t.Fatalf("rows with k >= 1000 after the update: %d", count)
	}
	one("SELECT COUNT(*) FROM t", &count)
	if count != n {
		t.Fatalf("rows after an insert and a delete: %d, want %d", count, n)
	}

	// A duplicate in the unique index, far apart in the file: nothing.
	b.WriteString(fmt.Sprintf("%d,1,\"c-2500\",\"x\"\n", n+1))
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	exec("CREATE TABLE d (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(20) NOT NULL, pad VARCHAR(30), UNIQUE KEY uc (c), KEY kk (k))")
	_, err = conn.ExecContext(ctx, fmt.Sprintf("IMPORT INTO d FROM '%s'", file))
	if err == nil || !strings.Contains(err.Error(), "8167") || !strings.Contains(strings.ToLower(err.Error()), "c-2500") {
		t.Fatalf("import of a duplicate: %v, want 8167 naming the entry", err)
	}
	one("SELECT COUNT(*) FROM d", &count)
	if count != 0 {
		t.Fatalf("%d rows after a failed import", count)
	}
	exec("ADMIN CHECK TABLE d")

	// Without LINES_TERMINATED_BY, "\r\n" and "\r" end lines too, as in
	// TiDB; with it, "\r" is data.
	crlf := filepath.Join(dir, "crlf.csv")
	if err := os.WriteFile(crlf, []byte("1,a\r\n2,\"b\"\r\n3,c\r4,d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exec("CREATE TABLE w (id INT PRIMARY KEY, c VARCHAR(5))")
	exec(fmt.Sprintf("IMPORT INTO w FROM '%s'", crlf))
	var cs string
	one("SELECT GROUP_CONCAT(CONCAT(id, c, LENGTH(c)) ORDER BY id) FROM w", &cs)
	if cs != "1a1,2b1,3c1,4d1" {
		t.Fatalf("rows of a CRLF file: %q", cs)
	}
	crlf1 := filepath.Join(dir, "crlf1.csv")
	if err := os.WriteFile(crlf1, []byte("1,a\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exec("CREATE TABLE w2 (id INT PRIMARY KEY, c VARBINARY(5))")
	exec(fmt.Sprintf("IMPORT INTO w2 FROM '%s' WITH lines_terminated_by = '\\n'", crlf1))
	one("SELECT HEX(c) FROM w2", &cs)
	if cs != "610D" {
		t.Fatalf("c of 'a\\r\\n' with lines terminated by '\\n': %q, want 610D", cs)
	}

	// Privileges, as TiDB's: FILE, and SELECT, INSERT, UPDATE, DELETE and
	// ALTER on the table.
	exec("CREATE TABLE p (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(20) NOT NULL, pad VARCHAR(30))")
	exec("CREATE USER imp")
	exec("GRANT SELECT, INSERT, UPDATE, DELETE, ALTER ON imp.* TO imp")
	udb, err := sql.Open("mysql", strings.Replace(dsn, "root@", "imp@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer udb.Close()
	imp := fmt.Sprintf("IMPORT INTO imp.p FROM '%s'", file)
	if _, err := udb.Exec(imp); err == nil || !strings.Contains(err.Error(), "1045") {
		t.Fatalf("IMPORT INTO without FILE: %v, want 1045", err)
	}
	exec("GRANT FILE ON *.* TO imp")
	exec("REVOKE ALTER ON imp.* FROM imp")
	if _, err := udb.Exec(imp); err == nil || !strings.Contains(err.Error(), "1142") {
		t.Fatalf("IMPORT INTO without ALTER: %v, want 1142", err)
	}
	exec("GRANT ALTER ON imp.* TO imp")
	if _, err := udb.Exec(imp); err != nil {
		t.Fatalf("IMPORT INTO with FILE and the table's privileges: %v", err)
	}
	one("SELECT COUNT(*) FROM p", &count)
	if count != n+1 {
		t.Fatalf("%d rows imported by imp, want %d", count, n+1)
	}
}

// TestImportIntoOnCluster: on the cluster's store IMPORT INTO is refused
// with 1235, touching nothing.
func TestImportIntoOnCluster(t *testing.T) {
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	st, err := tikv.OpenMock()
	if err != nil {
		t.Fatal(err)
	}
	_, _, addr, stop := serveOn(t, st, session.Config{PessimisticByDefault: true, LockWaitTimeout: time.Second})
	t.Cleanup(stop)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/test", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	file := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(file, []byte("1\n"), 0o644)
	if _, err := db.Exec("CREATE TABLE t (a INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(fmt.Sprintf("IMPORT INTO t FROM '%s'", file))
	if err == nil || !strings.Contains(err.Error(), "1235") {
		t.Fatalf("IMPORT INTO on a cluster: %v, want 1235", err)
	}
}
