package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/bench"
	"github.com/basalt-db/basalt/testkit"
)

// The fault tests of cluster mode (make chaos) run only when
// BASALT_CHAOS=1: each takes a minute or more. BASALT_CHAOS_OUT names the
// directory for their charts (default: the test's temporary directory,
// logged).
const chaosEnv = "BASALT_CHAOS"

// chaosStoreConfig makes the stores report to PD every second, so that
// PD sees a store's death and return promptly.
const chaosStoreConfig = `[raftstore]
pd-heartbeat-tick-interval = "1s"
pd-store-heartbeat-tick-interval = "1s"
`

// TestChaosStoreKill kills the store that leads the most regions with
// SIGKILL under load, and restarts it: 1 PD and 3 stores, SQL node A
// running sysbench oltp_read_write (8 threads, errors counted and retried
// rather than fatal) and SQL node B the bank workload. The store dies at
// 10 s and returns at 25 s of a 40 s run. It fails unless throughput is
// back to half its level before the kill within 10 s, every statement
// error falls within those 10 s, the bank's invariant holds in every
// snapshot read and after the run (no acknowledged transfer lost), and
// the sysbench tables pass ADMIN CHECK TABLE. It prints a one-line
// verdict and writes a chart of throughput over time with the kill and
// the restart marked.
func TestChaosStoreKill(t *testing.T) {
	if os.Getenv(chaosEnv) == "" {
		t.Skip("a fault test: set " + chaosEnv + "=1 (make chaos)")
	}
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	const (
		runFor    = 40 * time.Second
		killAt    = 10 * time.Second
		restartAt = 25 * time.Second
		recovery  = 10 // seconds
	)
	c := testkit.StartCluster(t, 3, chaosStoreConfig)
	a, b := c.StartSQLNode(t), c.StartSQLNode(t)
	mustExec(t, a.OpenDB(t, ""), "CREATE DATABASE sbtest")
	tables := []string{"--tables=2", "--table-size=10000"}
	runSysbench(t, a, "oltp_common", "prepare", tables...)
	bk := newBank(t, b)

	// The workloads: sysbench in the background, the bank on B.
	type result struct {
		res testkit.SysbenchResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		args := append(append([]string{"oltp_read_write"}, tables...), "--threads=8", "--report-interval=1",
			fmt.Sprintf("--time=%d", int(runFor.Seconds())), "--mysql-ignore-errors=all", "run")
		res, err := testkit.Sysbench(t, a, args...)
		done <- result{res, err}
	}()
	run := newCrashRun()
	run.retryAlso = clusterFault
	stats := bk.start(t, b, run, []txnMode{pessimistic}, rand.New(rand.NewPCG(1, 2)))

	start := time.Now()
	time.Sleep(killAt)
	victim := mostLeaders(t, c)
	c.Kill(victim)
	killed := time.Since(start)
	t.Logf("%s killed at %.1fs", victim, killed.Seconds())
	time.Sleep(restartAt - time.Since(start))
	c.StartStore(victim)
	restarted := time.Since(start)
	t.Logf("%s restarted at %.1fs", victim, restarted.Seconds())
	r := <-done
	run.stop.Store(true)
	run.wg.Wait()
	if r.err != nil {
		t.Fatalf("sysbench: %v", r.err)
	}

	iv := bench.ParseIntervals(r.res.Output)
	killS := killed.Seconds()
	before, n := 0.0, 0
	lastErr, recovered := 0.0, -1.0
	for _, v := range iv {
		switch {
		case v.Second <= killS && v.Second > 2:
			before += v.QPS
			n++
		case v.Second > killS && recovered < 0 && n > 0 && v.QPS >= before/float64(n)/2:
			recovered = v.Second - killS
		}
		if v.ErrPerSec > 0 {
			lastErr = v.Second
		}
	}
	if n == 0 {
		t.Fatalf("no interval before the kill:\n%s", r.res.Output)
	}
	bk.verify(t, b)
	for _, table := range []string{"sbtest.sbtest1", "sbtest.sbtest2"} {
		checkTable(t, a.Flavor(), a.OpenDB(t, ""), table)
	}

	errWindow := lastErr - killS
	verdict := "PASS"
	switch {
	case recovered < 0 || recovered > recovery:
		verdict = fmt.Sprintf("FAIL: throughput not back to half within %d s (%.0f s)", recovery, recovered)
	case lastErr > 0 && errWindow > recovery:
		verdict = fmt.Sprintf("FAIL: statement errors %.0f s after the kill", errWindow)
	}
	out := os.Getenv("BASALT_CHAOS_OUT")
	if out == "" {
		out = t.TempDir()
	}
	chart := filepath.Join(out, "chaos-store-kill.png")
	if err := bench.WriteTimeChart(chart, "oltp_read_write, 8 threads: a store killed and restarted", iv,
		[]bench.ChartMark{{Second: killS, Label: victim + " killed"}, {Second: restarted.Seconds(), Label: "restarted"}}); err != nil {
		t.Error(err)
	}
	t.Logf("verdict: %s; %.0f QPS before the kill, back to half in %.0f s, last error at %.0f s after it, %d errors retried; bank: %v; chart %s",
		verdict, before/float64(n), recovered, max(errWindow, 0), r.res.IgnoredErrors, stats, chart)
	if verdict != "PASS" {
		t.Error(verdict)
	}
}

// mostLeaders is the name of the store that leads the most regions, as
// PD counts them.
func mostLeaders(t *testing.T, c *testkit.Cluster) string {
	t.Helper()
	resp, err := http.Get("http://" + c.PD + "/pd/api/v1/stores")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Stores []struct {
			Store struct {
				Address string `json:"address"`
			} `json:"store"`
			Status struct {
				LeaderCount int `json:"leader_count"`
			} `json:"status"`
		} `json:"stores"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	best, leaders := "", -1
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("store%d", i)
		for _, s := range list.Stores {
			if strings.EqualFold(s.Store.Address, c.StoreAddr(name)) && s.Status.LeaderCount > leaders {
				best, leaders = name, s.Status.LeaderCount
			}
		}
	}
	if best == "" {
		t.Fatalf("PD lists none of the stores: %+v", list)
	}
	return best
}

// clusterFault reports whether err is one a SQL node reports while a
// store is down or its regions elect new leaders, after which a client
// retries its transaction: TiDB's 9001, 9002 and 9005 (PD, store, region
// unavailable), and the abort of a transaction whose pipelined
// pessimistic lock was lost with its leader (TiKV's
// PessimisticLockNotFound, which TiDB also reports as 1105).
func clusterFault(err error) bool {
	switch errCode(err) {
	case 9001, 9002, 9005:
		return true
	case 1105:
		return strings.Contains(err.Error(), "pessimistic lock not found")
	}
	return false
}
