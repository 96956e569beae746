package testkit

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/bench"
)

// SysbenchResult is what one sysbench invocation printed and the figures of
// its summary; the figures are zero for commands without a summary
// (prepare, cleanup).
type SysbenchResult struct {
	Output       string
	Transactions int64
	TPS          float64
	Queries      int64
	QPS          float64
	// IgnoredErrors counts the errors after which sysbench rolled back and
	// retried the transaction: by default deadlocks (1213) and lock wait
	// timeouts (1205, 1020). They are normal under contention.
	IgnoredErrors int64
	// Reconnects counts connections sysbench re-established after losing
	// them.
	Reconnects int64
}

// Sysbench runs sysbench against srv's database sbtest as root over TCP:
//
//	sysbench --mysql-host=127.0.0.1 --mysql-port=P --mysql-user=root
//	         --mysql-password= --mysql-db=sbtest --db-driver=mysql args...
//
// args follow the connection options, so a later --mysql-db=... wins. The
// error is non-nil when sysbench exits with a non-zero status or prints a
// FATAL line (which is how it reports a statement that failed); it quotes
// those lines, or the end of the output if there are none. sysbench is killed a minute before the test's deadline so
// that a hung server fails the test with its output rather than a panic.
// It skips the test when sysbench is not installed.
func Sysbench(t testing.TB, srv *Server, args ...string) (SysbenchResult, error) {
	t.Helper()
	bin, err := exec.LookPath("sysbench")
	if err != nil {
		t.Skip("testkit: sysbench is not installed (apt-get install sysbench)")
	}
	ctx := context.Background()
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
			defer cancel()
		}
	}
	cmdline := append([]string{
		"--mysql-host=" + srv.Host(),
		"--mysql-port=" + strconv.Itoa(srv.Port()),
		"--mysql-user=root",
		"--mysql-password=",
		"--mysql-db=sbtest",
		"--db-driver=mysql",
	}, args...)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, cmdline...)
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()

	res := parseSysbench(out.String())
	fatal := bench.FatalLines(res.Output)
	switch {
	case runErr != nil && len(fatal) == 0:
		return res, fmt.Errorf("sysbench %s: %v; its output ends:\n%s", strings.Join(args, " "), runErr, bench.Tail(res.Output, 20))
	case runErr != nil:
		return res, fmt.Errorf("sysbench %s: %v\n%s", strings.Join(args, " "), runErr, strings.Join(fatal, "\n"))
	case len(fatal) > 0:
		return res, fmt.Errorf("sysbench %s reported errors:\n%s", strings.Join(args, " "), strings.Join(fatal, "\n"))
	}
	return res, nil
}

// parseSysbench reads the figures of sysbench 1.0's summary.
func parseSysbench(out string) SysbenchResult {
	sum, _ := bench.ParseSummary(out)
	return SysbenchResult{Output: out, Transactions: sum.Transactions, TPS: sum.TPS,
		Queries: sum.Queries, QPS: sum.QPS, IgnoredErrors: sum.Errors, Reconnects: sum.Reconnects}
}
