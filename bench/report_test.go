package bench

import (
	"bytes"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/report/report.md from the current output")

// TestCompareRuns checks the table math: rows paired by thread count in
// increasing order, failed runs left out, improvement over the first
// side (X-A)/A in percent for every other side, none where a side did
// not run or A's rate is zero; peak RSS in MiB where a run has it.
func TestCompareRuns(t *testing.T) {
	mk := func(threads int, qps, p95 float64) ThreadRun {
		return ThreadRun{Threads: threads, Summary: Summary{QPS: qps, TPS: qps / 10, P95LatencyMs: p95}}
	}
	failed := ThreadRun{Threads: 128, Error: "sysbench failed"}
	a := []ThreadRun{mk(16, 6000, 2), mk(1, 1000, 0.1), mk(4, 0, 1), failed}
	b := []ThreadRun{mk(1, 1500, 0.2), mk(4, 4000, 0.5), mk(64, 7000, 9), failed}
	c := []ThreadRun{mk(16, 3000, 4), mk(1, 500, 1)}
	a[1].RSS = &RunRSS{TotalBytes: 300 << 20}
	b[0].RSS = &RunRSS{TotalBytes: 150 << 20}
	got := compareRuns([][]ThreadRun{a, b, c}, rateOf("oltp_point_select").Of)
	want := []row{
		{Threads: 1, Sides: []figures{
			{Rate: 1000, P95: 0.1, OK: true, RSS: 300, RSSOK: true},
			{Rate: 1500, P95: 0.2, OK: true, RSS: 150, RSSOK: true, Improvement: 50, HasImprovement: true},
			{Rate: 500, P95: 1, OK: true, Improvement: -50, HasImprovement: true}}},
		{Threads: 4, Sides: []figures{{Rate: 0, P95: 1, OK: true}, {Rate: 4000, P95: 0.5, OK: true}, {}}},
		{Threads: 16, Sides: []figures{{Rate: 6000, P95: 2, OK: true}, {}, {Rate: 3000, P95: 4, OK: true, Improvement: -50, HasImprovement: true}}},
		{Threads: 64, Sides: []figures{{}, {Rate: 7000, P95: 9, OK: true}, {}}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !slices.Equal(got[i].Sides, want[i].Sides) || got[i].Threads != want[i].Threads {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// bulk_insert is read in rows/s: sysbench's events per second.
	if r := compareRuns([][]ThreadRun{a[1:2], b[:1]}, rateOf(BulkInsert).Of); r[0].Sides[0].Rate != 100 || r[0].Sides[1].Rate != 150 {
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
	dir := writeGolden(t, res, "report.md")
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

// TestReportAllTargets reports a run of three targets (the testdata's
// basalt and mariadb, and a capped playground made from basalt's
// figures at half its rate): every target in every table, each one's
// improvement over the mariadb target, the playground's layout; golden
// file testdata/report/report3.md.
func TestReportAllTargets(t *testing.T) {
	res, err := ReadResults(filepath.Join("testdata", "report", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	pg := res.Targets[0]
	pg.Name, pg.Kind = "cluster", KindPlayground
	pg.Variables = map[string]string{"max_connections": "0"}
	pg.PrepareRSS = &RunRSS{TotalBytes: 7 << 20, Peaks: map[string]int64{"pd1": 1 << 20, "store1": 1 << 20,
		"store2": 1 << 20, "store3": 1 << 20, "db1": 1 << 20, "haproxy": 1 << 20, "playground": 1 << 20}}
	pg.Workloads = nil
	for _, wr := range res.Targets[0].Workloads {
		wr.Runs = slices.Clone(wr.Runs)
		for i := range wr.Runs {
			wr.Runs[i].Summary.QPS /= 2
			wr.Runs[i].Summary.TPS /= 2
		}
		pg.Workloads = append(pg.Workloads, wr)
	}
	res.Targets = append(res.Targets, pg)
	res.Plan.Targets = append(res.Plan.Targets, TargetSpec{Name: "cluster", Kind: KindPlayground, Binary: "/usr/bin/basalt", Args: []string{"--db.cpus", "0.5", "--kv.config=kv.toml"}})

	sides, err := ReportOptions{Results: res}.sides()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range sides {
		names = append(names, s.label)
	}
	if want := []string{"mariadb", "basalt", "cluster"}; !slices.Equal(names, want) {
		t.Errorf("sides %v, want %v (the mariadb target first, then the run's order)", names, want)
	}
	if sides, err := (ReportOptions{Results: res, A: "basalt"}).sides(); err != nil || len(sides) != 3 || sides[0].label != "basalt" {
		t.Errorf("--a basalt: %d sides, %v", len(sides), err)
	}
	if sides, err := (ReportOptions{Results: res, A: "basalt", B: "cluster"}).sides(); err != nil || len(sides) != 2 {
		t.Errorf("--a and --b: %d sides, %v; want the two", len(sides), err)
	}
	if _, err := (ReportOptions{Results: res, A: "nosuch"}).sides(); err == nil {
		t.Errorf("an unknown reference: no error")
	}

	writeGolden(t, res, "report3.md")
}

func TestFlagValue(t *testing.T) {
	args := []string{"--db.cpus", "0.25", "-kv.cpus=1", "--pd", "3", "--db.config"}
	for _, c := range []struct{ name, want string }{{"db.cpus", "0.25"}, {"kv.cpus", "1"}, {"pd", "3"}, {"db.config", ""}, {"kv", ""}, {"0.25", ""}} {
		if got := flagValue(args, c.name); got != c.want {
			t.Errorf("flagValue(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// writeGolden writes the report of res into a new directory, which it
// returns, and compares report.md with testdata/report/golden (go test
// -rewrite regenerates it).
func writeGolden(t *testing.T, res *Results, golden string) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteReport(dir, ReportOptions{Results: res}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "report", golden)
	if *rewrite {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report.md differs from %s (go test -rewrite regenerates it):\n%s", path, got)
	}
	return dir
}

// TestReportBaseline compares one target across two results files.
func TestReportBaseline(t *testing.T) {
	res, err := ReadResults(filepath.Join("testdata", "report", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	sides, err := ReportOptions{Results: res, Baseline: res, Target: "mariadb"}.sides()
	if err != nil {
		t.Fatal(err)
	}
	if a, b := sides[0], sides[1]; len(sides) != 2 || a.target.Name != "mariadb" || b.target.Name != "mariadb" || a.label == b.label {
		t.Errorf("sides %+v", sides)
	}
	if _, err := (ReportOptions{Results: res, A: "basalt", B: "nosuch"}).sides(); err == nil {
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
