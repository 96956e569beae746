package e2e

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/basalt-db/basalt/testkit"
)

// promSeries reads a Prometheus text exposition into series -> value,
// the series as written: name{label="v",...} (labels in the order the
// client library writes them, sorted by name).
func promSeries(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics: %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetricsMove runs known statements through a real server and checks
// that the TiDB-named series of /metrics moved by exactly what they did.
func TestMetricsMove(t *testing.T) {
	srv := testkit.StartBasalt(t, testkit.BasaltOptions{})
	db := srv.OpenDB(t, "")
	mustExec(t, db, "CREATE DATABASE m")
	mustExec(t, db, "CREATE TABLE m.t (id INT PRIMARY KEY, v INT)")
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	exec := func(q string, args ...any) error { _, err := conn.ExecContext(ctx, q, args...); return err }
	if err := exec("USE m"); err != nil {
		t.Fatal(err)
	}

	before := promSeries(t, srv.StatusAddr())
	// Text statements (COM_QUERY): 3 inserts, 2 selects, 1 update, 1
	// delete; an explicit pessimistic transaction; one duplicate key.
	for _, q := range []string{"INSERT INTO t VALUES (1, 1)", "INSERT INTO t VALUES (2, 2)", "INSERT INTO t VALUES (3, 3)",
		"UPDATE t SET v = 10 WHERE id = 1", "DELETE FROM t WHERE id = 3",
		"BEGIN PESSIMISTIC", "UPDATE t SET v = 20 WHERE id = 2", "COMMIT"} {
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for range 2 {
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 2 {
			t.Fatalf("count: %d %v", n, err)
		}
	}
	var me *mysql.MySQLError
	if err := exec("INSERT INTO t VALUES (1, 1)"); !errors.As(err, &me) || me.Number != 1062 {
		t.Fatalf("duplicate insert: %v", err)
	}
	// A prepared statement (COM_STMT_PREPARE, then COM_STMT_EXECUTE
	// three times): planned when prepared, each execution from the plan
	// cache.
	st, err := conn.PrepareContext(ctx, "SELECT v FROM t WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		var v int
		if err := st.QueryRowContext(ctx, 2).Scan(&v); err != nil || v != 20 {
			t.Fatalf("prepared select: %d %v", v, err)
		}
	}
	st.Close()
	after := promSeries(t, srv.StatusAddr())

	for series, want := range map[string]float64{
		`tidb_server_handle_query_duration_seconds_count{sql_type="Insert"}`:                                    4,
		`tidb_server_handle_query_duration_seconds_count{sql_type="Select"}`:                                    5,
		`tidb_server_handle_query_duration_seconds_count{sql_type="Update"}`:                                    2,
		`tidb_server_handle_query_duration_seconds_count{sql_type="Delete"}`:                                    1,
		`tidb_server_handle_query_duration_seconds_count{sql_type="Begin"}`:                                     1,
		`tidb_server_handle_query_duration_seconds_count{sql_type="Commit"}`:                                    1,
		`tidb_server_query_total{result="OK",type="Query"}`:                                                     10,
		`tidb_server_query_total{result="Error",type="Query"}`:                                                  1,
		`tidb_server_query_total{result="OK",type="StmtPrepare"}`:                                               1,
		`tidb_server_query_total{result="OK",type="StmtExecute"}`:                                               3,
		`tidb_server_execute_error_total{type="1062"}`:                                                          1,
		`tidb_server_plan_cache_total{type="prepare"}`:                                                          3,
		`tidb_server_plan_cache_miss_total{type="prepare"}`:                                                     0,
		`tidb_session_transaction_duration_seconds_count{scope="general",txn_mode="pessimistic",type="commit"}`: 1,
		// Autocommit writes run as optimistic transactions: 3 inserts, the
		// update and the delete committed, the duplicate aborted (once,
		// though it ran twice: without, then with its unique checks).
		`tidb_session_transaction_duration_seconds_count{scope="general",txn_mode="optimistic",type="commit"}`: 5,
		`tidb_session_transaction_duration_seconds_count{scope="general",txn_mode="optimistic",type="abort"}`:  1,
	} {
		if got := after[series] - before[series]; got != want {
			t.Errorf("%s grew by %v, want %v", series, got, want)
		}
	}
	// The connections: the pool's and this one, at least.
	if c := after["tidb_server_connections"]; c < 1 {
		t.Errorf("tidb_server_connections = %v", c)
	}
	for _, old := range []string{"basalt_server_query_total", "basalt_server_connections"} {
		for series := range after {
			if strings.HasPrefix(series, old) {
				t.Errorf("/metrics still has %s", series)
			}
		}
	}
}
