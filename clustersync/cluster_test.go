package clustersync_test

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
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
	mustExec(t, dbA, "CREATE TABLE ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, node INT)")
	ids := insertConcurrently(t, "ai", 150, dbA, dbB)
	checkIncreasing(t, ids)
	checkRows(t, dbB, "ai", ids)
}

// autoIDCache1: with AUTO_ID_CACHE 1 the values of both nodes together
// are consecutive, 1, 2, 3 ..., as MySQL's on one server, whichever node
// inserts.
func autoIDCache1(t *testing.T, dbA, dbB *sql.DB) {
	mustExec(t, dbA, "CREATE TABLE ai1 (id BIGINT AUTO_INCREMENT PRIMARY KEY, node INT) AUTO_ID_CACHE 1")
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
	mustExec(t, dbB, "INSERT INTO ai1 VALUES (1000, 1)")
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

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// waitFor polls cond until it holds, failing the test after limit with
// cond's last description.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s: %s", limit, what, desc)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
