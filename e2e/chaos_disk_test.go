package e2e

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/bench"
	"github.com/basalt-db/basalt/testkit"
)

// TestChaosStoreDiskFull fills one store's disk under a write load: its
// data directory is a 128 MiB tmpfs the test mounts (root only). The store
// must not acknowledge what it could not persist: Pebble's failed commit
// stops it with "no space left on device" in its log, while the other two
// stores go on committing every write (3 replicas, a quorum of 2). Every
// insert the SQL node acknowledged must be there; given space again and
// restarted, the store catches up: with store1 killed, writes commit on
// store2 and store3.
// It prints a one-line verdict and charts inserts per second with the
// store's end and restart marked.
func TestChaosStoreDiskFull(t *testing.T) {
	skipUnlessChaos(t, false)
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs for the store's disk needs root")
	}
	c := testkit.StartCluster(t, 2, chaosStoreConfig)
	// The third store's directory is a small tmpfs, mounted before it
	// starts (AddStore names it store3, under the cluster's directory).
	dir := c.DataDir("store3")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=128m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	// Lazily: cleanups run in reverse, and the store may still run.
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	if name := c.AddStore(); name != "store3" {
		t.Fatalf("the third store is %s, not store3", name)
	}
	// PD gives the new store its replica of the region before the load.
	waitStoreHoldsRegions(t, c, "store3", time.Minute)
	srv := c.StartSQLNode(t)
	db := srv.OpenDB(t, "")
	mustExec(t, db, "CREATE DATABASE full")
	mustExec(t, db, "CREATE TABLE full.t (id INT PRIMARY KEY, v LONGBLOB)")

	// Inserts of 1 MB of random bytes each (which compression does not
	// shrink), one at a time, until the store has been gone for 10 s (or
	// 2 minutes pass).
	value := make([]byte, 1<<20)
	start := time.Now()
	acked := map[int]bool{}
	perSecond := map[int]int{}
	errors := 0
	var died time.Duration
	for id := 1; time.Since(start) < 2*time.Minute; id++ {
		rand.Read(value)
		_, err := db.Exec("INSERT INTO full.t VALUES (?, ?)", id, value)
		if err == nil {
			acked[id] = true
			perSecond[int(time.Since(start).Seconds())]++
		} else {
			errors++
			t.Logf("insert %d: %v", id, err)
		}
		if died == 0 && c.Exited("store3") {
			died = time.Since(start)
		}
		if died > 0 && time.Since(start) > died+10*time.Second {
			break
		}
	}
	if died == 0 {
		t.Fatalf("store3 still runs after %d inserts of 1 MB into a 128 MiB disk:\n%s", len(acked), c.Log("store3"))
	}
	log := c.Log("store3")
	if !strings.Contains(log, "no space left on device") {
		t.Errorf("store3 ended without saying its disk is full:\n%s", log)
	}
	after := 0
	for s, n := range perSecond {
		if float64(s) > died.Seconds()+1 {
			after += n
		}
	}
	if after == 0 {
		t.Errorf("no insert committed after store3 stopped at %.1fs: the two other stores should go on", died.Seconds())
	}

	// Space again, and a restart: the store catches up.
	if out, err := exec.Command("mount", "-o", "remount,size=1g", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	restarted := time.Since(start)
	c.StartStore("store3")
	// It has caught up when the region commits with it and without
	// store1: a write then needs store3's log to match the leader's.
	c.Kill("store1")
	var caughtUp time.Duration
	for id := -1; id >= -5; id-- {
		for {
			rand.Read(value)
			_, err := db.Exec("INSERT INTO full.t VALUES (?, ?)", id, value)
			if err == nil {
				acked[id] = true
				perSecond[int(time.Since(start).Seconds())]++
				break
			}
			if time.Since(start) > restarted+2*time.Minute {
				t.Fatalf("no write commits on store2 and the restarted store3: %v\n%s", err, c.Log("store3"))
			}
			time.Sleep(200 * time.Millisecond)
		}
		if caughtUp == 0 {
			caughtUp = time.Since(start) - restarted
		}
	}

	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM full.t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("SELECT id FROM full.t")
	if err != nil {
		t.Fatal(err)
	}
	present := map[int]bool{}
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		present[id] = true
	}
	rows.Close()
	lost := 0
	for id := range acked {
		if !present[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged inserts are missing", lost)
	}
	mustExec(t, db, "ADMIN CHECK TABLE full.t")

	var iv []bench.Interval
	for s := 0; s <= int(time.Since(start).Seconds()); s++ {
		iv = append(iv, bench.Interval{Second: float64(s + 1), TPS: float64(perSecond[s]), QPS: float64(perSecond[s]), WriteQPS: float64(perSecond[s])})
	}
	chart := writeChaosChart(t, "store-disk-full.png", "1 MB inserts/s: store3's disk fills, it stops, then restarts with space", iv,
		[]bench.ChartMark{{Second: died.Seconds(), Label: "store3 disk full"}, {Second: restarted.Seconds(), Label: "store3 restarted"}})
	verdict := "PASS"
	if t.Failed() {
		verdict = "FAIL"
	}
	t.Logf("verdict: %s: store3 stopped on a full disk at %.1fs after %d acknowledged inserts; %d committed after it stopped; %d insert errors; writes committed without store1 %.1fs after store3's restart; %d of %d acknowledged rows present (%d rows in all); chart %s",
		verdict, died.Seconds(), len(acked), after, errors, caughtUp.Seconds(), len(acked)-lost, len(acked), n, chart)
}

// waitStoreHoldsRegions waits until PD reports the store holding at least
// one region, and returns how long that took.
func waitStoreHoldsRegions(t *testing.T, c *testkit.Cluster, name string, limit time.Duration) time.Duration {
	t.Helper()
	addr := c.StoreAddr(name)
	start := time.Now()
	for {
		var body struct {
			Stores []struct {
				Store struct {
					Address string `json:"address"`
				} `json:"store"`
				Status struct {
					RegionCount int `json:"region_count"`
				} `json:"status"`
			} `json:"stores"`
		}
		if resp, err := http.Get("http://" + c.PD + "/pd/api/v1/stores"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err == nil {
				for _, s := range body.Stores {
					if s.Store.Address == addr && s.Status.RegionCount > 0 && !c.Exited(name) {
						return time.Since(start)
					}
				}
			}
		}
		if time.Since(start) > limit {
			t.Fatalf("%s holds no region %v after its restart:\n%s", name, limit, c.Log(name))
		}
		time.Sleep(500 * time.Millisecond)
	}
}
