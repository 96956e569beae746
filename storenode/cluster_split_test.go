package storenode_test

import (
	"testing"
	"time"
)

// TestClusterSplitTable: a SQL node (a basalt process) on 1 PD and 3
// stores starts a region at the first key of each table that CREATE
// TABLE or TRUNCATE TABLE makes (TiDB's split-table, on by default), so
// PD sees one more region per table, and the tables' rows are read back
// across the new regions. (split-table = false: ddl's TestSplitTable.)
func TestClusterSplitTable(t *testing.T) {
	c, _ := startCluster(t, "", "error")
	node := c.StartSQLNode(t)
	db := node.OpenDB(t, "")
	regions := func() int { return len(pdRegions(t, c.PD)) }
	// waitRegions waits until PD counts want regions (a split reaches PD
	// with the stores' report), and fails if it counts more.
	waitRegions := func(what string, want int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			n := regions()
			if n == want {
				var keys []string
				for _, r := range pdRegions(t, c.PD) {
					keys = append(keys, r.StartKey)
				}
				t.Logf("%s: %v", what, keys)
				return
			}
			if n > want || time.Now().After(deadline) {
				t.Fatalf("%s: PD has %d regions, want %d\n%+v", what, n, want, pdRegions(t, c.PD))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE s")
	// The node's own tables (made as it starts) have their regions too:
	// count once PD's count has held still for 3 s.
	before, since := regions(), time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Since(since) < 3*time.Second; time.Sleep(200 * time.Millisecond) {
		if n := regions(); n != before {
			before, since = n, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("PD's region count still moving after 30 s: %d", before)
		}
	}
	exec("CREATE TABLE s.a (id INT PRIMARY KEY, v INT, KEY (v))")
	exec("CREATE TABLE s.b (id INT PRIMARY KEY, v INT)")
	waitRegions("two tables made", before+2)
	exec("INSERT INTO s.a VALUES (1, 10), (2, 20)")
	exec("INSERT INTO s.b VALUES (3, 30)")
	exec("TRUNCATE TABLE s.b")
	waitRegions("a table truncated", before+3)
	exec("INSERT INTO s.b VALUES (4, 40)")
	var sum int
	if err := db.QueryRow("SELECT (SELECT SUM(v) FROM s.a WHERE v > 0) + (SELECT SUM(v) FROM s.b)").Scan(&sum); err != nil || sum != 70 {
		t.Fatalf("sum of both tables' v: %d, %v; want 70", sum, err)
	}
}
