package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// dumpSchema is the database TestDump dumps: every kind of column a dump
// writes differently (escapes, binary bytes, fractions, zones, JSON,
// ENUM/SET, NULLs), an AUTO_INCREMENT table with a secondary index, a
// trigger (which filled audit) and a view.
var dumpSchema = []string{
	"CREATE TABLE kinds (id INT PRIMARY KEY AUTO_INCREMENT, i BIGINT, u BIGINT UNSIGNED, d DECIMAL(12,3), f DOUBLE," +
		" s VARCHAR(40) NOT NULL DEFAULT '', t TEXT, b VARBINARY(16), bl BLOB, dt DATETIME(3), da DATE, tm TIME," +
		" ts TIMESTAMP NULL, y YEAR, e ENUM('red','green'), st SET('x','y','z'), j JSON, KEY k_s (s))",
	"CREATE TABLE audit (id INT, msg VARCHAR(80))",
	"CREATE TRIGGER kinds_ai AFTER INSERT ON kinds FOR EACH ROW INSERT INTO audit VALUES (NEW.id, CONCAT('added ', NEW.s))",
	`INSERT INTO kinds (i, u, d, f, s, t, b, bl, dt, da, tm, ts, y, e, st, j) VALUES
		(-9223372036854775808, 18446744073709551615, -123456789.125, 1.5e300, 'it''s', 'tab	and
newline', x'00ff27', x'5c30', '2024-02-29 10:11:12.345', '1000-01-01', '-838:59:59', '2038-01-19 03:14:07', 1901, 'green', 'x,z', '{"a": [1, "two", null]}'),
		(0, 0, 0, 0, 'back\\slash "dq"', '', '', '', '1970-01-01 00:00:01', '9999-12-31', '00:00:00', '1970-01-01 00:00:01', 2155, 'red', '', '[]'),
		(NULL, NULL, NULL, NULL, 'ünïcødé ✓ 😀', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	"CREATE TABLE wide (k VARCHAR(20) NOT NULL, n INT NOT NULL, v VARCHAR(100), PRIMARY KEY (k, n))",
	"CREATE VIEW named AS SELECT id, s, e FROM kinds WHERE id < 3",
}

// TestDump dumps a Basalt database with the real mariadb-dump, with its
// default options and with --single-transaction, loads the dump with the
// mariadb client into a fresh Basalt and into MariaDB, and compares every
// row of every table and view with the original; then loads MariaDB's own
// dump of its copy into Basalt and compares again. It skips when the
// MariaDB tools or server are not installed.
func TestDump(t *testing.T) {
	dump, err1 := exec.LookPath("mariadb-dump")
	client, err2 := exec.LookPath("mariadb")
	if err1 != nil || err2 != nil {
		t.Skip("mariadb-dump and mariadb are not installed (apt-get install mariadb-client)")
	}
	src := testkit.StartBasalt(t, testkit.BasaltOptions{})
	admin := src.OpenDB(t, "")
	mustExec(t, admin, "CREATE DATABASE dumped")
	db := src.OpenDB(t, "dumped")
	mustExecAll(t, db, dumpSchema...)
	for i := 0; i < 300; i += 100 {
		var vals []string
		for n := i; n < i+100; n++ {
			vals = append(vals, fmt.Sprintf("('key%d', %d, REPEAT('v', %d))", n%7, n, n%100))
		}
		mustExec(t, db, "INSERT INTO wide VALUES "+strings.Join(vals, ","))
	}
	want := readAll(t, db)
	sums := checksums(t, db)
	if sums["dumped.kinds"] == "0" || sums["dumped.wide"] == "0" || sums["dumped.gone"] != "NULL" {
		t.Fatalf("CHECKSUM TABLE on the source: %v", sums)
	}
	if len(want["kinds"]) != 3 || len(want["wide"]) != 300 || len(want["named"]) != 2 || len(want["audit"]) != 3 {
		t.Fatalf("the source has %d, %d, %d and %d rows", len(want["kinds"]), len(want["wide"]), len(want["named"]), len(want["audit"]))
	}

	dir := t.TempDir()
	runDump := func(srv *testkit.Server, name string, args ...string) (string, error) {
		path := filepath.Join(dir, name)
		out, err := runTool(dump, srv, append(args, "--databases", "dumped")...)
		if err == nil {
			err = os.WriteFile(path, out, 0o600)
		}
		return path, err
	}
	plain, err := runDump(src, "plain.sql")
	if err != nil {
		t.Fatalf("mariadb-dump: %v", err)
	}
	single, err := runDump(src, "single.sql", "--single-transaction")
	if err != nil {
		// SAVEPOINT, which --single-transaction sends, comes with another
		// change; until then this part has nothing to check.
		if !strings.Contains(err.Error(), "SAVEPOINT") {
			t.Fatalf("mariadb-dump --single-transaction: %v", err)
		}
		t.Logf("mariadb-dump --single-transaction: %v", err)
		single = ""
	}

	load := func(srv *testkit.Server, path string) {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if out, err := runToolStdin(client, srv, f); err != nil {
			t.Fatalf("loading %s into %s: %v\n%s", filepath.Base(path), srv.Flavor(), err, out)
		}
	}
	check := func(what string, srv *testkit.Server) {
		t.Helper()
		conn := srv.OpenDB(t, "dumped")
		got := readAll(t, conn)
		defer func() {
			// The trigger came along: a new row is audited.
			mustExec(t, conn, "INSERT INTO kinds (id, s) VALUES (100, 'late')")
			var msg string
			if err := conn.QueryRow("SELECT msg FROM audit WHERE id = 100").Scan(&msg); err != nil || msg != "added late" {
				t.Errorf("%s: the trigger did not fire: %q, %v", what, msg, err)
			}
			mustExec(t, conn, "DELETE FROM kinds WHERE id = 100")
			mustExec(t, conn, "DELETE FROM audit WHERE id = 100")
		}()
		for name, rows := range want {
			if !reflect.DeepEqual(got[name], rows) {
				t.Errorf("%s: %s differs:\n got %q\nwant %q", what, name, got[name], rows)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: tables %v, want %v", what, keys(got), keys(want))
		}
	}

	for _, path := range []string{plain, single} {
		if path == "" {
			continue
		}
		fresh := testkit.StartBasalt(t, testkit.BasaltOptions{})
		load(fresh, path)
		check(filepath.Base(path)+" into Basalt", fresh)
		if got := checksums(t, fresh.OpenDB(t, "dumped")); !reflect.DeepEqual(got, sums) {
			t.Errorf("%s into Basalt: CHECKSUM TABLE %v, want %v", filepath.Base(path), got, sums)
		}
		fresh.Stop()
	}

	maria := testkit.StartMariaDB(t)
	// The view's definer, as Basalt's root is root@%.
	mustExecAll(t, maria.OpenDB(t, ""), "CREATE USER 'root'@'%'", "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION")
	load(maria, plain)
	check("plain.sql into MariaDB", maria)

	back, err := runDump(maria, "mariadb.sql")
	if err != nil {
		t.Fatalf("mariadb-dump of MariaDB: %v", err)
	}
	again := testkit.StartBasalt(t, testkit.BasaltOptions{})
	load(again, back)
	check("MariaDB's dump into Basalt", again)
	if got := checksums(t, again.OpenDB(t, "dumped")); !reflect.DeepEqual(got, sums) {
		t.Errorf("MariaDB's dump into Basalt: CHECKSUM TABLE %v, want %v", got, sums)
	}
}

// checksums is CHECKSUM TABLE of the tables TestDump fills and of a
// missing one (NULL), by table name.
func checksums(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query("CHECKSUM TABLE wide, kinds, gone")
	if err != nil {
		t.Fatalf("CHECKSUM TABLE: %v", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name string
		var sum sql.NullString
		if err := rows.Scan(&name, &sum); err != nil {
			t.Fatal(err)
		}
		out[name] = "NULL"
		if sum.Valid {
			out[name] = sum.String
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runTool runs a MariaDB command-line tool against srv and returns its
// standard output.
func runTool(bin string, srv *testkit.Server, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--no-defaults", "--protocol=TCP", "--skip-ssl",
		"-h", srv.Host(), "-P", strconv.Itoa(srv.Port()), "-u", "root"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%v: %s", err, stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

func runToolStdin(bin string, srv *testkit.Server, in *os.File) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--no-defaults", "--protocol=TCP", "--skip-ssl",
		"-h", srv.Host(), "-P", strconv.Itoa(srv.Port()), "-u", "root")
	cmd.Stdin = in
	return cmd.CombinedOutput()
}

// readAll reads every row of every table and view of db's database, in
// primary key order (views by their first column), as text.
func readAll(t *testing.T, db *sql.DB) map[string][]string {
	t.Helper()
	order := map[string]string{"kinds": "id", "wide": "k, n", "named": "id", "audit": "id"}
	out := map[string][]string{}
	for name, by := range order {
		// JSON columns are compared as text: MariaDB keeps them as
		// LONGTEXT with the text the dump gave.
		rows, err := db.Query("SELECT * FROM " + name + " ORDER BY " + by)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var line []string
			for _, v := range vals {
				if v == nil {
					line = append(line, "NULL")
				} else {
					line = append(line, strconv.Quote(string(v)))
				}
			}
			out[name] = append(out[name], strings.Join(line, " "))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
