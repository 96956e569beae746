package bench

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ReportOptions choose what a report compares.
type ReportOptions struct {
	// Results is the run to report.
	Results *Results
	// Baseline, if not nil, is an earlier run: the report compares the
	// target Target of Results (B) with the same target in Baseline (A).
	Baseline *Results
	// Without Baseline, A and B name two targets of Results; empty A and
	// B mean its second and first target (mariadb and basalt in the
	// presets): improvement is B's over A.
	A, B string
	// Target names the target compared with Baseline; empty means the
	// first.
	Target string
}

// side is one column pair of the report's tables.
type side struct {
	label  string
	target *TargetResult
	res    *Results
}

// ReportFile is the name of the report in the output directory.
const ReportFile = "report.md"

// WriteReport writes report.md and one PNG chart per workload into dir.
func WriteReport(dir string, opts ReportOptions) error {
	a, b, err := opts.sides()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	writeReport(&md, a, b)
	for _, w := range workloadsOf(a, b) {
		series := []chartSeries{}
		for _, s := range []side{a, b} {
			if wr := s.target.workload(w); wr != nil {
				series = append(series, chartSeries{Name: s.label, Points: threadPoints(w, wr.Runs)})
			}
		}
		if err := writeChart(filepath.Join(dir, chartFile(w)), w, "threads", series); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, ReportFile), []byte(md.String()), 0o644)
}

func (o ReportOptions) sides() (a, b side, err error) {
	r := o.Results
	if r == nil {
		return a, b, errors.New("no results")
	}
	if o.Baseline != nil {
		name := o.Target
		if name == "" && len(r.Targets) > 0 {
			name = r.Targets[0].Name
		}
		a = side{target: o.Baseline.target(name), res: o.Baseline}
		b = side{target: r.target(name), res: r}
		if a.target == nil || b.target == nil {
			return a, b, fmt.Errorf("target %q is not in both results files", name)
		}
		a.label, b.label = versionLabel(a), versionLabel(b)
		if a.label == b.label {
			a.label, b.label = a.label+" (baseline)", b.label+" (current)"
		}
		return a, b, nil
	}
	nameA, nameB := o.A, o.B
	if nameA == "" && nameB == "" && len(r.Targets) >= 2 {
		nameA, nameB = r.Targets[1].Name, r.Targets[0].Name
	}
	a = side{label: nameA, target: r.target(nameA), res: r}
	b = side{label: nameB, target: r.target(nameB), res: r}
	if a.target == nil || b.target == nil {
		return a, b, fmt.Errorf("the report compares two targets of one results file, or one target with --baseline; have %d targets (%s), asked for %q and %q",
			len(r.Targets), strings.Join(targetNames(r), ", "), nameA, nameB)
	}
	return a, b, nil
}

// versionLabel names a target by its version for "vX vs vY" reports.
func versionLabel(s side) string {
	if s.target.Kind == KindBasalt && s.res.Environment.BasaltVersion != "" {
		v, _, _ := strings.Cut(s.res.Environment.BasaltVersion, ";")
		return v
	}
	return s.target.Name + " " + s.target.Version
}

func (r *Results) target(name string) *TargetResult {
	for i := range r.Targets {
		if r.Targets[i].Name == name {
			return &r.Targets[i]
		}
	}
	return nil
}

func targetNames(r *Results) []string {
	var names []string
	for _, t := range r.Targets {
		names = append(names, t.Name)
	}
	return names
}

func (t *TargetResult) workload(name string) *WorkloadResult {
	for i := range t.Workloads {
		if t.Workloads[i].Workload == name {
			return &t.Workloads[i]
		}
	}
	return nil
}

// workloadsOf lists the workloads of b, then those only a ran.
func workloadsOf(a, b side) []string {
	var names []string
	for _, s := range []side{b, a} {
		for _, w := range s.target.Workloads {
			if !slices.Contains(names, w.Workload) {
				names = append(names, w.Workload)
			}
		}
	}
	return names
}

func chartFile(workload string) string { return workload + ".png" }

// rate is the throughput a workload is read by: its label in tables, its
// chart's axis, and how to take it from sysbench's summary.
type rate struct {
	Label, Axis string
	Of          func(Summary) float64
}

// rateOf is workload's rate: sysbench's queries per second, but rows per
// second for bulk_insert, whose events (sysbench's "transactions") are
// rows and whose queries are multi-row INSERTs of thousands of rows each.
func rateOf(workload string) rate {
	if workload == BulkInsert {
		return rate{"rows/s", "rows per second", func(s Summary) float64 { return s.TPS }}
	}
	return rate{"QPS", "queries per second", func(s Summary) float64 { return s.QPS }}
}

// row is one line of a workload's table. A side that did not run at this
// thread count has zero figures and ok false; RSS figures are MiB, with
// ok false where they were not measured.
type row struct {
	Threads        int
	ARate, AP95    float64
	BRate, BP95    float64
	AOK, BOK       bool
	ARSS, BRSS     float64
	ARSSOK, BRSSOK bool
	Improvement    float64 // (BRate - ARate) / ARate * 100
	HasImprovement bool    // both sides ran and ARate > 0
}

// compareRuns pairs a's and b's runs by thread count, in increasing order,
// leaving out failed runs; rate takes each run's rate from its summary.
func compareRuns(a, b []ThreadRun, rate func(Summary) float64) []row {
	byThreads := map[int]*row{}
	var threads []int
	get := func(n int) *row {
		if r, ok := byThreads[n]; ok {
			return r
		}
		threads = append(threads, n)
		byThreads[n] = &row{Threads: n}
		return byThreads[n]
	}
	for _, r := range a {
		if r.Error != "" {
			continue
		}
		x := get(r.Threads)
		x.ARate, x.AP95, x.AOK = rate(r.Summary), r.Summary.P95LatencyMs, true
		if r.RSS != nil {
			x.ARSS, x.ARSSOK = r.RSS.MiB(), true
		}
	}
	for _, r := range b {
		if r.Error != "" {
			continue
		}
		x := get(r.Threads)
		x.BRate, x.BP95, x.BOK = rate(r.Summary), r.Summary.P95LatencyMs, true
		if r.RSS != nil {
			x.BRSS, x.BRSSOK = r.RSS.MiB(), true
		}
	}
	slices.Sort(threads)
	rows := make([]row, 0, len(threads))
	for _, n := range threads {
		x := byThreads[n]
		if x.AOK && x.BOK && x.ARate > 0 {
			x.Improvement, x.HasImprovement = (x.BRate-x.ARate)/x.ARate*100, true
		}
		rows = append(rows, *x)
	}
	return rows
}

// summarize is the one-line summary of a workload's table: the mean of
// the improvements, and their range.
func summarize(workload string, a, b side, rows []row) string {
	var sum, lo, hi float64
	n := 0
	for _, r := range rows {
		if !r.HasImprovement {
			continue
		}
		if n == 0 || r.Improvement < lo {
			lo = r.Improvement
		}
		if n == 0 || r.Improvement > hi {
			hi = r.Improvement
		}
		sum += r.Improvement
		n++
	}
	if n == 0 {
		return fmt.Sprintf("%s and %s have no thread count of %s in common.", a.label, b.label, workload)
	}
	mean := sum / float64(n)
	verb := "higher"
	if mean < 0 {
		verb = "lower"
	}
	return fmt.Sprintf("Compared with %s, the %s %s of %s is %.1f%% %s on average (from %s to %s across %d thread counts).",
		a.label, workload, rateOf(workload).Label, b.label, abs(mean), verb, percent(lo), percent(hi), n)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func percent(x float64) string { return fmt.Sprintf("%+.2f%%", x) }

// writeReport writes the Markdown report, in the structure of TiDB's
// Sysbench performance test reports.
func writeReport(w io.Writer, a, b side) {
	r := b.res
	p := r.Plan
	fmt.Fprintf(w, "# Sysbench performance test report: %s vs %s\n\n", b.label, a.label)
	fmt.Fprintf(w, "## Test overview\n\n")
	fmt.Fprintf(w, "This report compares the online transaction processing (OLTP) performance of %s with %s, measured with sysbench by `basalt bench run --plan %s` and written by `basalt bench report`. ", b.label, a.label, p.Name)
	fmt.Fprintf(w, "QPS improvement is (%s QPS - %s QPS) / %s QPS.", b.label, a.label, a.label)
	if slices.Contains(workloadsOf(a, b), BulkInsert) {
		fmt.Fprintf(w, " `bulk_insert` is measured in rows per second (sysbench's events, which it calls transactions; its queries are multi-row INSERTs), and its improvement in rows/s.")
	}
	fmt.Fprintf(w, " Peak RSS is the highest resident memory of a system's server processes during the run, in MiB: the sum of each process's peak (a playground's PD, stores, SQL nodes, HAProxy and the playground process; results.json has each), not measured for a server the run did not start.")
	if !r.Complete || (a.res != r && !a.res.Complete) {
		fmt.Fprintf(w, " **The run did not complete**")
		for _, s := range []side{a, b} {
			if s.res.Error != "" {
				fmt.Fprintf(w, " (%s: %s)", s.label, firstLine(s.res.Error))
			}
		}
		fmt.Fprintf(w, "; the tables hold what it measured.")
	}
	fmt.Fprintf(w, "\n\n")

	fmt.Fprintf(w, "## Test environment\n\n")
	envs := []*Results{r}
	if a.res != r {
		envs = []*Results{a.res, r}
	}
	for _, res := range envs {
		e := res.Environment
		if len(envs) > 1 {
			label := b.label
			if res == a.res {
				label = a.label
			}
			fmt.Fprintf(w, "%s, run on %s:\n\n", label, res.Started.Format("2006-01-02"))
		}
		fmt.Fprintf(w, "| Item | Value |\n| --- | --- |\n")
		items := [][2]string{
			{"CPU", fmt.Sprintf("%s, %d cores", e.CPUModel, e.CPUCores)},
			{"Memory", fmt.Sprintf("%.1f GiB", float64(e.MemoryBytes)/(1<<30))},
			{"Disk (df of the data directories)", e.Disk},
			{"OS", e.OS},
			{"Kernel", e.Kernel},
			{"Go", e.GoVersion},
			{"Sysbench", e.SysbenchVersion},
			{"Basalt", e.BasaltVersion},
			{"MariaDB", e.MariaDBVersion},
			{"Date", res.Started.Format("2006-01-02 15:04 MST")},
		}
		for _, it := range items {
			if it[1] != "" {
				fmt.Fprintf(w, "| %s | %s |\n", it[0], cell(it[1]))
			}
		}
		fmt.Fprintf(w, "\nAll servers and sysbench ran on this one machine, the servers on 127.0.0.1; figures of different machines are not comparable, their ratios are more so.\n\n")
	}

	fmt.Fprintf(w, "## Software versions\n\n| System | Target | Version | Address |\n| --- | --- | --- | --- |\n")
	for _, s := range []side{a, b} {
		fmt.Fprintf(w, "| %s | %s (%s) | %s | %s |\n", cell(s.label), s.target.Name, s.target.Kind, cell(s.target.Version), s.target.Address)
	}

	fmt.Fprintf(w, "\n## Parameter configuration\n\n")
	fmt.Fprintf(w, "Sysbench: %d tables of %d rows, `--rand-type=%s`, `--db-ps-mode=%s`, %d s warm-up, %d s per run, threads %s.\n\n",
		p.Tables, p.TableSize, p.RandType, p.PSMode, p.WarmupSeconds, p.RunSeconds, joinInts(p.Threads))
	if p.Prepare == PrepareImport {
		fmt.Fprintf(w, "Basalt's tables were made by IMPORT INTO from sysbench's rows written as CSV (`prepare = \"import\"`); other targets' by `sysbench oltp_common prepare`.\n\n")
	}
	for _, s := range []side{a, b} {
		spec := specOf(s)
		fmt.Fprintf(w, "%s (`%s`", s.label, spec.Binary)
		if len(spec.Args) > 0 {
			fmt.Fprintf(w, " with `%s`", strings.Join(spec.Args, " "))
		}
		fmt.Fprintf(w, "), settings in force:\n\n| Variable | Value |\n| --- | --- |\n")
		for _, k := range sortedKeys(s.target.Variables) {
			fmt.Fprintf(w, "| %s | %s |\n", k, cell(s.target.Variables[k]))
		}
		if s.target.Note != "" {
			fmt.Fprintf(w, "\nNote: %s.\n", s.target.Note)
		}
		fmt.Fprintf(w, "\n")
	}

	fmt.Fprintf(w, "## Test plan\n\n")
	fmt.Fprintf(w, "1. Start each system on its own fresh data directory (the dsn targets were already running).\n")
	fmt.Fprintf(w, "2. Create database `sbtest` and import the data with `sysbench oltp_common prepare`.\n")
	fmt.Fprintf(w, "3. Run `ANALYZE TABLE` on each table.\n")
	fmt.Fprintf(w, "4. Back up: embedded Basalt with `BACKUP DATABASE` while it serves; the other servers are stopped and their data directories copied.\n")
	fmt.Fprintf(w, "5. Before each workload, restore the backup (Basalt: `DROP DATABASE`, `RESTORE DATABASE`, `ANALYZE TABLE`; the others: stop, replace the data directory, start), then warm up.\n")
	fmt.Fprintf(w, "6. Run the workload once per thread count, %d s each, and take QPS and the 95th percentile latency from sysbench's summary, and the peak resident memory of the server processes during the run (VmHWM of /proc/PID/status, reset at the start through /proc/PID/clear_refs).\n", p.RunSeconds)
	if slices.Contains(workloadsOf(a, b), BulkInsert) {
		fmt.Fprintf(w, "7. `bulk_insert` inserts into tables of its own, one per thread: before each of its runs, a fresh database `%s` and `sysbench bulk_insert prepare` with the run's thread count; after it, `sysbench bulk_insert cleanup` and the database dropped. The `sbtest` tables are not used.\n", bulkDB)
	}
	fmt.Fprintf(w, "\n")
	for _, s := range []side{a, b} {
		fmt.Fprintf(w, "The exact commands on %s:\n\n```sh\n", s.label)
		for _, c := range s.target.Setup {
			fmt.Fprintln(w, c)
		}
		if len(s.target.Workloads) > 0 {
			wr := s.target.Workloads[0]
			for _, c := range wr.Warmup {
				fmt.Fprintln(w, c)
			}
			for _, run := range wr.Runs {
				fmt.Fprintln(w, run.Command)
			}
			if len(s.target.Workloads) > 1 {
				fmt.Fprintf(w, "# ... and the same for %d more workloads; results.json has every command\n", len(s.target.Workloads)-1)
			}
		}
		fmt.Fprintf(w, "```\n\n")
	}

	fmt.Fprintf(w, "## Test results\n\n")
	writePrepareTable(w, a, b)
	for _, wl := range workloadsOf(a, b) {
		var aRuns, bRuns []ThreadRun
		if x := a.target.workload(wl); x != nil {
			aRuns = x.Runs
		}
		if x := b.target.workload(wl); x != nil {
			bRuns = x.Runs
		}
		rt := rateOf(wl)
		rows := compareRuns(aRuns, bRuns, rt.Of)
		fmt.Fprintf(w, "### %s\n\n", wl)
		fmt.Fprintf(w, "| Threads | %s %s | %s 95%% latency (ms) | %s peak RSS MiB | %s %s | %s 95%% latency (ms) | %s peak RSS MiB | %s improvement |\n",
			a.label, rt.Label, a.label, a.label, b.label, rt.Label, b.label, b.label, rt.Label)
		fmt.Fprintf(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, x := range rows {
			imp := "-"
			if x.HasImprovement {
				imp = percent(x.Improvement)
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", x.Threads,
				num(x.ARate, x.AOK), num(x.AP95, x.AOK), rssCell(a, x.ARSS, x.AOK, x.ARSSOK),
				num(x.BRate, x.BOK), num(x.BP95, x.BOK), rssCell(b, x.BRSS, x.BOK, x.BRSSOK), imp)
		}
		fmt.Fprintf(w, "\n%s\n\n![%s: %s and 95%% latency against threads](%s)\n\n", summarize(wl, a, b, rows), wl, rt.Label, chartFile(wl))
	}
}

// writePrepareTable writes how long making the tables took on each side
// and the peak resident memory of its servers meanwhile, total and per
// process.
func writePrepareTable(w io.Writer, a, b side) {
	if a.target.PrepareSeconds == 0 && b.target.PrepareSeconds == 0 && a.target.PrepareRSS == nil && b.target.PrepareRSS == nil {
		return
	}
	fmt.Fprintf(w, "### Preparing the tables\n\n")
	fmt.Fprintf(w, "| System | Prepare (s) | Peak RSS MiB | Peak RSS MiB by process |\n| --- | ---: | ---: | --- |\n")
	for _, s := range []side{a, b} {
		secs := "-"
		if s.target.PrepareSeconds > 0 {
			secs = fmt.Sprintf("%.1f", s.target.PrepareSeconds)
		}
		r := s.target.PrepareRSS
		total, perProc := rssCell(s, 0, true, false), "-"
		if r != nil {
			total = fmt.Sprintf("%.0f", r.MiB())
			var parts []string
			for _, name := range slices.Sorted(maps.Keys(r.Peaks)) {
				parts = append(parts, fmt.Sprintf("%s %.0f", name, float64(r.Peaks[name])/(1<<20)))
			}
			perProc = strings.Join(parts, ", ")
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", cell(s.label), secs, total, perProc)
	}
	fmt.Fprintf(w, "\n")
}

// rssCell is a peak RSS in MiB; "-" where the side did not run, or its
// run has no figure; "not measured" for a server the run did not start.
func rssCell(s side, mib float64, ran, measured bool) string {
	switch {
	case !ran:
		return "-"
	case measured:
		return fmt.Sprintf("%.0f", mib)
	case s.target.Kind == KindDSN:
		return "not measured"
	}
	return "-"
}

func specOf(s side) TargetSpec {
	for _, t := range s.res.Plan.Targets {
		if t.Name == s.target.Name {
			return t
		}
	}
	return TargetSpec{}
}

func num(x float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func joinInts(xs []int) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
