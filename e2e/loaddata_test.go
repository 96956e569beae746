package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestLoadDataClients loads the same files into Basalt and into MariaDB
// with the real clients, LOAD DATA LOCAL INFILE through the mariadb CLI
// (--local-infile=1) and mariadb-import --local, and checks that both
// servers print the same "Records: N  Deleted: N  Skipped: N  Warnings: N"
// and hold the same rows afterwards. The files mix escapes, NULLs, quoted
// separators, non-ASCII text, a duplicate key, a short line and a bad
// number, so that the warnings count too. It also checks that a client
// started with --local-infile=0 gets MySQL's 3948 from Basalt.
func TestLoadDataClients(t *testing.T) {
	client, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("the mariadb client is not installed")
	}
	importer, err := exec.LookPath("mariadb-import")
	if err != nil {
		t.Skip("mariadb-import is not installed")
	}
	dir := t.TempDir()
	tsv := filepath.Join(dir, "tsv.txt")
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		switch {
		case i == 100:
			b.WriteString("50\tduplicate\t1\n")
		case i == 200:
			b.WriteString("200\tshort\n")
		case i == 300:
			b.WriteString("300\tbad number\tx12\n")
		case i%7 == 0:
			fmt.Fprintf(&b, "%d\t\\N\t%d\n", i, i)
		default:
			fmt.Fprintf(&b, "%d\ttab\\there, newline\\nthere, é ü %d\t%d\n", i, i, i*3)
		}
	}
	if err := os.WriteFile(tsv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// mariadb-import names the table after the file.
	csv := filepath.Join(dir, "imp.csv")
	b.Reset()
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&b, "%d,\"a, \"\"quoted\"\" %d\",%d\n", i, i, i%10)
	}
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	type outcome struct {
		info []string
		rows string
	}
	var outs []outcome
	for _, srv := range []*testkit.Server{testkit.StartBasalt(t, testkit.BasaltOptions{}), testkit.StartMariaDB(t)} {
		db := srv.OpenDB(t, "")
		for _, q := range []string{
			"CREATE DATABASE ld",
			"CREATE TABLE ld.t (id INT PRIMARY KEY, c VARCHAR(64), k INT NOT NULL)",
			"CREATE TABLE ld.imp (id INT PRIMARY KEY, s VARCHAR(40), k INT)",
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %s: %v", srv.Flavor(), q, err)
			}
		}
		conn := []string{"--no-defaults", "--protocol=TCP", "--skip-ssl", "-h", srv.Host(), "-P", strconv.Itoa(srv.Port()), "-u", "root"}
		var o outcome
		out := runClient(t, time.Minute, client, append(conn, "--local-infile=1", "-vvv", "ld", "-e",
			fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE t", tsv))...)
		o.info = append(o.info, infoLine(t, out))
		out = runClient(t, time.Minute, importer, append(conn, "--local", "--fields-terminated-by=,",
			"--fields-optionally-enclosed-by=\"", "ld", csv)...)
		o.info = append(o.info, infoLine(t, out))
		o.rows = dumpRows(t, db, "SELECT id, c, k FROM ld.t ORDER BY id") + dumpRows(t, db, "SELECT id, s, k FROM ld.imp ORDER BY id")

		if srv.Flavor() == testkit.Basalt {
			cmd := exec.Command(client, append(conn, "--local-infile=0", "ld", "-e",
				fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE t", tsv))...)
			msg, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(msg), "ERROR 3948") {
				t.Errorf("--local-infile=0: %v\n%s", err, msg)
			}
		}
		outs = append(outs, o)
		db.Close()
		srv.Stop()
	}
	t.Logf("Basalt: %q, MariaDB: %q, %d bytes of rows", outs[0].info, outs[1].info, len(outs[0].rows))
	for i := range outs[0].info {
		if outs[0].info[i] != outs[1].info[i] {
			t.Errorf("load %d: Basalt printed %q, MariaDB %q", i+1, outs[0].info[i], outs[1].info[i])
		}
	}
	if !strings.Contains(outs[1].info[0], "Skipped: 1") || !strings.Contains(outs[1].info[1], "Records: 2000") {
		t.Errorf("the files did not load as meant: %q", outs[1].info)
	}
	if outs[0].rows != outs[1].rows {
		t.Errorf("the loaded rows differ:\n%s", firstDiff(outs[0].rows, outs[1].rows))
	}
}

// runClient runs a client program for at most timeout and returns its
// standard output; the test fails if it fails or writes to stderr.
func runClient(t *testing.T, timeout time.Duration, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("%s %s: %v\n%s%s", prog, strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String()
}

var loadInfo = regexp.MustCompile(`Records: \d+  Deleted: \d+  Skipped: \d+  Warnings: \d+`)

func infoLine(t *testing.T, out string) string {
	t.Helper()
	m := loadInfo.FindString(out)
	if m == "" {
		t.Fatalf("no Records line in:\n%s", out)
	}
	return m
}

// dumpRows renders a query's rows, one line each, NULL as \N.
func dumpRows(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var b strings.Builder
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteByte('|')
			}
			if v == nil {
				b.WriteString(`\N`)
			} else {
				b.Write(v)
			}
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d: Basalt %q, MariaDB %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("Basalt %d lines, MariaDB %d", len(al), len(bl))
}
