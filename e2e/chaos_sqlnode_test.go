package e2e

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/basalt-db/basalt/bench"
	"github.com/basalt-db/basalt/testkit"
)

// TestChaosSQLNodeKill kills one of two SQL nodes behind HAProxy with
// SIGKILL under load: 1 PD, 3 stores, SQL nodes A and B, and HAProxy in
// front of them as basalt playground runs it; sysbench oltp_read_write
// (8 threads, errors counted and retried, lost connections
// re-established, and sysbench restarted if it crashes doing so: see
// sysbenchReconnecting) and the bank workload (clients whose connection breaks
// take a new one) both go through HAProxy. Just before the kill, a
// pessimistic transaction on A locks the rows of bank.held (B's lock wait
// times out on them, showing they are held); A dies at 10 s of a 45 s
// run, holding them. It fails unless B can then update those rows within
// client-go's lock TTL (20 s) and a 10 s margin, with A's uncommitted
// update absent; throughput is back to half its level before the kill
// within 10 s, and sysbench's errors and the bank's broken connections
// stop within those 10 s; the bank's invariant holds in every snapshot
// and after the run (no acknowledged transfer lost), and the tables pass
// ADMIN CHECK TABLE. It prints a one-line verdict and writes a chart of
// throughput with the kill and the lock's release marked.
func TestChaosSQLNodeKill(t *testing.T) {
	skipUnlessChaos(t, true)
	const (
		runFor   = 45 * time.Second
		killAt   = 10 * time.Second
		recovery = 10 // seconds
		// lockTTL is client-go's ManagedLockTTL: a pessimistic lock whose
		// transaction stops sending heartbeats expires this long after
		// the last one, and may then be rolled back by another.
		lockTTL    = 20 * time.Second
		lockMargin = 10 * time.Second
	)
	c := testkit.StartCluster(t, 3, chaosStoreConfig)
	a, b := c.StartSQLNode(t), c.StartSQLNode(t)
	lb := testkit.StartHAProxy(t, a, b)
	mustExec(t, lb.OpenDB(t, ""), "CREATE DATABASE sbtest")
	tables := []string{"--tables=2", "--table-size=10000"}
	runSysbench(t, lb, "oltp_common", "prepare", tables...)
	bk := newBank(t, lb)
	onB := b.OpenDB(t, "bank")
	mustExecAll(t, onB, "CREATE TABLE held (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO held VALUES (1, 0), (2, 0), (3, 0)")

	load := startChaosSysbench(t, lb, runFor, tables, sysbenchReconnecting, true)
	run := newCrashRun()
	run.retryAlso = clusterFault
	run.reconnect = true
	stats := bk.start(t, lb, run, []txnMode{pessimistic}, rand.New(rand.NewPCG(3, 4)))

	start := load.start // sysbench reports seconds from here
	time.Sleep(killAt - 2*time.Second - time.Since(start))
	// The transaction A dies in: it has locked bank.held's rows and
	// written them (in its memory buffer) but not committed.
	ctx := context.Background()
	holder, err := a.OpenDB(t, "bank").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"SET SESSION tidb_txn_mode = 'pessimistic'", "BEGIN", "UPDATE held SET v = v + 1"} {
		if _, err := holder.ExecContext(ctx, s); err != nil {
			t.Fatalf("on A: %s: %v", s, err)
		}
	}
	probe, err := onB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if _, err := probe.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := probe.ExecContext(ctx, "UPDATE held SET v = v + 10 WHERE id = 1"); errCode(err) != 1205 {
		t.Fatalf("on B, updating a row A's transaction locked: %v; want error 1205 (lock wait timeout)", err)
	}
	time.Sleep(killAt - time.Since(start))
	a.Kill()
	holder.Close()
	killed := time.Since(start)
	t.Logf("SQL node A killed at %.1fs", killed.Seconds())

	// B updates the rows A's dead transaction locked.
	if _, err := probe.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 100"); err != nil {
		t.Fatal(err)
	}
	if _, err := probe.ExecContext(ctx, "UPDATE held SET v = v + 10"); err != nil {
		t.Fatalf("on B, updating the rows A's transaction had locked: %v", err)
	}
	released := time.Since(start)
	lockWait := released - killed
	t.Logf("A's locks released %.1fs after the kill", lockWait.Seconds())
	if got := poolInts(t, onB, "SELECT SUM(v), COUNT(*) FROM held"); got[0][0] != 30 || got[0][1] != 3 {
		t.Errorf("bank.held: SUM(v), COUNT(*) = %v; want 30, 3 (B's +10 on each row, none of A's +1)", got[0])
	}

	r := load.wait(t)
	run.stop.Store(true)
	run.wg.Wait()

	killS := killed.Seconds()
	rec := recoveryAfter(t, r, killS)
	bk.verify(t, lb)
	for _, table := range []string{"sbtest.sbtest1", "sbtest.sbtest2"} {
		checkTable(t, b.Flavor(), b.OpenDB(t, ""), table)
	}

	verdict := failedVerdict(t, rec.verdict(recovery))
	bankBreaks := 0.0
	if last := stats.lastBreak.Load(); last > 0 {
		bankBreaks = time.Unix(0, last).Sub(start.Add(killed)).Seconds()
	}
	switch {
	case verdict != "PASS":
	case lockWait > lockTTL+lockMargin:
		verdict = "FAIL: the dead node's locks held for " + lockWait.Round(time.Second).String()
	case bankBreaks > recovery:
		verdict = "FAIL: bank connections broke " + time.Duration(bankBreaks*float64(time.Second)).Round(time.Second).String() + " after the kill"
	}
	chart := writeChaosChart(t, "chaos-sqlnode-kill.png", "oltp_read_write via HAProxy, 8 threads: one of 2 SQL nodes killed", rec.iv,
		[]bench.ChartMark{{Second: killS, Label: "SQL node killed"}, {Second: released.Seconds(), Label: "its locks released"}})
	t.Logf("verdict: %s; %s; the dead node's locks released %.1f s after the kill; bank: %v, the last connection broke %.1f s after the kill; chart %s",
		verdict, rec, lockWait.Seconds(), stats, bankBreaks, chart)
	if verdict != "PASS" {
		t.Error(verdict)
	}
}
