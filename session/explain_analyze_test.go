package session_test

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// explainRow is one operator of EXPLAIN ANALYZE.
type explainRow struct {
	id, estRows, actRows, task, access, exec, info, mem, disk string
}

func explainAnalyze(t *testing.T, conn *sql.Conn, q string) []explainRow {
	t.Helper()
	rs, err := conn.QueryContext(context.Background(), "EXPLAIN ANALYZE "+q)
	if err != nil {
		t.Fatalf("EXPLAIN ANALYZE %s: %v", q, err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	if want := "id,estRows,actRows,task,access object,execution info,operator info,memory,disk"; strings.Join(cols, ",") != want {
		t.Fatalf("columns %v, want %s", cols, want)
	}
	var out []explainRow
	for rs.Next() {
		var r explainRow
		if err := rs.Scan(&r.id, &r.estRows, &r.actRows, &r.task, &r.access, &r.exec, &r.info, &r.mem, &r.disk); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, conn *sql.Conn, q string) int {
	t.Helper()
	rs, err := conn.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		n++
	}
	return n
}

// operator finds the first operator whose name (indentation aside) is
// name.
func operator(t *testing.T, rows []explainRow, name string) explainRow {
	t.Helper()
	for _, r := range rows {
		if strings.TrimSpace(r.id) == name {
			return r
		}
	}
	t.Fatalf("no %s in %+v", name, rows)
	return explainRow{}
}

var execInfo = regexp.MustCompile(`^time:[0-9.]+(s|ms|µs|ns), loops:([0-9]+)`)

// TestExplainAnalyze: EXPLAIN ANALYZE runs the statement and shows, per
// operator, the rows it really returned: the root's are the query's rows,
// a scan's the table's, a join's its matches, an aggregation's its groups.
func TestExplainAnalyze(t *testing.T) {
	conn, _, _ := serveObserved(t)
	ctx := context.Background()
	connExec(t, conn, "CREATE DATABASE d1", "USE d1",
		"CREATE TABLE t (id INT PRIMARY KEY, k INT, v INT, KEY k (k))",
		"CREATE TABLE u (id INT PRIMARY KEY, tid INT)")
	var vals, uvals []string
	for i := 1; i <= 20; i++ {
		vals = append(vals, "("+strconv.Itoa(i)+","+strconv.Itoa(i%4)+","+strconv.Itoa(i)+")")
		if i%3 == 0 {
			uvals = append(uvals, "("+strconv.Itoa(i)+","+strconv.Itoa(i)+")", "("+strconv.Itoa(100+i)+","+strconv.Itoa(i)+")")
		}
	}
	connExec(t, conn, "INSERT INTO t VALUES "+strings.Join(vals, ","), "INSERT INTO u VALUES "+strings.Join(uvals, ","))

	for _, c := range []struct {
		query string
		op    string // an operator whose actRows is the query's row count
		rows  int    // what op returned, when it is not the query's count; -1: the count
	}{
		{"SELECT * FROM t", "TableFullScan", -1},
		{"SELECT * FROM t WHERE v > 7", "Selection", -1},
		{"SELECT * FROM t WHERE v > 7", "TableFullScan", 20},
		{"SELECT * FROM t WHERE k = 2", "IndexLookUp", -1},
		{"SELECT t.id, u.id FROM t JOIN u ON t.id = u.tid", "", -1},
		{"SELECT k, COUNT(*) FROM t GROUP BY k", "HashAgg", -1},
		{"SELECT DISTINCT k FROM t", "", -1},
		{"SELECT * FROM t ORDER BY v DESC LIMIT 3", "Limit", -1},
		{"SELECT * FROM t ORDER BY v DESC LIMIT 3", "Sort", 3}, // the Limit stops pulling
		{"SELECT * FROM t ORDER BY v DESC LIMIT 3", "TableFullScan", 20},
	} {
		t.Run(c.query, func(t *testing.T) {
			want := count(t, conn, c.query)
			rows := explainAnalyze(t, conn, c.query)
			if rows[0].actRows != strconv.Itoa(want) {
				t.Errorf("root %s: actRows %s, the query returns %d", rows[0].id, rows[0].actRows, want)
			}
			for _, r := range rows {
				m := execInfo.FindStringSubmatch(r.exec)
				if m == nil {
					t.Errorf("%s: execution info %q", r.id, r.exec)
					continue
				}
				if r.task != "root" || r.disk != "N/A" || r.estRows == "" {
					t.Errorf("%s: %+v", r.id, r)
				}
				// Opened once, an operator's Next is called once per
				// row and once more at the end, unless its parent
				// stopped early (a Limit).
				if !strings.Contains(r.exec, "opens:") {
					loops, _ := strconv.Atoi(m[2])
					if act, _ := strconv.Atoi(r.actRows); loops != act+1 && loops != act {
						t.Errorf("%s: loops %d for %s rows", r.id, loops, r.actRows)
					}
				}
			}
			if c.op != "" {
				n := c.rows
				if n < 0 {
					n = want
				}
				if r := operator(t, rows, c.op); r.actRows != strconv.Itoa(n) {
					t.Errorf("%s: actRows %s, want %d", c.op, r.actRows, n)
				}
			}
		})
	}

	// The join's own row, and the table read shown as its access object.
	rows := explainAnalyze(t, conn, "SELECT t.id, u.id FROM t JOIN u ON t.id = u.tid")
	joins := 0
	for _, r := range rows {
		if strings.HasSuffix(strings.TrimSpace(r.id), "Join") {
			joins++
			if r.actRows != strconv.Itoa(count(t, conn, "SELECT t.id, u.id FROM t JOIN u ON t.id = u.tid")) {
				t.Errorf("join %s: actRows %s", r.id, r.actRows)
			}
		}
	}
	if joins != 1 {
		t.Errorf("%d joins in %+v", joins, rows)
	}
	if r := operator(t, explainAnalyze(t, conn, "SELECT * FROM t"), "TableFullScan"); r.access != "table:t" {
		t.Errorf("access object %q", r.access)
	}
	if r := operator(t, explainAnalyze(t, conn, "SELECT k, COUNT(*) FROM t GROUP BY k"), "HashAgg"); !strings.HasSuffix(r.mem, "Bytes") && !strings.HasSuffix(r.mem, "KB") {
		t.Errorf("HashAgg memory %q", r.mem)
	}

	// A write runs: the rows it read are counted, and it changed them.
	rows = explainAnalyze(t, conn, "UPDATE t SET v = v + 100 WHERE k = 1")
	if rows[0].actRows != "5" {
		t.Errorf("UPDATE read %s rows, want 5: %+v", rows[0].actRows, rows)
	}
	if n := count(t, conn, "SELECT * FROM t WHERE v > 100"); n != 5 {
		t.Errorf("EXPLAIN ANALYZE UPDATE changed %d rows, want 5", n)
	}

	// FORMAT = 'brief' and 'row' are the same; an unknown format is 1791.
	for _, f := range []string{"brief", "row"} {
		if n := count(t, conn, "EXPLAIN FORMAT = '"+f+"' SELECT * FROM t"); n == 0 {
			t.Errorf("EXPLAIN FORMAT='%s' returned nothing", f)
		}
		if n := count(t, conn, "EXPLAIN ANALYZE FORMAT = '"+f+"' SELECT * FROM t"); n == 0 {
			t.Errorf("EXPLAIN ANALYZE FORMAT='%s' returned nothing", f)
		}
	}
	_, err := conn.ExecContext(ctx, "EXPLAIN FORMAT = 'dot' SELECT * FROM t")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1791 {
		t.Errorf("EXPLAIN FORMAT='dot': %v, want 1791", err)
	}
}
