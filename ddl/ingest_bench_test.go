package ddl_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/store/local"
)

// BenchmarkCreateIndex builds a non-unique index on k of a sysbench table
// (BASALT_BENCH_ROWS rows, default 100000) on the embedded store: by
// ingestion (tidb_ddl_enable_fast_reorg on) and in transactions (off),
// side by side. Each iteration creates the index and drops it again (the
// drop is not timed). cpu-ns/op is the process's CPU time per build;
// each build starts once Pebble has no flush or compaction running (the
// inserts' and the last drop's), so that it is the build's own, as far
// as it can be.
func BenchmarkCreateIndex(b *testing.B) {
	rows := 100000
	if n, err := strconv.Atoi(os.Getenv("BASALT_BENCH_ROWS")); err == nil && n > 0 {
		rows = n
	}
	h := newHarness(b)
	ctx := context.Background()
	exec := func(ctx context.Context, q string) {
		stmts, err := parserdriver.Parse(h.p, q)
		if err != nil {
			b.Fatal(err)
		}
		var out strings.Builder
		for _, s := range stmts {
			if err := h.exec(ctx, &out, s, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	exec(ctx, "CREATE TABLE sbtest1 (id INT NOT NULL, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id))")
	r := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		var sb strings.Builder
		for i := range n {
			if i > 0 && i%12 == 11 {
				sb.WriteByte('-')
				continue
			}
			sb.WriteByte(byte('0' + r.IntN(10)))
		}
		return sb.String()
	}
	for i := 0; i < rows; {
		var sb strings.Builder
		sb.WriteString("INSERT INTO sbtest1 VALUES ")
		for j := 0; j < 1000 && i < rows; j++ {
			i++
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(%d, %d, '%s', '%s')", i, 1+r.IntN(rows), digits(119), digits(59))
		}
		stmts, err := parserdriver.Parse(h.p, sb.String())
		if err != nil {
			b.Fatal(err)
		}
		if err := h.insert(ctx, stmts[0]); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"ingest", ctx}, {"txn", ddl.WithoutFastReorg(ctx)}} {
		b.Run(c.name, func(b *testing.B) {
			var cpu time.Duration
			for range b.N {
				b.StopTimer()
				settle(b, h.store)
				b.StartTimer()
				c0 := processCPU()
				exec(c.ctx, "CREATE INDEX k2 ON sbtest1 (k)")
				cpu += processCPU() - c0
				b.StopTimer()
				exec(ctx, "DROP INDEX k2 ON sbtest1")
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
		})
	}
}

// settle waits, up to a minute, until the store's engine runs no flush
// or compaction.
func settle(b *testing.B, st kv.Storage) {
	ls, ok := st.(*local.Store)
	if !ok {
		return
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		m := ls.Metrics()
		if m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Log("Pebble still compacting after a minute")
}

// processCPU is the CPU time (user and system) the process has used: the
// build's goroutines and Pebble's background work alike.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
