package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pingcap/log"
	pd "github.com/tikv/pd/client"
	"github.com/tikv/pd/client/opt"
	"github.com/tikv/pd/client/pkg/caller"
	"go.uber.org/zap"

	"github.com/basalt-db/basalt/bench"
	"github.com/basalt-db/basalt/testkit"
)

// TestChaosPDLeaderKill kills the PD leader of three members with
// SIGKILL under load, and restarts it: 3 PD members, 3 stores, SQL nodes
// A and B behind HAProxy, sysbench oltp_read_write (8 threads, errors
// counted and retried) and the bank workload through HAProxy, and
// tsoClients goroutines asking PD for timestamps through pd/client, as a
// SQL node does. The leader dies at 10 s and returns at 25 s of a 40 s
// run. It fails unless a timestamp is issued again within 5 s of the
// kill; every timestamp is greater than every one whose request had
// returned before it was asked for (so none is issued twice, and none
// goes back across the change of leader); the SQL throughput is back to
// half its level before the kill within 10 s and sysbench's errors stop
// within those 10 s; the bank's invariant holds in every snapshot and
// after the run, and the tables pass ADMIN CHECK TABLE. It prints a
// one-line verdict and writes a chart of throughput with the kill and the
// restart marked.
func TestChaosPDLeaderKill(t *testing.T) {
	skipUnlessChaos(t, true)
	const (
		runFor     = 40 * time.Second
		killAt     = 10 * time.Second
		restartAt  = 25 * time.Second
		recovery   = 10 // seconds
		tsoBack    = 5 * time.Second
		tsoClients = 4
	)
	// pd/client logs every reconnection at info.
	log.SetLevel(zap.ErrorLevel)
	c := testkit.StartClusterPDs(t, 3, 3, chaosStoreConfig)
	a, b := c.StartSQLNode(t), c.StartSQLNode(t)
	lb := testkit.StartHAProxy(t, a, b)
	mustExec(t, lb.OpenDB(t, ""), "CREATE DATABASE sbtest")
	tables := []string{"--tables=2", "--table-size=10000"}
	runSysbench(t, lb, "oltp_common", "prepare", tables...)
	bk := newBank(t, lb)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cli, err := pd.NewClientWithContext(ctx, caller.TestComponent, c.PDs, pd.SecurityOption{},
		opt.WithCustomTimeoutOption(5*time.Second))
	if err != nil {
		t.Fatalf("pd/client: %v", err)
	}
	defer cli.Close()
	tso := &tsoLoop{cli: cli}
	for range tsoClients {
		tso.wg.Go(func() { tso.run(ctx) })
	}

	load := startChaosSysbench(t, lb, runFor, tables, "all", false)
	run := newCrashRun()
	run.retryAlso = clusterFault
	stats := bk.start(t, lb, run, []txnMode{pessimistic}, rand.New(rand.NewPCG(5, 6)))

	start := load.start // sysbench reports seconds from here
	time.Sleep(killAt - time.Since(start))
	victim := c.PDLeader()
	tso.killed.Store(time.Now().UnixNano())
	c.Kill(victim)
	killed := time.Since(start)
	t.Logf("PD leader %s killed at %.1fs", victim, killed.Seconds())
	time.Sleep(restartAt - time.Since(start))
	c.StartPD(victim)
	restarted := time.Since(start)
	t.Logf("%s restarted at %.1fs; the leader is now %s", victim, restarted.Seconds(), c.PDLeader())
	r := load.wait(t)
	run.stop.Store(true)
	run.wg.Wait()
	cancel()
	tso.wg.Wait()

	killS := killed.Seconds()
	rec := recoveryAfter(t, r, killS)
	bk.verify(t, lb)
	for _, table := range []string{"sbtest.sbtest1", "sbtest.sbtest2"} {
		checkTable(t, lb.Flavor(), lb.OpenDB(t, ""), table)
	}

	all := slices.Concat(tso.got...)
	slices.Sort(all)
	dups := len(all) - len(slices.Compact(all))
	back := time.Duration(tso.firstAfter.Load() - tso.killed.Load())
	verdict := failedVerdict(t, rec.verdict(recovery))
	switch {
	case verdict != "PASS":
	case tso.behind.Load() > 0 || dups > 0:
		verdict = fmt.Sprintf("FAIL: %d timestamps not above one issued before them was asked for, %d issued twice: %s",
			tso.behind.Load(), dups, tso.firstBehind.Load())
	case tso.firstAfter.Load() == 0 || back > tsoBack:
		verdict = fmt.Sprintf("FAIL: no timestamp within %v of the kill (%v)", tsoBack, back.Round(time.Millisecond))
	}
	chart := writeChaosChart(t, "chaos-pd-leader-kill.png", "oltp_read_write via HAProxy, 8 threads: the PD leader of 3 killed and restarted", rec.iv,
		[]bench.ChartMark{{Second: killS, Label: victim + " (PD leader) killed"}, {Second: restarted.Seconds(), Label: "restarted"}})
	t.Logf("verdict: %s; TSO back %v after the kill, %d timestamps, %d requests failed, none twice or out of order; %s; bank: %v; chart %s",
		verdict, back.Round(time.Millisecond), len(all), tso.errors.Load(), rec, stats, chart)
	if verdict != "PASS" {
		t.Error(verdict)
	}
}

// tsoLoop asks PD for timestamps from several goroutines, checking that
// each is above the highest one returned before it was asked for.
type tsoLoop struct {
	cli pd.Client
	wg  sync.WaitGroup
	// high is the highest timestamp returned so far.
	high atomic.Uint64
	// killed is when the leader was killed, firstAfter when the first
	// timestamp asked for after that arrived (Unix nanoseconds).
	killed, firstAfter atomic.Int64
	errors, behind     atomic.Int64
	firstBehind        atomic.Value // string
	mu                 sync.Mutex
	got                [][]uint64
}

func (l *tsoLoop) run(ctx context.Context) {
	var got []uint64
	defer func() {
		l.mu.Lock()
		l.got = append(l.got, got)
		l.mu.Unlock()
	}()
	for ctx.Err() == nil {
		floor := l.high.Load()
		asked := time.Now().UnixNano()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		p, lg, err := l.cli.GetTS(rctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				l.errors.Add(1)
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		ts := uint64(p)<<18 | uint64(lg)
		if ts <= floor {
			if l.behind.Add(1) == 1 {
				l.firstBehind.Store(fmt.Sprintf("%d after %d had been returned", ts, floor))
			}
		}
		for h := l.high.Load(); ts > h && !l.high.CompareAndSwap(h, ts); h = l.high.Load() {
		}
		if k := l.killed.Load(); k != 0 && asked > k {
			l.firstAfter.CompareAndSwap(0, time.Now().UnixNano())
		}
		got = append(got, ts)
		time.Sleep(2 * time.Millisecond)
	}
}
