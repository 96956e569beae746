package bench

import (
	"bytes"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/report/report.md from the current output")

// TestCompareRuns checks the table math: rows paired by thread count in
// increasing order, failed runs left out, improvement (B-A)/A in percent,
// none where a side did not run or A's rate is zero; peak RSS in MiB where
// a run has it.
func TestCompareRuns(t *testing.T) {
	mk := func(threads int, qps, p95 float64) ThreadRun {
		return ThreadRun{Threads: threads, Summary: Summary{QPS: qps, TPS: qps / 10, P95LatencyMs: p95}}
	}
	failed := ThreadRun{Threads: 128, Error: "sysbench failed"}
	a := []ThreadRun{mk(16, 6000, 2), mk(1, 1000, 0.1), mk(4, 0, 1), failed}
	b := []ThreadRun{mk(1, 1500, 0.2), mk(4, 4000, 0.5), mk(64, 7000, 9), failed}
	a[1].RSS = &RunRSS{TotalBytes: 300 << 20}
	b[0].RSS = &RunRSS{TotalBytes: 150 << 20}
	got := compareRuns(a, b, rateOf("oltp_point_select").Of)
	want := []row{
		{Threads: 1, ARate: 1000, AP95: 0.1, BRate: 1500, BP95: 0.2, AOK: true, BOK: true, ARSS: 300, ARSSOK: true, BRSS: 150, BRSSOK: true,
			Improvement: 50, HasImprovement: true},
		{Threads: 4, ARate: 0, AP95: 1, BRate: 4000, BP95: 0.5, AOK: true, BOK: true},
		{Threads: 16, ARate: 6000, AP95: 2, AOK: true},
		{Threads: 64, BRate: 7000, BP95: 9, BOK: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// bulk_insert is read in rows/s: sysbench's events per second.
	if r := compareRuns(a[1:2], b[:1], rateOf(BulkInsert).Of); r[0].ARate != 100 || r[0].BRate != 150 {
		t.Errorf("bulk_insert rows/s: %+v, want 100 and 150 (the runs' TPS)", r[0])
	}
	dsn := side{target: &TargetResult{Kind: KindDSN}}
	basalt := side{target: &TargetResult{Kind: KindBasalt}}
	for _, c := range []struct {
		s             side
		ran, measured bool
		want          string
	}{
		{basalt, true, true, "300"}, {basalt, true, false, "-"}, {basalt, false, false, "-"},
		{dsn, true, false, "not measured"}, {dsn, false, false, "-"},
	} {
		if got := rssCell(c.s, 300, c.ran, c.measured); got != c.want {
			t.Errorf("rssCell(%s, ran %v, measured %v) = %q, want %q", c.s.target.Kind, c.ran, c.measured, got, c.want)
		}
	}
}

// TestReport writes the report of testdata/report/results.json and
// compares report.md with testdata/report/report.md (go test -rewrite
// regenerates it); every chart must be a PNG.
func TestReport(t *testing.T) {
	res, err := ReadResults(filepath.Join("testdata", "report", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteReport(dir, ReportOptions{Results: res}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report", "report.md")
	if *rewrite {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report.md differs from %s (go test -rewrite regenerates it):\n%s", golden, got)
	}
	for _, w := range res.Plan.Workloads {
		f, err := os.Open(filepath.Join(dir, chartFile(w)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", chartFile(w), err)
		}
		f.Close()
	}
}

// TestReportBaseline compares one target across two results files.
func TestReportBaseline(t *testing.T) {
	res, err := ReadResults(filepath.Join("testdata", "report", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	a, b, err := ReportOptions{Results: res, Baseline: res, Target: "mariadb"}.sides()
	if err != nil {
		t.Fatal(err)
	}
	if a.target.Name != "mariadb" || b.target.Name != "mariadb" || a.label == b.label {
		t.Errorf("sides %q (%s) and %q (%s)", a.label, a.target.Name, b.label, b.target.Name)
	}
	if _, _, err := (ReportOptions{Results: res, A: "basalt", B: "nosuch"}).sides(); err == nil {
		t.Errorf("an unknown target: no error")
	}
}

func TestPlans(t *testing.T) {
	for _, name := range []string{"quick", "report"} {
		p, err := LoadPlan(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	p, _ := LoadPlan("quick")
	p.Workloads = append(p.Workloads, "oltp_nosuch")
	if err := p.Validate(); err == nil {
		t.Errorf("an unknown workload: no error")
	}
	if _, err := ParseTarget("postgres"); err == nil {
		t.Errorf("an unknown target: no error")
	}
	for _, c := range []struct {
		in   string
		want TargetSpec
	}{
		{"prod=dsn:10.0.0.1:3306", TargetSpec{Name: "prod", Kind: KindDSN, Address: "10.0.0.1:3306"}},
		{"127.0.0.1:4000", TargetSpec{Kind: KindDSN, Address: "127.0.0.1:4000"}},
		{"old=[::1]:4000", TargetSpec{Name: "old", Kind: KindDSN, Address: "[::1]:4000"}},
		{"cluster=playground", TargetSpec{Name: "cluster", Kind: KindPlayground}},
	} {
		if tg, err := ParseTarget(c.in); err != nil || tg.Name != c.want.Name || tg.Kind != c.want.Kind || tg.Address != c.want.Address {
			t.Errorf("ParseTarget(%q): %+v, %v; want %+v", c.in, tg, err, c.want)
		}
	}
	for _, bad := range []string{"playground:127.0.0.1:4000", "dsn:nohost", "host:port"} {
		if tg, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q): %+v, no error", bad, tg)
		}
	}
}

// The value axes are marked at round steps, about six of them, with no
// needless decimals.
func TestRoundTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 31250, "0 5000 10000 15000 20000 25000 30000"},
		{0, 3.1, "0.0 0.5 1.0 1.5 2.0 2.5 3.0"},
		{0, 0.9, "0.0 0.2 0.4 0.6 0.8"},
		{0, 120, "0 20 40 60 80 100 120"},
	} {
		var labels []string
		for _, tk := range (roundTicks{}).Ticks(c.lo, c.hi) {
			labels = append(labels, tk.Label)
		}
		if got := strings.Join(labels, " "); got != c.want {
			t.Errorf("ticks of [%v, %v]: %s, want %s", c.lo, c.hi, got, c.want)
		}
	}
}
