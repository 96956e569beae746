package bench

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scaleResults is a scale-out run of nodes 1, 2, 4 on which one run failed.
func scaleResults() *Results {
	mk := func(threads int, qps, p95 float64) ThreadRun {
		return ThreadRun{Threads: threads, Summary: Summary{QPS: qps, P95LatencyMs: p95}}
	}
	res := &Results{Schema: SchemaVersion, Complete: true,
		Plan:  Plan{Workloads: []string{"oltp_point_select", "oltp_read_write"}, Tables: 1, TableSize: 1000, RunSeconds: 2},
		Scale: &ScalePlan{Nodes: []int{1, 2, 4}, DBCPUs: 0.25, ThreadsPerNode: 8}}
	res.Plan.Targets = res.Scale.targets("basalt")
	for i, rows := range [][2]ThreadRun{
		{mk(8, 1000, 4), mk(8, 300, 20)},
		{mk(16, 1900, 5), {Threads: 16, Error: "sysbench failed"}},
		{mk(32, 3500, 6), mk(32, 900, 30)},
	} {
		res.Targets = append(res.Targets, TargetResult{Name: res.Plan.Targets[i].Name, Kind: KindPlayground,
			Workloads: []WorkloadResult{
				{Workload: "oltp_point_select", Runs: []ThreadRun{rows[0]}},
				{Workload: "oltp_read_write", Runs: []ThreadRun{rows[1]}},
			}})
	}
	return res
}

// TestScaleTargets checks that each node count is a playground of that
// many SQL nodes, capped, with its threads scaled.
func TestScaleTargets(t *testing.T) {
	specs := ScalePlan{Nodes: []int{1, 4}, DBCPUs: 0.25, KVCPUs: 0.5, ThreadsPerNode: 8}.targets("bin")
	if len(specs) != 2 {
		t.Fatalf("%d targets, want 2", len(specs))
	}
	got := strings.Join(specs[1].Args, " ")
	if want := "--db 4 --db.cpus 0.25 --kv.cpus 0.5"; got != want || specs[1].Threads[0] != 32 || specs[1].Name != "4 SQL nodes" {
		t.Errorf("4 nodes: %s args %q threads %v, want args %q and 32 threads", specs[1].Name, got, specs[1].Threads, want)
	}
	for _, bad := range []ScalePlan{{ThreadsPerNode: 1}, {Nodes: []int{1, 1}, ThreadsPerNode: 1}, {Nodes: []int{0}, ThreadsPerNode: 1}, {Nodes: []int{1}}} {
		if bad.Validate() == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestScaleRows checks the table math: speed-up over the first node
// count, failed runs left out.
func TestScaleRows(t *testing.T) {
	res := scaleResults()
	got := scaleRows(res, "oltp_point_select")
	want := []scaleRow{
		{Nodes: 1, Threads: 8, Rate: 1000, P95: 4, SpeedUp: 1},
		{Nodes: 2, Threads: 16, Rate: 1900, P95: 5, SpeedUp: 1.9},
		{Nodes: 4, Threads: 32, Rate: 3500, P95: 6, SpeedUp: 3.5},
	}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	rw := scaleRows(res, "oltp_read_write")
	if len(rw) != 2 || rw[1].Nodes != 4 || rw[1].SpeedUp != 3 {
		t.Errorf("read_write rows %+v: want 1 and 4 nodes, speed-up 3", rw)
	}
}

// TestScaleReport checks that the report has a row per node count with
// its speed-up and that every chart is a PNG.
func TestScaleReport(t *testing.T) {
	dir := t.TempDir()
	res := scaleResults()
	res.Targets[2].Workloads[1].Runs[0].CPU = &RunCPU{MachineBusy: 97.2, Throttled: map[string]float64{"db1": 30, "db2": 50, "kv1": 90}}
	res.Targets[2].Workloads[1].Runs[0].RSS = rssOf(map[string]int64{"pd1": 100 << 20, "store1": 412 << 20, "db1": 200 << 20, "haproxy": 8 << 20}, nil)
	if err := WriteScaleReport(dir, res); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"| 2 | 16 | 1900.00 | 5.00 | 1.90× | 0 | - | - | - |", "| 4 | 32 | 900.00 | 30.00 | 3.00× | 0 | 40% | 97% | 720 |", "| SQL nodes | Threads | QPS |", "`basalt playground --db 4 --db.cpus 0.25`"} {
		if !strings.Contains(string(md), line) {
			t.Errorf("report.md has no %q:\n%s", line, md)
		}
	}
	for _, w := range []string{"oltp_point_select", "oltp_read_write"} {
		f, err := os.Open(filepath.Join(dir, chartFile(w)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", w, err)
		}
		f.Close()
	}
	// bulk_insert is read in rows/s.
	res.Plan.Workloads = []string{BulkInsert}
	for i := range res.Targets {
		res.Targets[i].Workloads[0].Workload = BulkInsert
	}
	if err := WriteScaleReport(dir, res); err != nil {
		t.Fatal(err)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, ReportFile)); !strings.Contains(string(md), "| SQL nodes | Threads | rows/s |") {
		t.Errorf("bulk_insert's table is not in rows/s:\n%s", md)
	}
	if err := WriteScaleReport(dir, &Results{}); err == nil {
		t.Error("the report of a run that is not a scale-out run: no error")
	}
}

// TestCPUBetween checks the CPU figures of a run from two samples: the
// machine's busy share, each node's throttled share, and a node whose
// counters went back (restarted) left out.
func TestCPUBetween(t *testing.T) {
	a := cpuSample{ok: true, busy: 100, total: 400,
		periods: map[string]uint64{"db1": 10, "db2": 50}, throttled: map[string]uint64{"db1": 2, "db2": 40}}
	b := cpuSample{ok: true, busy: 250, total: 600,
		periods: map[string]uint64{"db1": 30, "db2": 5, "kv1": 9}, throttled: map[string]uint64{"db1": 7, "db2": 1, "kv1": 3}}
	c := cpuBetween(a, b)
	if c == nil || c.MachineBusy != 75 || len(c.Throttled) != 1 || c.Throttled["db1"] != 25 {
		t.Fatalf("cpuBetween: %+v, want 75%% busy and db1 throttled 25%% only", c)
	}
	if m, ok := c.meanThrottled("db"); !ok || m != 25 {
		t.Errorf("meanThrottled: %v %v", m, ok)
	}
	if cpuBetween(cpuSample{}, b) != nil {
		t.Error("an unreadable sample gave figures")
	}
	if s := sampleCPU(""); s.ok && s.busy > s.total {
		t.Errorf("sampleCPU: busy %d > total %d", s.busy, s.total)
	}
}
