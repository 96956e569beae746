package clustersync_test

import (
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
	"github.com/go-sql-driver/mysql"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestSQLStateAcrossNodes runs two SQL nodes (processes, --store tikv) on
// 1 PD and 3 stores and checks the SQL state they share beyond the schema.
func TestSQLStateAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of processes")
	}
	c := testkit.StartCluster(t, 3, "")
	a := c.StartSQLNode(t, "--lease", "3s")
	b := c.StartSQLNode(t, "--lease", "3s")
	dbA, dbB := a.OpenDB(t, "test"), b.OpenDB(t, "test")

	t.Run("AutoIncrement", func(t *testing.T) { autoIncrement(t, dbA, dbB) })
	t.Run("AutoIDCache1", func(t *testing.T) { autoIDCache1(t, dbA, dbB) })
	t.Run("Privileges", func(t *testing.T) { privileges(t, dbA, b) })
	t.Run("GlobalVariables", func(t *testing.T) { globalVariables(t, dbA, b) })
	t.Run("Statistics", func(t *testing.T) { statistics(t, dbA, dbB) })
	t.Run("Bindings", func(t *testing.T) { bindings(t, dbA, dbB) })
	// Last: it kills b.
	t.Run("ClusterInfo", func(t *testing.T) { clusterInfoAcrossNodes(t, c, a, b, dbA, dbB) })
}

// statistics: what ANALYZE TABLE on A stores is what B's planner and
// SHOW STATS_* use within 5 s, and a later ANALYZE replaces it.
func statistics(t *testing.T, dbA, dbB *sql.DB) {
	testkit.MustExec(t, dbA, "CREATE TABLE stats_t (id INT PRIMARY KEY, k INT, KEY k (k))")
	insert := func(from, to int) {
		var vals []string
		for i := from; i < to; i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", i, i%4))
		}
		testkit.MustExec(t, dbA, "INSERT INTO stats_t VALUES "+strings.Join(vals, ", "))
	}
	explain := func(db *sql.DB) string {
		rows, err := db.Query("EXPLAIN SELECT * FROM stats_t WHERE k = 1")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out strings.Builder
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				out.WriteString(v.String + "\t")
			}
			out.WriteString("\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	// meta is SHOW STATS_META's Row_count and SHOW STATS_HISTOGRAMS's
	// Distinct_count of k on db, -1 where there is no row.
	meta := func(db *sql.DB) (rowCount, ndv int64) {
		rowCount, ndv = -1, -1
		var s1, s2, s3, s4 string
		var mod int64
		err := db.QueryRow("SHOW STATS_META WHERE Table_name = 'stats_t'").Scan(&s1, &s2, &s3, &s4, &mod, &rowCount)
		if err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		var isIndex int
		var nulls int64
		var avg, corr string
		err = db.QueryRow("SHOW STATS_HISTOGRAMS WHERE Table_name = 'stats_t' AND Column_name = 'k' AND Is_index = 1").
			Scan(&s1, &s2, &s3, &s4, &isIndex, &s4, &ndv, &nulls, &avg, &corr)
		if err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		return rowCount, ndv
	}

	insert(0, 200)
	before := explain(dbB)
	if rc, _ := meta(dbB); rc != -1 {
		t.Fatalf("B shows statistics of stats_t before any ANALYZE: row count %d", rc)
	}
	testkit.MustExec(t, dbA, "ANALYZE TABLE stats_t")
	onA := explain(dbA)
	if onA == before {
		t.Fatalf("ANALYZE changed nothing in A's plan, so the test cannot tell whether B has A's statistics:\n%s", onA)
	}
	testkit.WaitFor(t, within, "B to use A's statistics", func() (bool, string) {
		rc, ndv := meta(dbB)
		onB := explain(dbB)
		return rc == 200 && ndv == 4 && onB == onA,
			fmt.Sprintf("row count %d, NDV of k %d, plan on B:\n%s\nplan on A:\n%s", rc, ndv, onB, onA)
	})

	insert(200, 600)
	testkit.MustExec(t, dbA, "ANALYZE TABLE stats_t")
	onA = explain(dbA)
	testkit.WaitFor(t, within, "B to use A's second statistics", func() (bool, string) {
		rc, _ := meta(dbB)
		onB := explain(dbB)
		return rc == 600 && onB == onA, fmt.Sprintf("row count %d, plan on B:\n%s\nplan on A:\n%s", rc, onB, onA)
	})
}

// within is how soon a change on one node must hold on the other.
const within = 5 * time.Second

// userDSN is the DSN of user with password on server s.
func userDSN(s *testkit.Server, user, password, db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.DBName = user, password, "tcp", db
	cfg.Addr = net.JoinHostPort(s.Host(), strconv.Itoa(s.Port()))
	cfg.Timeout = 5 * time.Second
	return cfg.FormatDSN()
}

// try runs q on a new connection of user on s and returns its MySQL error
// code, 0 if it succeeded.
func try(t *testing.T, s *testkit.Server, user, password, q string) uint16 {
	t.Helper()
	db, err := sql.Open("mysql", userDSN(s, user, password, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(q)
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &me):
		return me.Number
	}
	t.Fatalf("%s as %s: %v", q, user, err)
	return 0
}

// eventually waits until q as user on s ends with code (0: succeeds).
func eventually(t *testing.T, s *testkit.Server, user, password, q string, code uint16) {
	t.Helper()
	testkit.WaitFor(t, within, fmt.Sprintf("%q as %s to give %d", q, user, code), func() (bool, string) {
		got := try(t, s, user, password, q)
		return got == code, fmt.Sprintf("got %d", got)
	})
}

// privileges: accounts and grants changed on A hold on B within 5 s.
func privileges(t *testing.T, dbA *sql.DB, b *testkit.Server) {
	testkit.MustExec(t, dbA, "CREATE TABLE priv_t (x INT)")
	const q = "SELECT * FROM test.priv_t"
	testkit.MustExec(t, dbA, "CREATE USER 'u1'@'%' IDENTIFIED BY 'p1'")
	eventually(t, b, "u1", "p1", "SELECT 1", 0)
	if got := try(t, b, "u1", "p1", q); got != 1142 {
		t.Fatalf("u1 without grants reads priv_t on B: code %d, want 1142", got)
	}
	testkit.MustExec(t, dbA, "GRANT SELECT ON test.* TO 'u1'@'%'")
	eventually(t, b, "u1", "p1", q, 0)
	testkit.MustExec(t, dbA, "REVOKE SELECT ON test.* FROM 'u1'@'%'")
	eventually(t, b, "u1", "p1", q, 1142)
	testkit.MustExec(t, dbA, "GRANT SELECT ON test.priv_t TO 'u1'@'%'")
	eventually(t, b, "u1", "p1", q, 0)
	testkit.MustExec(t, dbA, "SET PASSWORD FOR 'u1'@'%' = 'p2'")
	eventually(t, b, "u1", "p2", "SELECT 1", 0)
	if got := try(t, b, "u1", "p1", "SELECT 1"); got != 1045 {
		t.Fatalf("u1 with the old password on B: code %d, want 1045", got)
	}
	testkit.MustExec(t, dbA, "DROP USER 'u1'@'%'")
	eventually(t, b, "u1", "p2", "SELECT 1", 1045)
}

// globalVariables: SET GLOBAL on A holds on B within 5 s, for its global
// value and for its new sessions.
func globalVariables(t *testing.T, dbA *sql.DB, b *testkit.Server) {
	testkit.MustExec(t, dbA, "SET GLOBAL sql_mode = 'ANSI_QUOTES'")
	defer testkit.MustExec(t, dbA, "SET GLOBAL sql_mode = DEFAULT")
	testkit.MustExec(t, dbA, "SET GLOBAL max_execution_time = 12345")
	defer testkit.MustExec(t, dbA, "SET GLOBAL max_execution_time = DEFAULT")
	testkit.WaitFor(t, within, "B's new sessions to take A's globals", func() (bool, string) {
		db, err := sql.Open("mysql", b.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var mode, global string
		var met int
		if err := db.QueryRow("SELECT @@sql_mode, @@GLOBAL.sql_mode, @@max_execution_time").Scan(&mode, &global, &met); err != nil {
			t.Fatal(err)
		}
		return mode == "ANSI_QUOTES" && global == "ANSI_QUOTES" && met == 12345,
			fmt.Sprintf("sql_mode %q, global %q, max_execution_time %d", mode, global, met)
	})
}

// insertConcurrently inserts n rows into table from each node at once, one
// autocommit INSERT at a time, and returns each node's generated ids in
// the order it got them.
func insertConcurrently(t *testing.T, table string, n int, dbs ...*sql.DB) [][]int64 {
	t.Helper()
	ids := make([][]int64, len(dbs))
	errs := make(chan error, len(dbs))
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				res, err := db.Exec(fmt.Sprintf("INSERT INTO %s (node) VALUES (%d)", table, i))
				if err != nil {
					errs <- fmt.Errorf("node %d: %w", i, err)
					return
				}
				id, err := res.LastInsertId()
				if err != nil {
					errs <- err
					return
				}
				ids[i] = append(ids[i], id)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids
}

// checkIncreasing fails unless each node's ids increase.
func checkIncreasing(t *testing.T, ids [][]int64) {
	t.Helper()
	for n, l := range ids {
		for i := 1; i < len(l); i++ {
			if l[i] <= l[i-1] {
				t.Fatalf("node %d got id %d after %d", n, l[i], l[i-1])
			}
		}
	}
}

// checkRows fails unless table holds exactly the ids handed out, each
// once, with the node that got it.
func checkRows(t *testing.T, db *sql.DB, table string, ids [][]int64) {
	t.Helper()
	want := map[int64]int{}
	for n, l := range ids {
		for _, id := range l {
			if prev, dup := want[id]; dup {
				t.Fatalf("id %d handed out to node %d and node %d", id, prev, n)
			}
			want[id] = n
		}
	}
	rows, err := db.Query("SELECT id, node FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := 0
	for rows.Next() {
		var id int64
		var node int
		if err := rows.Scan(&id, &node); err != nil {
			t.Fatal(err)
		}
		if n, ok := want[id]; !ok || n != node {
			t.Fatalf("row (%d, %d) of %s: not an id node %d was given", id, node, table, node)
		}
		got++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got != len(want) {
		t.Fatalf("%s has %d rows, want %d", table, got, len(want))
	}
}

// autoIncrement: with the default cache, the values two nodes generate at
// once are unique, and increase within each node.
func autoIncrement(t *testing.T, dbA, dbB *sql.DB) {
	testkit.MustExec(t, dbA, "CREATE TABLE ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, node INT)")
	ids := insertConcurrently(t, "ai", 150, dbA, dbB)
	checkIncreasing(t, ids)
	checkRows(t, dbB, "ai", ids)
}

// autoIDCache1: with AUTO_ID_CACHE 1 the values of both nodes together
// are consecutive, 1, 2, 3 ..., as MySQL's on one server, whichever node
// inserts.
func autoIDCache1(t *testing.T, dbA, dbB *sql.DB) {
	testkit.MustExec(t, dbA, "CREATE TABLE ai1 (id BIGINT AUTO_INCREMENT PRIMARY KEY, node INT) AUTO_ID_CACHE 1")
	var show string
	if err := dbB.QueryRow("SHOW CREATE TABLE ai1").Scan(new(string), &show); err != nil {
		t.Fatal(err)
	}
	ids := insertConcurrently(t, "ai1", 60, dbA, dbB)
	checkIncreasing(t, ids)
	checkRows(t, dbA, "ai1", ids)
	for id := int64(1); id <= 120; id++ {
		found := false
		for _, l := range ids {
			for _, x := range l {
				found = found || x == id
			}
		}
		if !found {
			t.Fatalf("AUTO_ID_CACHE 1: id %d missing from 1..120: %v", id, ids)
		}
	}
	// Alternating nodes, one after the other: the next values in turn.
	for i, db := range []*sql.DB{dbA, dbB, dbA, dbB} {
		res, err := db.Exec("INSERT INTO ai1 (node) VALUES (?)", i%2)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := res.LastInsertId(); id != int64(121+i) {
			t.Fatalf("insert %d on node %d: id %d, want %d", i, i%2, id, 121+i)
		}
	}
	// An explicit value moves the counter for both nodes.
	testkit.MustExec(t, dbB, "INSERT INTO ai1 VALUES (1000, 1)")
	res, err := dbA.Exec("INSERT INTO ai1 (node) VALUES (0)")
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := res.LastInsertId(); id != 1001 {
		t.Fatalf("after an explicit 1000 on B, A's next id is %d, want 1001", id)
	}
	if want := "/*T![auto_id_cache] AUTO_ID_CACHE=1 */"; !strings.Contains(show, want) {
		t.Fatalf("SHOW CREATE TABLE ai1 on B:\n%s\nwant %s", show, want)
	}
}
