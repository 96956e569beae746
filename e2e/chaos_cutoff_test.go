package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/bench"
	"github.com/basalt-db/basalt/testkit"
)

// TestChaosStoreCutOff cuts the store that leads the most regions off
// from the other two under load, and heals the cut: 1 PD, 3 stores
// started with the test's fault switch (BASALT_TEST_FAULTS=1, see
// storenode/fault.go: the cut store drops the others' Raft messages and
// snapshots, and they drop its; PD and the SQL nodes still reach it), SQL
// nodes A and B behind HAProxy, sysbench oltp_read_write (8 threads,
// errors counted and retried) and the bank workload through HAProxy, and
// a probe client writing a counter and reading it back, through HAProxy,
// over and over. The cut comes at 10 s and heals at 25 s of a 45 s run.
// It fails unless the cut store leads no region within 10 s of the cut
// (the minority stops serving); throughput is back to half within 10 s
// and sysbench's errors (but deadlocks and lock wait timeouts) stop
// within those 10 s (the majority goes on); the probe never reads a value
// other than the one it last wrote (no stale leader serves a read); the
// healed store leads a region again within 30 s of the heal (PD asked to
// move leaders to it, which raft does only once it has caught up); and
// the bank's invariant and ADMIN CHECK TABLE hold. It prints a one-line
// verdict and writes a chart with the cut, the heal and the catch-up
// marked.
func TestChaosStoreCutOff(t *testing.T) {
	skipUnlessChaos(t, true)
	const (
		runFor   = 45 * time.Second
		cutAt    = 10 * time.Second
		healAt   = 25 * time.Second
		recovery = 10 // seconds
		stepDown = 10 * time.Second
		catchUp  = 30 * time.Second
	)
	// The stores inherit it.
	t.Setenv("BASALT_TEST_FAULTS", "1")
	c := testkit.StartCluster(t, 3, chaosStoreConfig)
	ids := map[string]uint64{}
	for _, name := range []string{"store1", "store2", "store3"} {
		ids[name] = storeStatus(t, c, name).StoreID
	}
	a, b := c.StartSQLNode(t), c.StartSQLNode(t)
	lb := testkit.StartHAProxy(t, a, b)
	mustExec(t, lb.OpenDB(t, ""), "CREATE DATABASE sbtest")
	tables := []string{"--tables=2", "--table-size=10000"}
	runSysbench(t, lb, "oltp_common", "prepare", tables...)
	bk := newBank(t, lb)
	probeDB := openPool(t, lb, "bank")
	defer probeDB.Close()
	mustExecAll(t, probeDB, "CREATE TABLE probe (id INT PRIMARY KEY, v BIGINT NOT NULL)", "INSERT INTO probe VALUES (1, 0)")

	load := startChaosSysbench(t, lb, runFor, tables, "all", false)
	run := newCrashRun()
	run.retryAlso = clusterFault
	stats := bk.start(t, lb, run, []txnMode{pessimistic}, rand.New(rand.NewPCG(7, 8)))
	pr := &readProbe{}
	pr.wg.Go(func() { pr.run(probeDB) })

	start := load.start // sysbench reports seconds from here
	time.Sleep(cutAt - time.Since(start))
	victim := mostLeaders(t, c)
	for name := range ids {
		if name == victim {
			setRaftDrop(t, c, name, others(ids, victim)...)
		} else {
			setRaftDrop(t, c, name, ids[victim])
		}
	}
	cut := time.Since(start)
	t.Logf("%s (store %d) cut off at %.1fs, leading %d regions", victim, ids[victim], cut.Seconds(), storeStatus(t, c, victim).Leaders)

	// The minority side stops leading.
	steppedDown := time.Duration(-1)
	for time.Since(start) < healAt {
		if steppedDown < 0 && storeStatus(t, c, victim).Leaders == 0 {
			steppedDown = time.Since(start) - cut
			t.Logf("%s leads no region %.1fs after the cut", victim, steppedDown.Seconds())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for name := range ids {
		setRaftDrop(t, c, name)
	}
	healed := time.Since(start)
	t.Logf("healed at %.1fs", healed.Seconds())

	// The healed store catches up: PD is asked to move leaders to it,
	// which raft does only once its log is up to date.
	caughtUp := time.Duration(-1)
	for time.Since(start)-healed < catchUp {
		if storeStatus(t, c, victim).Leaders > 0 {
			caughtUp = time.Since(start) - healed
			break
		}
		transferLeadersTo(t, c, ids[victim])
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%s leads a region again %.1fs after the heal", victim, caughtUp.Seconds())
	r := load.wait(t)
	run.stop.Store(true)
	run.wg.Wait()
	pr.stop.Store(true)
	pr.wg.Wait()

	cutS := cut.Seconds()
	rec := recoveryAfter(t, r, cutS)
	bk.verify(t, lb)
	for _, table := range []string{"sbtest.sbtest1", "sbtest.sbtest2"} {
		checkTable(t, lb.Flavor(), lb.OpenDB(t, ""), table)
	}

	verdict := failedVerdict(t, rec.verdict(recovery))
	switch {
	case verdict != "PASS":
	case steppedDown < 0 || steppedDown > stepDown:
		verdict = fmt.Sprintf("FAIL: the cut-off store still led regions %v after the cut", stepDown)
	case pr.stale.Load() > 0:
		verdict = fmt.Sprintf("FAIL: %d stale reads: %s", pr.stale.Load(), pr.first.Load())
	case pr.checks.Load() == 0:
		verdict = "FAIL: the probe made no check"
	case caughtUp < 0:
		verdict = fmt.Sprintf("FAIL: the healed store led no region within %v of the heal", catchUp)
	}
	marks := []bench.ChartMark{{Second: cutS, Label: victim + " cut off"}, {Second: healed.Seconds(), Label: "healed"}}
	if caughtUp >= 0 {
		marks = append(marks, bench.ChartMark{Second: (healed + caughtUp).Seconds(), Label: "leads again"})
	}
	chart := writeChaosChart(t, "chaos-store-cutoff.png", "oltp_read_write via HAProxy, 8 threads: a store cut off from the others, then healed", rec.iv, marks)
	t.Logf("verdict: %s; the cut-off store led nothing %.1f s after the cut, led again %.1f s after the heal; %s; probe: %d writes read back, %d errors, none stale; bank: %v; chart %s",
		verdict, steppedDown.Seconds(), caughtUp.Seconds(), rec, pr.checks.Load(), pr.errors.Load(), stats, chart)
	if verdict != "PASS" {
		t.Error(verdict)
	}
}

// readProbe writes a counter and reads it back, one statement each in
// autocommit: a read that follows an acknowledged write must return
// what it wrote, whichever SQL node and region leader serve it.
type readProbe struct {
	stop                  atomic.Bool
	wg                    sync.WaitGroup
	checks, stale, errors atomic.Int64
	first                 atomic.Value // string: the first stale read
}

func (p *readProbe) run(db *sql.DB) {
	for i := int64(1); !p.stop.Load(); i++ {
		if _, err := db.Exec("UPDATE probe SET v = ? WHERE id = 1", i); err != nil {
			p.errors.Add(1)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var v int64
		if err := db.QueryRow("SELECT v FROM probe WHERE id = 1").Scan(&v); err != nil {
			p.errors.Add(1)
			continue
		}
		p.checks.Add(1)
		if v != i {
			if p.stale.Add(1) == 1 {
				p.first.Store(fmt.Sprintf("read %d after writing %d", v, i))
			}
		}
	}
}

// storeState is what a store's /status page says.
type storeState struct {
	StoreID uint64 `json:"store_id"`
	Leaders int    `json:"leader_count"`
}

func storeStatus(t *testing.T, c *testkit.Cluster, name string) storeState {
	t.Helper()
	resp, err := http.Get("http://" + c.StatusAddr(name) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s storeState
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// setRaftDrop sets the store's fault switch to drop what the stores
// (by ID) send it; none clears it.
func setRaftDrop(t *testing.T, c *testkit.Cluster, name string, stores ...uint64) {
	t.Helper()
	list := make([]string, len(stores))
	for i, id := range stores {
		list[i] = strconv.FormatUint(id, 10)
	}
	resp, err := http.Post("http://"+c.StatusAddr(name)+"/debug/fault/raft-drop?stores="+strings.Join(list, ","), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: the fault switch answers %s (was the store started with BASALT_TEST_FAULTS=1?)", name, resp.Status)
	}
}

func others(ids map[string]uint64, name string) []uint64 {
	var out []uint64
	for n, id := range ids {
		if n != name {
			out = append(out, id)
		}
	}
	return out
}

// transferLeadersTo asks PD to move to store the leadership of every
// region that has a voter there and is led elsewhere.
func transferLeadersTo(t *testing.T, c *testkit.Cluster, store uint64) {
	t.Helper()
	resp, err := http.Get("http://" + c.PD + "/pd/api/v1/regions")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Regions []struct {
			ID    uint64 `json:"id"`
			Peers []struct {
				StoreID uint64 `json:"store_id"`
			} `json:"peers"`
			Leader *struct {
				StoreID uint64 `json:"store_id"`
			} `json:"leader"`
		} `json:"regions"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Regions {
		if r.Leader == nil || r.Leader.StoreID == store {
			continue
		}
		for _, p := range r.Peers {
			if p.StoreID == store {
				body := fmt.Sprintf(`{"name": "transfer-leader", "region_id": %d, "to_store_id": %d}`, r.ID, store)
				if resp, err := http.Post("http://"+c.PD+"/pd/api/v1/operators", "application/json", strings.NewReader(body)); err == nil {
					resp.Body.Close()
				}
			}
		}
	}
}
