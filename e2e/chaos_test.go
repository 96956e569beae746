package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// skipUnlessChaos skips a fault test unless BASALT_CHAOS is set, and, if
// it runs sysbench, unless sysbench is installed.
func skipUnlessChaos(t *testing.T, sysbench bool) {
	t.Helper()
	if os.Getenv(chaosEnv) == "" {
		t.Skip("a fault test: set " + chaosEnv + "=1 (make chaos)")
	}
	if _, err := exec.LookPath("sysbench"); sysbench && err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
}

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
// error but deadlocks and lock wait timeouts falls within those 10 s, the bank's invariant holds in every
// snapshot read and after the run (no acknowledged transfer lost), and
// the sysbench tables pass ADMIN CHECK TABLE. It prints a one-line
// verdict and writes a chart of throughput over time with the kill and
// the restart marked.
func TestChaosStoreKill(t *testing.T) {
	skipUnlessChaos(t, true)
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
	load := startChaosSysbench(t, a, runFor, tables, "all", false)
	run := newCrashRun()
	run.retryAlso = clusterFault
	stats := bk.start(t, b, run, []txnMode{pessimistic}, rand.New(rand.NewPCG(1, 2)))

	start := load.start
	time.Sleep(killAt - time.Since(start))
	victim := mostLeaders(t, c)
	c.Kill(victim)
	killed := time.Since(start)
	t.Logf("%s killed at %.1fs", victim, killed.Seconds())
	time.Sleep(restartAt - time.Since(start))
	c.StartStore(victim)
	restarted := time.Since(start)
	t.Logf("%s restarted at %.1fs", victim, restarted.Seconds())
	r := load.wait(t)
	run.stop.Store(true)
	run.wg.Wait()

	killS := killed.Seconds()
	rec := recoveryAfter(t, r, killS)
	bk.verify(t, b)
	for _, table := range []string{"sbtest.sbtest1", "sbtest.sbtest2"} {
		checkTable(t, a.Flavor(), a.OpenDB(t, ""), table)
	}

	verdict := failedVerdict(t, rec.verdict(recovery))
	chart := writeChaosChart(t, "chaos-store-kill.png", "oltp_read_write, 8 threads: a store killed and restarted", rec.iv,
		[]bench.ChartMark{{Second: killS, Label: victim + " killed"}, {Second: restarted.Seconds(), Label: "restarted"}})
	t.Logf("verdict: %s; %s; bank: %v; chart %s", verdict, rec, stats, chart)
	if verdict != "PASS" {
		t.Error(verdict)
	}
}

// chaosSysbench is sysbench oltp_read_write running in the background
// for a fault test: 8 threads, a report every second, and the errors its
// --mysql-ignore-errors names counted and retried rather than fatal.
type chaosSysbench struct {
	// start is when the first run started: the reports' seconds count
	// from it, and so should a test's marks.
	start time.Time
	done  chan chaosLoad
}

// chaosLoad is what sysbench did over a fault test's run: its reports,
// each at its second since the first run started, its summaries' errors
// and reconnections, and when it crashed (see startChaosSysbench).
type chaosLoad struct {
	iv                 []bench.Interval
	errors, reconnects int64
	// byCode counts the errors sysbench ignored, by code; faultErrs are
	// the seconds of those a fault causes (not deadlocks and lock wait
	// timeouts, which contention alone causes).
	byCode    map[int]int
	faultErrs []float64
	crashes   []float64 // seconds since the start
	output    string
	err       error
}

// sysbenchReconnecting is the --mysql-ignore-errors of a run whose
// connections may break: the lost connection (2013, 2006, 2055), after
// which sysbench reconnects, and the errors a SQL node reports while the
// cluster recovers (deadlock and lock wait timeout, TiDB's 9001, 9002,
// 9005, write conflicts, and 1105, which also carries "execution result
// undetermined"); any other error is fatal, as it is not with "all".
// Debian's sysbench 1.0.20, linked with libmariadb, crashes with SIGSEGV
// when it re-establishes a lost connection (here with these codes and
// with "all"; it reuses the closed handle, akopytov/sysbench#527 and
// #528): startChaosSysbench restarts it.
const sysbenchReconnecting = "1213,1205,1020,2013,2006,2055,9001,9002,9005,9007,8002,8022,1105"

// startChaosSysbench runs sysbench on srv for runFor. With restart, a
// sysbench that crashes (a signal, not an exit) or cannot make its first
// connections is started again for the rest of the time, and the crash
// recorded; any other failure, or a crash without restart, fails the
// test when it waits.
func startChaosSysbench(t *testing.T, srv *testkit.Server, runFor time.Duration, tables []string, ignore string, restart bool) *chaosSysbench {
	l := &chaosSysbench{start: time.Now(), done: make(chan chaosLoad, 1)}
	go func() {
		var load chaosLoad
		start := l.start
		for left := runFor; left >= 2*time.Second; left = runFor - time.Since(start) {
			offset := time.Since(start).Seconds()
			// --verbosity=5 logs each ignored error ("Ignoring error
			// 1213 ...") between the reports.
			args := append(append([]string{"oltp_read_write"}, tables...), "--threads=8", "--report-interval=1",
				fmt.Sprintf("--time=%d", int(left.Seconds())), "--mysql-ignore-errors="+ignore, "--verbosity=5", "run")
			res, err := testkit.Sysbench(t, srv, args...)
			for _, v := range bench.ParseIntervals(res.Output) {
				v.Second += offset
				load.iv = append(load.iv, v)
			}
			load.ignored(res.Output, offset)
			load.errors += res.IgnoredErrors
			load.reconnects += res.Reconnects
			load.output += res.Output
			// sysbench does not retry its first connections: HAProxy may
			// still send one to the dead node.
			if err != nil && restart && (strings.Contains(err.Error(), "signal: ") || strings.Contains(err.Error(), "unable to connect")) {
				load.crashes = append(load.crashes, time.Since(start).Seconds())
				time.Sleep(200 * time.Millisecond)
				continue
			}
			load.err = err
			break
		}
		l.done <- load
	}()
	return l
}

var (
	sysbenchReport  = regexp.MustCompile(`^\[ (\d+)s \]`)
	sysbenchIgnored = regexp.MustCompile(`Ignoring error (\d+)`)
)

// ignored reads the errors one sysbench run that started offset seconds
// into the test logged as ignored, each in the second after the last
// report before it.
func (l *chaosLoad) ignored(out string, offset float64) {
	if l.byCode == nil {
		l.byCode = map[int]int{}
	}
	sec := 0
	for _, line := range strings.Split(out, "\n") {
		if m := sysbenchReport.FindStringSubmatch(line); m != nil {
			sec, _ = strconv.Atoi(m[1])
			continue
		}
		if m := sysbenchIgnored.FindStringSubmatch(line); m != nil {
			code, _ := strconv.Atoi(m[1])
			l.byCode[code]++
			if code != 1213 && code != 1205 && code != 1020 {
				l.faultErrs = append(l.faultErrs, offset+float64(sec+1))
			}
		}
	}
}

// wait waits for sysbench to end and fails the test if it failed.
func (l *chaosSysbench) wait(t *testing.T) chaosLoad {
	t.Helper()
	r := <-l.done
	if r.err != nil {
		t.Fatalf("sysbench: %v", r.err)
	}
	return r
}

// recovery is what sysbench's intervals say of a fault at second fault:
// the mean QPS before it (after 2 s of warm-up), how long after it QPS was
// first back to half that (-1: never), the second of the last error the
// fault caused or reconnection (0: none), and the load's totals.
type recovery struct {
	chaosLoad
	fault             float64
	before, recovered float64
	lastErr           float64
}

func recoveryAfter(t *testing.T, load chaosLoad, fault float64) recovery {
	t.Helper()
	rec := recovery{chaosLoad: load, fault: fault, recovered: -1}
	n := 0
	for _, v := range rec.iv {
		switch {
		case v.Second <= fault && v.Second > 2:
			rec.before += v.QPS
			n++
		case v.Second > fault && rec.recovered < 0 && n > 0 && v.QPS >= rec.before/float64(n)/2:
			rec.recovered = v.Second - fault
		}
		if v.ReconnPerSec > 0 {
			rec.lastErr = max(rec.lastErr, v.Second)
		}
	}
	for _, e := range load.faultErrs {
		rec.lastErr = max(rec.lastErr, e)
	}
	if n == 0 {
		t.Fatalf("no interval before the fault:\n%s", load.output)
	}
	rec.before /= float64(n)
	return rec
}

// errWindow is how long after the fault sysbench last saw an error or
// reconnected (0: never after it).
func (r recovery) errWindow() float64 { return max(r.lastErr-r.fault, 0) }

// verdict is "PASS" if throughput was back to half within limit seconds
// of the fault, and sysbench's errors (but deadlocks and lock wait
// timeouts, which contention alone causes) and reconnections all fell
// within them.
func (r recovery) verdict(limit float64) string {
	switch {
	case r.recovered < 0 || r.recovered > limit:
		return fmt.Sprintf("FAIL: throughput not back to half within %.0f s (%.0f s)", limit, r.recovered)
	case r.errWindow() > limit:
		return fmt.Sprintf("FAIL: statement errors %.0f s after the fault", r.errWindow())
	}
	// An error is placed at the end of the second it was logged in, and
	// sysbench's clock starts up to a second after the test's.
	for _, e := range r.faultErrs {
		if e < r.fault-1 {
			return fmt.Sprintf("FAIL: a statement error at %.0f s, before the fault", e)
		}
	}
	for _, c := range r.crashes {
		if c < r.fault-1 || c > r.fault+limit {
			return fmt.Sprintf("FAIL: sysbench crashed at %.0f s, %.0f s from the fault", c, c-r.fault)
		}
	}
	return "PASS"
}

// failedVerdict is v, unless v passes and the test has already failed
// (a workload client reported a broken invariant, say): then a FAIL that
// points at the errors above.
func failedVerdict(t *testing.T, v string) string {
	if v == "PASS" && t.Failed() {
		return "FAIL: see the errors above"
	}
	return v
}

func (r recovery) String() string {
	out := fmt.Sprintf("%.0f QPS before the fault, back to half in %.0f s, last error (other than a deadlock or lock wait timeout) or reconnection %.0f s after it, %d errors retried (by code: %v), %d reconnections",
		r.before, r.recovered, r.errWindow(), r.errors, r.byCode, r.reconnects)
	if len(r.crashes) > 0 {
		out += fmt.Sprintf(", sysbench crashed and restarted at %.1f s", r.crashes)
	}
	return out
}

// writeChaosChart writes a chart of QPS over time, with marks, to
// $BASALT_CHAOS_OUT (or the test's temporary directory) and returns its
// path.
func writeChaosChart(t *testing.T, file, title string, iv []bench.Interval, marks []bench.ChartMark) string {
	t.Helper()
	out := os.Getenv("BASALT_CHAOS_OUT")
	if out == "" {
		out = t.TempDir()
	}
	chart := filepath.Join(out, file)
	if err := bench.WriteTimeChart(chart, title, iv, marks); err != nil {
		t.Error(err)
	}
	return chart
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
