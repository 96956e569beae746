package e2e

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestBulkLoadThroughput measures the ordinary bulk paths side by side
// with MariaDB, on fresh servers, in alternating rounds (the machine is
// shared: compare the ratios of one run, not the absolute figures):
//
//  1. sysbench oltp_common prepare --tables=1 --table-size=N
//     (BASALT_BULK_ROWS, default 1000000): its multi-row INSERTs, then
//     its CREATE INDEX k_1;
//  2. CREATE INDEX k2 ON sbtest1 (k) on the loaded table (ADD INDEX);
//  3. ANALYZE TABLE sbtest1;
//  4. the row count, and ADMIN CHECK TABLE (MariaDB: CHECK TABLE).
//
// For each step it prints the wall time and the server's CPU time, and
// at the end, round by round, Basalt's speed relative to MariaDB's
// (MariaDB's wall time over Basalt's: for prepare, the ratio of rows per
// second) and its CPU time relative to MariaDB's. MariaDB's
// buffer pool is set to 2 GB, more than the data. BASALT_BULK_ROUNDS
// (default 2) rounds; BASALT_BULK_BASELINE=/path/to/basalt adds an older
// build to each round, to measure a change against. A measurement, not a
// pass/fail test: it runs only with BASALT_BULK_BENCH=1. docs/bulkload.md
// has its figures.
func TestBulkLoadThroughput(t *testing.T) {
	if os.Getenv("BASALT_BULK_BENCH") == "" {
		t.Skip("set BASALT_BULK_BENCH=1 to run the bulk load measurement")
	}
	rows := envInt("BASALT_BULK_ROWS", 1000000)
	rounds := envInt("BASALT_BULK_ROUNDS", 2)
	flavors := []string{"basalt", "mariadb"}
	baseline := os.Getenv("BASALT_BULK_BASELINE")
	if baseline != "" {
		flavors = append(flavors, "baseline")
	}
	type step struct{ wall, cpu []time.Duration }
	steps := []string{"prepare", "add index", "analyze"}
	res := map[string]map[string]*step{}
	for _, f := range flavors {
		res[f] = map[string]*step{}
		for _, s := range steps {
			res[f][s] = &step{}
		}
	}
	for round := range rounds {
		order := flavors
		if round%2 == 1 {
			order = slices.Clone(flavors)
			slices.Reverse(order)
		}
		for _, f := range order {
			var srv *testkit.Server
			switch f {
			case "basalt":
				srv = testkit.StartBasalt(t, testkit.BasaltOptions{})
			case "baseline":
				srv = testkit.StartBasalt(t, testkit.BasaltOptions{Bin: baseline})
			default:
				srv = testkit.StartMariaDB(t)
			}
			db := srv.OpenDB(t, "")
			mustExec(t, db, "CREATE DATABASE sbtest")
			if f == "mariadb" {
				mustExec(t, db, "SET GLOBAL innodb_buffer_pool_size = 2147483648")
			}
			measure := func(name string, run func()) {
				c0, w0 := procCPU(t, srv.PID()), time.Now()
				run()
				wall, cpu := time.Since(w0), procCPU(t, srv.PID())-c0
				res[f][name].wall = append(res[f][name].wall, wall)
				res[f][name].cpu = append(res[f][name].cpu, cpu)
				t.Logf("round %d %-8s %-9s wall %7.2fs  server cpu %7.2fs", round+1, f, name, wall.Seconds(), cpu.Seconds())
			}
			measure("prepare", func() {
				runSysbench(t, srv, "oltp_common", "prepare", "--tables=1", "--table-size="+strconv.Itoa(rows))
			})
			measure("add index", func() { mustExec(t, db, "CREATE INDEX k2 ON sbtest.sbtest1 (k)") })
			measure("analyze", func() { mustExec(t, db, "ANALYZE TABLE sbtest.sbtest1") })
			var n int
			if err := db.QueryRow("SELECT COUNT(*) FROM sbtest.sbtest1").Scan(&n); err != nil || n != rows {
				t.Fatalf("%s: %d rows (%v), want %d", f, n, err, rows)
			}
			checkTable(t, srv.Flavor(), db, "sbtest.sbtest1")
			t.Logf("round %d %-8s peak RSS %.0f MiB", round+1, f, float64(peakRSS(t, srv.PID()))/(1<<20))
			db.Close()
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each round's ratios compare runs next to each other in time; the
	// machine's load changes between rounds.
	var b strings.Builder
	fmt.Fprintf(&b, "%d rows; Basalt's speed (MariaDB's wall time over its own) and CPU time relative to MariaDB, by round:\n", rows)
	for _, s := range steps {
		m := res["mariadb"][s]
		for _, f := range flavors {
			if f == "mariadb" {
				continue
			}
			r := res[f][s]
			fmt.Fprintf(&b, "  %-9s %-8s", s, f)
			for i := range rounds {
				fmt.Fprintf(&b, "  speed %5.2fx cpu %5.2fx (%.2fs vs %.2fs)", m.wall[i].Seconds()/r.wall[i].Seconds(),
					r.cpu[i].Seconds()/max(m.cpu[i].Seconds(), 0.01), r.wall[i].Seconds(), m.wall[i].Seconds())
			}
			b.WriteString("\n")
		}
	}
	t.Log(b.String())
}

// procCPU is the CPU time (user and system) process pid has used.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// The fields after the command's ")": state is the 3rd field of the
	// line, utime and stime the 14th and 15th, in clock ticks (100/s).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
