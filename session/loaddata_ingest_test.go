package session_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/session"
)

// LOAD DATA into an empty table in autocommit goes through the importer
// (loaddata_ingest.go); these tests check that it behaves as the
// transactional path does. testdata/loaddata.test runs both ways: on the
// fast path in TestSQL (its loads into empty tables take it) and through
// transactions here.

// loadSession is a session of its own driver, run in-process so that the
// OK packet's info ("Records: ...") can be seen.
type loadSession struct {
	drv   *session.Driver
	s     *session.Session
	files map[string]string // LOCAL files by name
}

func newLoadSession(t *testing.T, cfg session.Config) *loadSession {
	t.Helper()
	cfg.LockWaitTimeout = time.Second
	drv, _, _, stop := serveStore(t, t.TempDir(), cfg)
	t.Cleanup(stop)
	s, err := drv.OpenSession(context.Background(), session.ConnInfo{ID: 1 << 30, User: "root", Host: "localhost", LocalFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ls := &loadSession{drv: drv, s: s, files: map[string]string{}}
	ls.exec(t, "CREATE DATABASE ld")
	ls.exec(t, "USE ld")
	return ls
}

// run runs one statement and renders what a client sees of it: the
// error, or the OK's affected rows, last insert id and info, or the rows.
func (ls *loadSession) run(q string) string {
	w := &loadCapture{ls: ls}
	if err := ls.s.ExecuteQuery(context.Background(), q, false, w); err != nil {
		var e *errno.Error
		if errors.As(err, &e) {
			return fmt.Sprintf("error %d: %s\n", e.Code, e.Msg)
		}
		return "error: " + err.Error() + "\n"
	}
	return w.out.String()
}

func (ls *loadSession) exec(t *testing.T, q string) {
	t.Helper()
	if out := ls.run(q); strings.HasPrefix(out, "error") {
		t.Fatalf("%s: %s", q, out)
	}
}

// loadCapture is a session.ResultWriter that renders results, and the
// client's side of LOAD DATA LOCAL.
type loadCapture struct {
	ls  *loadSession
	out strings.Builder
}

func (c *loadCapture) WriteResult(r session.Result, _ bool) error {
	if r.Rows == nil {
		fmt.Fprintf(&c.out, "ok: %d affected, id %d, %q\n", r.AffectedRows, r.LastInsertID, r.Info)
		return nil
	}
	defer r.Rows.Close()
	for {
		row, err := r.Rows.Next()
		if err != nil {
			fmt.Fprintf(&c.out, "rows error: %v\n", err)
			return nil
		}
		if row == nil {
			return nil
		}
		for i, d := range row {
			if i > 0 {
				c.out.WriteByte('|')
			}
			c.out.WriteString(d.String())
		}
		c.out.WriteByte('\n')
	}
}

func (c *loadCapture) OpenLocalFile(name string) (io.ReadCloser, error) {
	data, ok := c.ls.files[name]
	if !ok {
		return nil, fmt.Errorf("no local file %q", name)
	}
	return io.NopCloser(strings.NewReader(data)), nil
}

// loadShape is a table to load, and how to make a random line of it.
type loadShape struct {
	create string
	order  string // ORDER BY of its rows
	line   func(r *rand.Rand) []string
}

var loadShapes = []loadShape{
	// An integer primary key (the handle), a unique and a plain index.
	{"CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(4), c INT, UNIQUE KEY ub (b), KEY kc (c))", "a",
		func(r *rand.Rand) []string { return []string{intField(r, 12), strField(r), intField(r, 4)} }},
	// AUTO_INCREMENT (NULL and 0 generate) and two unique keys: a
	// REPLACE may delete two rows.
	{"CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, u INT, v VARCHAR(6) NOT NULL, UNIQUE KEY uu (u), UNIQUE KEY uv (v))", "id",
		func(r *rand.Rand) []string {
			id := intField(r, 30)
			if r.IntN(3) == 0 {
				id = []string{`\N`, "0"}[r.IntN(2)]
			}
			return []string{id, intField(r, 10), strField(r)}
		}},
	// A clustered composite primary key (the common handle).
	{"CREATE TABLE t (a VARCHAR(4), b INT, c INT NOT NULL, PRIMARY KEY (a, b), UNIQUE KEY uc (c), KEY kb (b))", "a, b",
		func(r *rand.Rand) []string { return []string{strField(r), intField(r, 3), intField(r, 15)} }},
	// No primary key: hidden handles.
	{"CREATE TABLE t (a INT, b INT, c VARCHAR(4), UNIQUE KEY ua (a), KEY kb (b))", "a, b, c",
		func(r *rand.Rand) []string { return []string{intField(r, 8), intField(r, 3), strField(r)} }},
}

func intField(r *rand.Rand, n int) string {
	switch r.IntN(25) {
	case 0:
		return `\N`
	case 1:
		return "x" // a bad integer: 1366
	}
	return fmt.Sprint(1 + r.IntN(n))
}

func strField(r *rand.Rand) string {
	switch r.IntN(20) {
	case 0:
		return `\N`
	case 1:
		return "toolong" // 1265 past VARCHAR(4)
	}
	return []string{"a", "b", "c", "dd", "", "e"}[r.IntN(6)]
}

// TestLoadDataIngestMatchesTxn loads the same random inputs (small value
// domains, so duplicates of every key are frequent; bad values, NULLs,
// short and long lines) into empty tables of several shapes, with and
// without IGNORE, REPLACE, LOCAL and strict mode, once on the fast path
// and once through a transaction, and compares all that a client sees:
// the error or the OK (affected rows, last insert id, "Records: ..."),
// SHOW WARNINGS, the rows, and ADMIN CHECK TABLE (the indexes agree with
// the rows). Every load that succeeded must have taken the fast path.
func TestLoadDataIngestMatchesTxn(t *testing.T) {
	fast := newLoadSession(t, session.Config{})
	slow := newLoadSession(t, session.Config{NoLoadDataIngest: true})
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 11))
	trials := 160
	if testing.Short() {
		trials = 40
	}
	succeeded := 0
	for trial := 0; trial < trials; trial++ {
		shape := loadShapes[trial%len(loadShapes)]
		var b strings.Builder
		for n := r.IntN(14); n >= 0; n-- {
			f := shape.line(r)
			switch r.IntN(30) {
			case 0:
				f = f[:len(f)-1] // 1261
			case 1:
				f = append(f, "extra") // 1262
			}
			b.WriteString(strings.Join(f, "\t") + "\n")
		}
		name := fmt.Sprintf("f%d.tsv", trial)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		mode := []string{"STRICT_TRANS_TABLES", ""}[r.IntN(2)]
		dup := []string{"", "IGNORE ", "REPLACE "}[r.IntN(3)]
		load := fmt.Sprintf("LOAD DATA INFILE '%s' %sINTO TABLE t", path, dup)
		if r.IntN(2) == 0 {
			load = fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' %sINTO TABLE t", name, dup)
		}
		var outs [2]string
		for i, ls := range []*loadSession{fast, slow} {
			ls.files[name] = b.String()
			ls.exec(t, "DROP TABLE IF EXISTS t")
			ls.exec(t, shape.create)
			ls.exec(t, fmt.Sprintf("SET sql_mode = '%s'", mode))
			before := ls.drv.LoadIngests()
			out := ls.run(load)
			if i == 0 && !strings.HasPrefix(out, "error") {
				succeeded++
				if ls.drv.LoadIngests() != before+1 {
					t.Errorf("trial %d: %s did not go through the importer", trial, load)
				}
			}
			out += ls.run("SHOW WARNINGS")
			out += "rows:\n" + ls.run("SELECT * FROM t ORDER BY "+shape.order)
			out += ls.run("ADMIN CHECK TABLE t")
			outs[i] = out
		}
		if outs[0] != outs[1] {
			t.Errorf("trial %d: %s (sql_mode '%s'), input:\n%s\nthrough the importer:\n%s\nthrough a transaction:\n%s",
				trial, load, mode, b.String(), outs[0], outs[1])
		}
	}
	if slow.drv.LoadIngests() != 0 {
		t.Errorf("%d loads went through the importer with NoLoadDataIngest", slow.drv.LoadIngests())
	}
	if succeeded < trials/4 {
		t.Errorf("only %d of %d loads succeeded: the inputs test little", succeeded, trials)
	}
	t.Logf("%d trials, %d loads succeeded", trials, succeeded)
}

// TestLoadDataIngestFallback: the loads that must not go through the
// importer do not — into a table with rows, inside a transaction, into a
// table with a trigger — and load as before.
func TestLoadDataIngestFallback(t *testing.T) {
	ls := newLoadSession(t, session.Config{})
	ls.files["a.tsv"] = "1\tone\n2\ttwo\n"
	ls.files["b.tsv"] = "3\tthree\n"
	ls.exec(t, "CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(10))")
	ls.exec(t, "CREATE TABLE audit (n INT)")
	for _, c := range []struct {
		q      string
		ingest bool
	}{
		{"LOAD DATA LOCAL INFILE 'a.tsv' INTO TABLE t", true},
		{"LOAD DATA LOCAL INFILE 'b.tsv' INTO TABLE t", false}, // not empty
		{"DELETE FROM t", false},
		{"BEGIN", false},
		{"LOAD DATA LOCAL INFILE 'a.tsv' INTO TABLE t", false}, // a transaction
		{"COMMIT", false},
		{"DELETE FROM t", false},
		{"CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW INSERT INTO audit VALUES (NEW.a)", false},
		{"LOAD DATA LOCAL INFILE 'a.tsv' INTO TABLE t", false}, // a trigger
		{"DROP TRIGGER tr", false},
		{"DELETE FROM t", false},
		{"LOAD DATA LOCAL INFILE 'b.tsv' INTO TABLE t SET b = (SELECT COUNT(*) FROM audit)", false}, // a subquery
		{"DELETE FROM t", false},
		{"LOAD DATA LOCAL INFILE 'b.tsv' INTO TABLE t", true}, // empty again, its rows deleted
	} {
		before := ls.drv.LoadIngests()
		ls.exec(t, c.q)
		if got := ls.drv.LoadIngests() - before; got != map[bool]int64{false: 0, true: 1}[c.ingest] {
			t.Errorf("%s: %d loads through the importer, want fast path %v", c.q, got, c.ingest)
		}
	}
	if got, want := ls.run("SELECT a, b FROM t"), "3|three\n"; got != want {
		t.Errorf("rows %q, want %q", got, want)
	}
	if got, want := ls.run("SELECT COUNT(*), SUM(n) FROM audit"), "2|3\n"; got != want {
		t.Errorf("the trigger saw %q, want %q", got, want)
	}
}

// TestLoadDataIngestConcurrentWrite: a row written into the table by
// another session while a fast load reads its input leaves the table
// not empty at the load's commit, which then goes through a transaction
// as the load would have: it succeeds if the rows do not conflict, and
// fails with 1062, leaving only the other session's row, if they do.
func TestLoadDataIngestConcurrentWrite(t *testing.T) {
	drv, _, addr := serveBasalt(t)
	s, err := drv.OpenSession(context.Background(), session.ConnInfo{ID: 1 << 30, User: "root", Host: "localhost", LocalFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ls := &loadSession{drv: drv, s: s, files: map[string]string{}}
	ls.exec(t, "CREATE DATABASE ld")
	ls.exec(t, "USE ld")
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/ld", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		other int
		code  uint16 // 0: the load succeeds
		rows  string
	}{
		{100, 0, "1|one\n2|two\n3|three\n100|other\n"},
		{2, errno.ErDupEntry, "2|other\n"},
	} {
		ls.exec(t, "DROP TABLE IF EXISTS t")
		ls.exec(t, "CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(10), KEY kb (b))")
		// The input stops half way until the other session has written.
		pr, pw := io.Pipe()
		go func() {
			fmt.Fprintf(pw, "1\tone\n2\ttwo\n")
			if _, err := db.Exec("INSERT INTO t VALUES (?, 'other')", c.other); err != nil {
				pw.CloseWithError(err)
				return
			}
			fmt.Fprintf(pw, "3\tthree\n")
			pw.Close()
		}()
		err = s.ExecuteQuery(context.Background(), "LOAD DATA LOCAL INFILE 'p.tsv' INTO TABLE t", false, &pipeCapture{r: pr})
		var e *errno.Error
		if c.code == 0 && err != nil || c.code != 0 && (!errors.As(err, &e) || e.Code != c.code) {
			t.Errorf("other row %d: the load ended with %v, want error %d", c.other, err, c.code)
		}
		if got := ls.run("SELECT a, b FROM t ORDER BY a"); got != c.rows {
			t.Errorf("other row %d: rows %q, want %q", c.other, got, c.rows)
		}
		if got := ls.run("ADMIN CHECK TABLE t"); strings.HasPrefix(got, "error") {
			t.Errorf("other row %d: %s", c.other, got)
		}
	}
	if drv.LoadIngests() != 0 {
		t.Errorf("%d loads committed through the importer", drv.LoadIngests())
	}
}

// pipeCapture is a ResultWriter whose LOCAL file is a reader.
type pipeCapture struct {
	r io.Reader
	dropResults
}

func (p *pipeCapture) OpenLocalFile(string) (io.ReadCloser, error) { return io.NopCloser(p.r), nil }

// TestLoadDataScriptThroughTxn runs testdata/loaddata.test with every
// load through a transaction (TestSQL runs it with its loads into empty
// tables through the importer), and checks that the default took the
// fast path.
func TestLoadDataScriptThroughTxn(t *testing.T) {
	for _, noIngest := range []bool{true, false} {
		drv, _, addr, stop := serveStore(t, t.TempDir(), session.Config{PessimisticByDefault: true,
			PlanCacheCapacity: 100, LockWaitTimeout: time.Second, NoLoadDataIngest: noIngest})
		runScripts(t, fmt.Sprintf("root@tcp(%s)/?multiStatements=true&allowAllFiles=true", addr), "basalt",
			[]string{"testdata/loaddata.test"})
		n := drv.LoadIngests()
		stop()
		if noIngest && n != 0 || !noIngest && n < 10 {
			t.Errorf("NoLoadDataIngest %v: %d loads through the importer", noIngest, n)
		}
	}
}
