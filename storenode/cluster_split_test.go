package storenode_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestClusterSplitTable: a SQL node (a basalt process) on 1 PD and 3
// stores with split-table = true starts a region at the first key of each
// table that CREATE TABLE or TRUNCATE TABLE makes (TiDB's split-table), so
// PD sees one more region per table, and the tables' rows are read back
// across the new regions. (split-table = false: ddl's TestSplitTable.)
func TestClusterSplitTable(t *testing.T) {
	c, _ := startCluster(t, "", "error")
	cfg := filepath.Join(t.TempDir(), "split.toml")
	if err := os.WriteFile(cfg, []byte("split-table = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	node := c.StartSQLNode(t, "--config", cfg)
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

// TestClusterStopTogether: three stores holding six regions are stopped
// with SIGTERM, as a playground or a bench's restore stops them: first the
// store that the leader of the first region lists first among its other
// voters, then the other two at once. Both end within 15 s: a stopping
// store asks each other voter in turn to take its leaders, a stopping store
// refuses them, and one whose leaders no one takes stops after a few
// seconds. Before, the leader asked only the first voter, which had gone,
// until its 30 s stop timeout.
func TestClusterStopTogether(t *testing.T) {
	c, cli := startCluster(t, "", "error")
	var keys [][]byte
	for i := 1; i <= 5; i++ {
		keys = append(keys, key(i*100))
	}
	if _, err := cli.KVStore.SplitRegions(context.Background(), keys, false, nil); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, c, 3, 6)
	r := pdRegions(t, c.PD)[0]
	var first uint64
	for _, p := range r.Peers {
		if p.StoreID != r.Leader.StoreID {
			first = p.StoreID
			break
		}
	}
	// Store IDs are not names: find the names by the stores' /status.
	names := map[uint64]string{}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("store%d", i)
		st, ok := statusOf(t, c, name)
		if !ok {
			t.Fatalf("%s: no /status", name)
		}
		names[st.StoreID] = name
	}
	c.Stop(names[first])
	start := time.Now()
	var wg sync.WaitGroup
	took := map[string]time.Duration{}
	var mu sync.Mutex
	for id, name := range names {
		if id == first {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Stop(name)
			mu.Lock()
			took[name] = time.Since(start)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for name, d := range took {
		if d > 15*time.Second {
			t.Errorf("%s took %v to stop (want under 15 s)\n%s", name, d.Round(time.Millisecond), c.Logs())
		}
	}
	t.Logf("%s stopped first; then %v", names[first], took)
}
