package e2e

import (
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/testkit"
)

// benchWorkloads are the seven core workloads of the quick plan.
var benchWorkloads = []string{
	"oltp_point_select",
	"oltp_read_only",
	"oltp_write_only",
	"oltp_read_write",
	"oltp_update_index",
	"oltp_update_non_index",
	"oltp_insert",
}

// rssResult is a peak RSS in results.json (bench.RunRSS).
type rssResult struct {
	Peaks      map[string]int64 `json:"peak_bytes"`
	TotalBytes int64            `json:"total_bytes"`
}

// checkRSS fails unless r has a positive peak for each of procs and a
// total that is their sum.
func checkRSS(t *testing.T, what string, r *rssResult, procs ...string) {
	t.Helper()
	if r == nil {
		t.Errorf("%s: no peak RSS in results.json", what)
		return
	}
	var sum int64
	for _, p := range procs {
		if r.Peaks[p] <= 0 {
			t.Errorf("%s: peak RSS of %s is %d bytes (peaks %v)", what, p, r.Peaks[p], r.Peaks)
		}
	}
	for _, v := range r.Peaks {
		sum += v
	}
	if r.TotalBytes <= 0 || r.TotalBytes != sum {
		t.Errorf("%s: total peak RSS %d bytes, want the sum of %v", what, r.TotalBytes, r.Peaks)
	}
}

// TestBench runs "basalt bench run --plan quick", cut short (2,000 rows per
// table, threads 1 and 4, 3 s runs), with bulk_insert amid the quick
// plan's workloads, against basalt and MariaDB, then "basalt bench
// report", and checks results.json (every run's intervals, the peak RSS
// of the server process during every run and the prepare step) and
// report.md: a results table for every workload with non-zero QPS (rows/s
// for bulk_insert), p95 and peak RSS on both sides and the improvement
// column computed from them, and a PNG chart per workload. Without
// mariadbd the mariadb target is skipped and basalt is compared with
// itself through --baseline.
func TestBench(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	bin := testkit.BuildBasalt(t)
	out := t.TempDir()
	targets := "basalt,mariadb"
	if !haveMariaDB() {
		t.Log("mariadbd is not installed (apt-get install mariadb-server): skipping the mariadb target")
		targets = "basalt"
	}
	// bulk_insert amid the others: the workloads after it find the
	// sbtest tables as the backup has them.
	workloads := slices.Insert(slices.Clone(benchWorkloads), 4, "bulk_insert")
	basalt(t, bin, 0, "bench", "run", "--plan", "quick", "--quiet",
		"--targets", targets, "--workloads", strings.Join(workloads, ","),
		"--threads", "1,4", "--time", "3", "--warmup", "1",
		"--table-size", "2000", "--work-dir", t.TempDir(), "--out", out)

	results := filepath.Join(out, "results.json")
	var res struct {
		Complete bool
		Targets  []struct {
			Name       string
			Restored   bool
			PrepareRSS *rssResult `json:"prepare_rss"`
			Workloads  []struct {
				Workload string
				Runs     []struct {
					Threads   int
					Intervals []json.RawMessage
					Summary   struct{ TPS float64 }
					RSS       *rssResult
					Setup     []string
				}
			}
		}
	}
	readJSON(t, results, &res)
	if !res.Complete || len(res.Targets) != len(strings.Split(targets, ",")) {
		t.Fatalf("results.json: complete %v, %d targets", res.Complete, len(res.Targets))
	}
	for _, tr := range res.Targets {
		if !tr.Restored || len(tr.Workloads) != len(workloads) {
			t.Errorf("%s: restored %v, %d workloads", tr.Name, tr.Restored, len(tr.Workloads))
		}
		proc := map[string]string{"basalt": "basalt", "mariadb": "mariadbd"}[tr.Name]
		checkRSS(t, tr.Name+" prepare", tr.PrepareRSS, proc)
		for _, w := range tr.Workloads {
			for _, r := range w.Runs {
				what := fmt.Sprintf("%s %s with %d threads", tr.Name, w.Workload, r.Threads)
				if len(r.Intervals) < 2 {
					t.Errorf("%s: %d interval lines", what, len(r.Intervals))
				}
				checkRSS(t, what, r.RSS, proc)
				if w.Workload == "bulk_insert" {
					// Its own tables, one per thread, made before the run and dropped after.
					setup := strings.Join(r.Setup, "\n")
					if r.Summary.TPS <= 0 || !strings.Contains(setup, fmt.Sprintf("--threads=%d prepare", r.Threads)) ||
						!strings.Contains(setup, "DROP DATABASE IF EXISTS sbtest_bulk") {
						t.Errorf("%s: %v rows/s, setup:\n%s", what, r.Summary.TPS, setup)
					}
					t.Logf("%s: %.0f rows/s", what, r.Summary.TPS)
				}
			}
		}
	}

	reportDir := filepath.Join(out, "report")
	args := []string{"bench", "report", "--in", results, "--out", reportDir}
	if targets == "basalt" {
		args = append(args, "--baseline", results)
	}
	basalt(t, bin, 0, args...)
	md, err := os.ReadFile(filepath.Join(reportDir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workloads {
		checkReportTable(t, string(md), w, 2)
		f, err := os.Open(filepath.Join(reportDir, w+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s.png: %v", w, err)
		}
		f.Close()
	}
	if t.Failed() {
		t.Logf("report.md:\n%s", md)
	}
}

// TestBenchErrors checks that a bad plan stops with a clear message, and
// that a failing target leaves results.json with the error in it.
func TestBenchErrors(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	bin := testkit.BuildBasalt(t)
	msg := basalt(t, bin, 2, "bench", "run", "--workloads", "oltp_nosuch", "--out", t.TempDir())
	if !strings.Contains(msg, `unknown workload "oltp_nosuch"`) {
		t.Errorf("unknown workload: %s", msg)
	}
	msg = basalt(t, bin, 2, "bench", "run", "--targets", "postgres", "--out", t.TempDir())
	if !strings.Contains(msg, `unknown target "postgres"`) {
		t.Errorf("unknown target: %s", msg)
	}

	// A port nobody listens on: the dsn target fails to connect.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	out := t.TempDir()
	msg = basalt(t, bin, 1, "bench", "run", "--quiet", "--targets", "dsn:"+addr, "--out", out)
	if !strings.Contains(msg, "no MySQL server at "+addr) {
		t.Errorf("unreachable dsn: %s", msg)
	}
	var res struct {
		Complete bool
		Error    string
	}
	readJSON(t, filepath.Join(out, "results.json"), &res)
	if res.Complete || !strings.Contains(res.Error, addr) {
		t.Errorf("results.json after a failure: complete %v, error %q", res.Complete, res.Error)
	}
}

// TestBenchPlayground runs two workloads of the quick plan, cut short,
// against embedded basalt and a playground (1 PD, 3 stores, 1 SQL node,
// through HAProxy when it is installed) in one run: the playground is
// prepared, backed up (every node stopped, the whole directory copied),
// restored before each workload (stopped, overwritten, started again) and
// serves sysbench; the report compares the two. Every run and the prepare
// step record the peak RSS of each of the playground's processes (PD,
// each store, the SQL node, HAProxy, the playground) and of embedded
// basalt.
func TestBenchPlayground(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	bin := testkit.BuildBasalt(t)
	out := t.TempDir()
	workloads := []string{"oltp_point_select", "oltp_read_write"}
	basalt(t, bin, 0, "bench", "run", "--plan", "quick", "--quiet",
		"--targets", "basalt,cluster=playground", "--workloads", strings.Join(workloads, ","),
		"--threads", "4", "--time", "3", "--warmup", "0", "--tables", "2",
		"--table-size", "1000", "--work-dir", t.TempDir(), "--out", out)
	results := filepath.Join(out, "results.json")
	var res struct {
		Complete bool
		Targets  []struct {
			Name       string
			Kind       string
			Restored   bool
			PrepareRSS *rssResult `json:"prepare_rss"`
			Workloads  []struct {
				Workload string
				Runs     []struct {
					Error   string
					Summary struct {
						QPS    float64
						Errors int64
					}
					RSS *rssResult
				}
			}
		}
	}
	readJSON(t, results, &res)
	if !res.Complete || len(res.Targets) != 2 {
		t.Fatalf("results.json: complete %v, %d targets", res.Complete, len(res.Targets))
	}
	for _, tr := range res.Targets {
		if !tr.Restored || len(tr.Workloads) != len(workloads) {
			t.Errorf("%s: restored %v, %d workloads", tr.Name, tr.Restored, len(tr.Workloads))
		}
		// The playground's every node, and the playground process.
		procs := []string{"basalt"}
		if tr.Kind == "playground" {
			procs = []string{"playground", "pd1", "store1", "store2", "store3", "db1"}
			if _, err := exec.LookPath("haproxy"); err == nil {
				procs = append(procs, "haproxy")
			}
		}
		checkRSS(t, tr.Name+" prepare", tr.PrepareRSS, procs...)
		for _, w := range tr.Workloads {
			for _, r := range w.Runs {
				checkRSS(t, tr.Name+" "+w.Workload, r.RSS, procs...)
				if r.Error != "" || r.Summary.QPS <= 0 {
					t.Errorf("%s %s: a run failed (%q) or served nothing (%v QPS)", tr.Name, w.Workload, r.Error, r.Summary.QPS)
				}
				// Deadlocks and lock wait timeouts, which sysbench retries.
				t.Logf("%s %s: %.0f QPS, %d retried errors", tr.Name, w.Workload, r.Summary.QPS, r.Summary.Errors)
			}
		}
	}
	reportDir := filepath.Join(out, "report")
	basalt(t, bin, 0, "bench", "report", "--in", results, "--out", reportDir)
	md, err := os.ReadFile(filepath.Join(reportDir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workloads {
		checkReportTable(t, string(md), w, 1)
	}
	if t.Failed() {
		t.Logf("report.md:\n%s", md)
	}
}

// TestBenchScale runs "basalt bench scale" cut short (1 and 2 SQL nodes
// capped at 0.25 CPU each, one workload, 2 s runs on 1,000 rows) and
// checks results.json (a playground per node count, its threads scaled,
// non-zero QPS, each SQL node's throttling read from its cgroup, the peak
// RSS of each SQL node, PD and a store), the speed-up in report.md against the QPS in
// results.json, the chart, and that --in re-renders the same report.
func TestBenchScale(t *testing.T) {
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	if err := cgroupsWritable(); err != nil {
		t.Skipf("cannot make cpu cgroups (run as root with the cgroup v1 cpu controller): %v", err)
	}
	bin := testkit.BuildBasalt(t)
	out := t.TempDir()
	const workload = "oltp_point_select"
	basalt(t, bin, 0, "bench", "scale", "--quiet", "--nodes", "1,2", "--db.cpus", "0.25",
		"--workloads", workload, "--threads-per-node", "4", "--time", "2", "--warmup", "0",
		"--tables", "1", "--table-size", "1000", "--work-dir", t.TempDir(), "--out", out)
	var res struct {
		Complete bool
		Scale    struct{ Nodes []int }
		Targets  []struct {
			Name      string
			Workloads []struct {
				Runs []struct {
					Threads int
					Summary struct {
						QPS          float64
						P95LatencyMs float64 `json:"p95_latency_ms"`
					}
					CPU *struct {
						MachineBusy float64            `json:"machine_busy_pct"`
						Throttled   map[string]float64 `json:"throttled_pct"`
					}
					RSS *rssResult
				}
			}
		}
	}
	readJSON(t, filepath.Join(out, "results.json"), &res)
	if !res.Complete || len(res.Scale.Nodes) != 2 || len(res.Targets) != 2 {
		t.Fatalf("results.json: complete %v, nodes %v, %d targets", res.Complete, res.Scale.Nodes, len(res.Targets))
	}
	var qps []float64
	for i, tr := range res.Targets {
		if len(tr.Workloads) != 1 || len(tr.Workloads[0].Runs) != 1 {
			t.Fatalf("%s: want one run of one workload: %+v", tr.Name, tr.Workloads)
		}
		r := tr.Workloads[0].Runs[0]
		if r.Threads != 4*res.Scale.Nodes[i] || r.Summary.QPS <= 0 || r.Summary.P95LatencyMs <= 0 {
			t.Errorf("%s: %d threads, %v QPS, p95 %v ms; want %d threads and figures", tr.Name, r.Threads, r.Summary.QPS, r.Summary.P95LatencyMs, 4*res.Scale.Nodes[i])
		}
		qps = append(qps, r.Summary.QPS)
		sqlNodes := []string{}
		for n := 1; n <= res.Scale.Nodes[i]; n++ {
			sqlNodes = append(sqlNodes, fmt.Sprintf("db%d", n))
		}
		checkRSS(t, tr.Name, r.RSS, append(sqlNodes, "pd1", "store1")...)
		t.Logf("%s: %.0f QPS, p95 %.2f ms", tr.Name, r.Summary.QPS, r.Summary.P95LatencyMs)
		// Every capped SQL node's cgroup was read, and the machine's CPU.
		if r.CPU == nil || r.CPU.MachineBusy <= 0 || r.CPU.MachineBusy > 100 {
			t.Errorf("%s: CPU figures %+v", tr.Name, r.CPU)
			continue
		}
		for n := 1; n <= res.Scale.Nodes[i]; n++ {
			if v, ok := r.CPU.Throttled[fmt.Sprintf("db%d", n)]; !ok || v < 0 || v > 100 {
				t.Errorf("%s: db%d throttled %v (recorded: %v); CPU figures %+v", tr.Name, n, v, ok, r.CPU)
			}
		}
		t.Logf("%s: machine %.0f%% busy, throttled %v", tr.Name, r.CPU.MachineBusy, r.CPU.Throttled)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("| 2 | 8 | %.2f | ", qps[1]); !strings.Contains(string(md), want) {
		t.Errorf("report.md has no row %q", want)
	} else if row := strings.Split(strings.SplitN(string(md), want, 2)[1], " | "); len(row) < 2 ||
		row[1] != fmt.Sprintf("%.2f×", qps[1]/qps[0]) {
		t.Errorf("2 nodes: speed-up cell %q, want %.2f× from the QPS in results.json", row, qps[1]/qps[0])
	}
	f, err := os.Open(filepath.Join(out, workload+".png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("%s.png: %v", workload, err)
	}
	again := t.TempDir()
	basalt(t, bin, 0, "bench", "scale", "--in", out, "--out", again)
	if md2, err := os.ReadFile(filepath.Join(again, "report.md")); err != nil || string(md2) != string(md) {
		t.Errorf("--in re-rendered a different report (%v):\n%s", err, md2)
	}
	if t.Failed() {
		t.Logf("report.md:\n%s", md)
	}
}

// cgroupsWritable says why cpu cgroups cannot be made here, or nil.
func cgroupsWritable() error {
	dir, err := os.MkdirTemp("/sys/fs/cgroup/cpu", "basalt-e2e-")
	if err != nil {
		return err
	}
	return os.Remove(dir)
}

// checkReportTable finds the table of workload in report.md and checks its
// rows: threads, A's rate (QPS or rows/s), p95 and peak RSS, B's, and the
// improvement. Every figure must be positive but a p95 of bulk_insert,
// whose rows are each a few microseconds.
func checkReportTable(t *testing.T, md, workload string, wantRows int) {
	t.Helper()
	_, section, ok := strings.Cut(md, "\n### "+workload+"\n")
	if !ok {
		t.Errorf("report.md has no section for %s", workload)
		return
	}
	section, _, _ = strings.Cut(section, "\n### ")
	if !strings.Contains(section, "peak RSS MiB") {
		t.Errorf("%s: no peak RSS column:\n%s", workload, section)
	}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 8 || cells[0] == "Threads" || strings.HasPrefix(cells[0], "-") {
			continue
		}
		rows++
		var f [7]float64
		for i := range f {
			v, err := strconv.ParseFloat(cells[i], 64)
			if err != nil || v < 0 || (v == 0 && !(workload == "bulk_insert" && (i == 2 || i == 5))) {
				t.Errorf("%s: cell %d of %q is not a positive number", workload, i, line)
				return
			}
			f[i] = v
		}
		imp, err := strconv.ParseFloat(strings.TrimSuffix(cells[7], "%"), 64)
		want := (f[4] - f[1]) / f[1] * 100
		// The rate cells are rounded to 0.01; the improvement is computed
		// from the unrounded figures.
		if err != nil || math.Abs(imp-want) > 0.01+0.01*100/f[1] {
			t.Errorf("%s: improvement %q, want %.2f%% from the rate cells of %q", workload, cells[7], want, line)
		}
	}
	if rows != wantRows {
		t.Errorf("%s: %d rows in the table, want %d:\n%s", workload, rows, wantRows, section)
	}
}

// basalt runs the binary and returns its stderr, failing the test unless
// it exits with status want.
func basalt(t *testing.T, bin string, want int, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != want {
		t.Fatalf("basalt %s: exit status %d, want %d\n%s%s", strings.Join(args, " "), code, want, stdout, stderr.String())
	}
	return stderr.String()
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", path, err))
	}
}

// haveMariaDB reports whether the Debian MariaDB server is installed.
func haveMariaDB() bool {
	for _, p := range []string{"mariadbd", "/usr/sbin/mariadbd"} {
		if _, err := exec.LookPath(p); err == nil {
			return true
		}
	}
	return false
}
