package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/testkit"
)

// TestCompareWithMariaDB runs the seven core workloads of the Sysbench
// reports against Basalt and against a Debian MariaDB with default
// settings, one after the other on this machine, and prints QPS, 95th
// percentile latency and the Basalt/MariaDB ratio per workload, and
// Basalt's peak RSS. It is a measurement, not a pass/fail test: it runs
// only with BASALT_COMPARE=1 (BASALT_COMPARE_SECONDS, default 30;
// BASALT_COMPARE_ROWS, default 100000 per table; 4 tables, 16 threads).
func TestCompareWithMariaDB(t *testing.T) {
	if os.Getenv("BASALT_COMPARE") == "" {
		t.Skip("set BASALT_COMPARE=1 to run the side-by-side measurement")
	}
	secs := envInt("BASALT_COMPARE_SECONDS", 30)
	rows := envInt("BASALT_COMPARE_ROWS", 100000)
	workloads := []string{"oltp_point_select", "oltp_read_only", "oltp_write_only", "oltp_read_write",
		"oltp_update_index", "oltp_update_non_index", "oltp_insert"}
	tables := []string{"--tables=4", fmt.Sprintf("--table-size=%d", rows)}
	run := []string{fmt.Sprintf("--time=%d", secs), "--threads=16", "--db-ps-mode=auto"}

	type result struct{ qps, p95 float64 }
	results := map[string]map[string]result{}
	var peakRSS string
	for _, target := range []string{"basalt", "mariadb"} {
		srv := testkit.StartTarget(t, target)
		admin := srv.OpenDB(t, "")
		mustExec(t, admin, "CREATE DATABASE sbtest")
		runSysbench(t, srv, "oltp_common", "prepare", tables...)
		if target == "basalt" {
			for i := 1; i <= 4; i++ {
				mustExec(t, admin, fmt.Sprintf("ANALYZE TABLE sbtest.sbtest%d", i))
			}
		}
		results[target] = map[string]result{}
		for _, w := range workloads {
			res := runSysbench(t, srv, w, "run", append(tables, run...)...)
			results[target][w] = result{qps: res.QPS, p95: p95(res.Output)}
		}
		if target == "basalt" {
			peakRSS = vmHWM(srv.PID())
		}
		srv.Stop()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| workload | Basalt QPS | Basalt p95 (ms) | MariaDB QPS | MariaDB p95 (ms) | QPS ratio |\n|---|---|---|---|---|---|\n")
	for _, w := range workloads {
		bs, ms := results["basalt"][w], results["mariadb"][w]
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %.0f | %.2f | %.2fx |\n", w, bs.qps, bs.p95, ms.qps, ms.p95, bs.qps/ms.qps)
	}
	fmt.Fprintf(&b, "\nBasalt peak RSS: %s\n", peakRSS)
	t.Log(b.String())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var p95Re = regexp.MustCompile(`95th percentile:\s+([0-9.]+)`)

func p95(out string) float64 {
	m := p95Re.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return f
}

// vmHWM is a process's peak resident set size, from /proc.
func vmHWM(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:"))
		}
	}
	return "unknown"
}
