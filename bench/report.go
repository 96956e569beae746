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
	// presets): improvement is B's over A. A run of more than two targets
	// with B empty is reported whole: every target, each one's
	// improvement over A, which defaults to the run's mariadb target if
	// it has one, else its second.
	A, B string
	// Target names the target compared with Baseline; empty means the
	// first.
	Target string
}

// side is one target's columns in the report's tables.
type side struct {
	label  string
	target *TargetResult
	res    *Results
}

// ReportFile is the name of the report in the output directory.
const ReportFile = "report.md"

// WriteReport writes report.md and one PNG chart per workload into dir.
func WriteReport(dir string, opts ReportOptions) error {
	sides, err := opts.sides()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	writeReport(&md, sides)
	for _, w := range workloadsOf(sides) {
		series := []chartSeries{}
		for _, s := range sides {
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

// sides are the targets the report shows, the reference (A) first.
func (o ReportOptions) sides() ([]side, error) {
	r := o.Results
	if r == nil {
		return nil, errors.New("no results")
	}
	if o.Baseline != nil {
		name := o.Target
		if name == "" && len(r.Targets) > 0 {
			name = r.Targets[0].Name
		}
		a := side{target: o.Baseline.target(name), res: o.Baseline}
		b := side{target: r.target(name), res: r}
		if a.target == nil || b.target == nil {
			return nil, fmt.Errorf("target %q is not in both results files", name)
		}
		a.label, b.label = versionLabel(a), versionLabel(b)
		if a.label == b.label {
			a.label, b.label = a.label+" (baseline)", b.label+" (current)"
		}
		return []side{a, b}, nil
	}
	if len(r.Targets) > 2 && o.B == "" {
		return o.allSides()
	}
	nameA, nameB := o.A, o.B
	if nameA == "" && nameB == "" && len(r.Targets) >= 2 {
		nameA, nameB = r.Targets[1].Name, r.Targets[0].Name
	}
	a := side{label: nameA, target: r.target(nameA), res: r}
	b := side{label: nameB, target: r.target(nameB), res: r}
	if a.target == nil || b.target == nil {
		return nil, fmt.Errorf("the report compares two targets of one results file, or one target with --baseline; have %d targets (%s), asked for %q and %q",
			len(r.Targets), strings.Join(targetNames(r), ", "), nameA, nameB)
	}
	return []side{a, b}, nil
}

// allSides are every target of a run of more than two: the reference
// first (A, else the mariadb target, else the second), then the others
// in the run's order.
func (o ReportOptions) allSides() ([]side, error) {
	r := o.Results
	ref := o.A
	if ref == "" {
		ref = r.Targets[1].Name
		for _, t := range r.Targets {
			if t.Kind == KindMariaDB {
				ref = t.Name
				break
			}
		}
	}
	if r.target(ref) == nil {
		return nil, fmt.Errorf("no target %q in the results (have %s)", ref, strings.Join(targetNames(r), ", "))
	}
	sides := []side{{label: ref, target: r.target(ref), res: r}}
	for i := range r.Targets {
		if t := &r.Targets[i]; t.Name != ref {
			sides = append(sides, side{label: t.Name, target: t, res: r})
		}
	}
	return sides, nil
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

// workloadsOf lists the workloads of the sides after the reference, in
// their order, then those only the reference ran.
func workloadsOf(sides []side) []string {
	var names []string
	for _, s := range append(slices.Clone(sides[1:]), sides[0]) {
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

// row is one line of a workload's table: one figures per side, in the
// report's order (the reference first).
type row struct {
	Threads int
	Sides   []figures
}

// figures are one side's at one thread count. A side that did not run
// at this thread count has zero figures and OK false; RSS is MiB, with
// RSSOK false where it was not measured. Improvement, over the
// reference's rate, is set for the other sides where both ran and the
// reference's rate is above zero.
type figures struct {
	Rate, P95      float64
	OK             bool
	RSS            float64
	RSSOK          bool
	Improvement    float64 // (Rate - reference's Rate) / reference's Rate * 100
	HasImprovement bool
}

// compareRuns pairs each side's runs by thread count, in increasing
// order, leaving out failed runs; rate takes each run's rate from its
// summary. runs[0] is the reference's.
func compareRuns(runs [][]ThreadRun, rate func(Summary) float64) []row {
	byThreads := map[int]*row{}
	var threads []int
	for i, side := range runs {
		for _, r := range side {
			if r.Error != "" {
				continue
			}
			x, ok := byThreads[r.Threads]
			if !ok {
				threads = append(threads, r.Threads)
				x = &row{Threads: r.Threads, Sides: make([]figures, len(runs))}
				byThreads[r.Threads] = x
			}
			f := &x.Sides[i]
			f.Rate, f.P95, f.OK = rate(r.Summary), r.Summary.P95LatencyMs, true
			if r.RSS != nil {
				f.RSS, f.RSSOK = r.RSS.MiB(), true
			}
		}
	}
	slices.Sort(threads)
	rows := make([]row, 0, len(threads))
	for _, n := range threads {
		x := byThreads[n]
		ref := x.Sides[0]
		for i := 1; i < len(x.Sides); i++ {
			if f := &x.Sides[i]; ref.OK && f.OK && ref.Rate > 0 {
				f.Improvement, f.HasImprovement = (f.Rate-ref.Rate)/ref.Rate*100, true
			}
		}
		rows = append(rows, *x)
	}
	return rows
}

// summarize is the one-line summary of side i's improvements over the
// reference (sides[0]) in a workload's table: their mean and range.
func summarize(workload string, sides []side, i int, rows []row) string {
	var sum, lo, hi float64
	n := 0
	for _, r := range rows {
		f := r.Sides[i]
		if !f.HasImprovement {
			continue
		}
		if n == 0 || f.Improvement < lo {
			lo = f.Improvement
		}
		if n == 0 || f.Improvement > hi {
			hi = f.Improvement
		}
		sum += f.Improvement
		n++
	}
	a, b := sides[0], sides[i]
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
// Sysbench performance test reports: sides[0] is the reference, and the
// others are compared with it.
func writeReport(w io.Writer, sides []side) {
	a, others := sides[0], sides[1:]
	r := sides[len(sides)-1].res
	p := r.Plan
	names := make([]string, len(others))
	for i, s := range others {
		names[i] = s.label
	}
	compared := joinAnd(names)
	workloads := workloadsOf(sides)
	fmt.Fprintf(w, "# Sysbench performance test report: %s vs %s\n\n", strings.Join(names, ", "), a.label)
	fmt.Fprintf(w, "## Test overview\n\n")
	fmt.Fprintf(w, "This report compares the online transaction processing (OLTP) performance of %s with %s, measured with sysbench by `basalt bench run --plan %s` and written by `basalt bench report`. ", compared, a.label, p.Name)
	if len(others) == 1 {
		fmt.Fprintf(w, "QPS improvement is (%s QPS - %s QPS) / %s QPS.", compared, a.label, a.label)
	} else {
		fmt.Fprintf(w, "The QPS improvement of a system is (its QPS - %s QPS) / %s QPS.", a.label, a.label)
	}
	if slices.Contains(workloads, BulkInsert) {
		fmt.Fprintf(w, " `bulk_insert` is measured in rows per second (sysbench's events, which it calls transactions; its queries are multi-row INSERTs), and its improvement in rows/s.")
	}
	fmt.Fprintf(w, " Peak RSS is the highest resident memory of a system's server processes during the run, in MiB: the sum of each process's peak (a playground's PD, stores, SQL nodes, HAProxy and the playground process; results.json has each), not measured for a server the run did not start.")
	if !r.Complete || (a.res != r && !a.res.Complete) {
		fmt.Fprintf(w, " **The run did not complete**")
		for _, s := range sides {
			if s.res.Error != "" {
				fmt.Fprintf(w, " (%s: %s)", s.label, firstLine(s.res.Error))
			}
		}
		fmt.Fprintf(w, "; the tables hold what it measured.")
	}
	fmt.Fprintf(w, "\n\n")

	fmt.Fprintf(w, "## Test environment\n\n")
	envs := []side{{res: r}}
	if a.res != r {
		envs = sides
	}
	for _, env := range envs {
		res := env.res
		e := res.Environment
		if len(envs) > 1 {
			fmt.Fprintf(w, "%s, run on %s:\n\n", env.label, res.Started.Format("2006-01-02"))
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
	for _, s := range sides {
		fmt.Fprintf(w, "| %s | %s (%s) | %s | %s |\n", cell(s.label), s.target.Name, s.target.Kind, cell(s.target.Version), s.target.Address)
	}
	for _, s := range sides {
		if l := clusterLayout(s); l != "" {
			fmt.Fprintf(w, "\nThe %s playground: %s.\n", s.label, l)
		}
	}

	fmt.Fprintf(w, "\n## Parameter configuration\n\n")
	fmt.Fprintf(w, "Sysbench: %d tables of %d rows, `--rand-type=%s`, `--db-ps-mode=%s`, %d s warm-up, %d s per run, threads %s.\n\n",
		p.Tables, p.TableSize, p.RandType, p.PSMode, p.WarmupSeconds, p.RunSeconds, joinInts(p.Threads))
	if p.Prepare == PrepareImport {
		fmt.Fprintf(w, "Basalt's tables were made by IMPORT INTO from sysbench's rows written as CSV (`prepare = \"import\"`); other targets' by `sysbench oltp_common prepare`.\n\n")
	}
	for _, s := range sides {
		spec := specOf(s)
		fmt.Fprintf(w, "%s (`%s`", s.label, spec.Binary)
		if len(spec.Args) > 0 {
			fmt.Fprintf(w, " with `%s`", strings.Join(spec.Args, " "))
		}
		fmt.Fprintf(w, "), settings in force:\n\n| Variable | Value |\n| --- | --- |\n")
		for _, k := range sortedKeys(s.target.Variables) {
			fmt.Fprintf(w, "| %s | %s |\n", k, cell(settingValue(s.target, k)))
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
	if slices.Contains(workloads, BulkInsert) {
		fmt.Fprintf(w, "7. `bulk_insert` inserts into tables of its own, one per thread: before each of its runs, a fresh database `%s` and `sysbench bulk_insert prepare` with the run's thread count; after it, `sysbench bulk_insert cleanup` and the database dropped. The `sbtest` tables are not used.\n", bulkDB)
	}
	fmt.Fprintf(w, "\n")
	for _, s := range sides {
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
	writePrepareTable(w, sides)
	for _, wl := range workloads {
		runs := make([][]ThreadRun, len(sides))
		for i, s := range sides {
			if x := s.target.workload(wl); x != nil {
				runs[i] = x.Runs
			}
		}
		rt := rateOf(wl)
		rows := compareRuns(runs, rt.Of)
		fmt.Fprintf(w, "### %s\n\n| Threads", wl)
		for _, s := range sides {
			fmt.Fprintf(w, " | %s %s | %s 95%% latency (ms) | %s peak RSS MiB", s.label, rt.Label, s.label, s.label)
		}
		for _, s := range others {
			if len(others) == 1 {
				fmt.Fprintf(w, " | %s improvement", rt.Label)
			} else {
				fmt.Fprintf(w, " | %s %s improvement", s.label, rt.Label)
			}
		}
		fmt.Fprintf(w, " |\n|%s\n", strings.Repeat(" ---: |", 1+3*len(sides)+len(others)))
		for _, x := range rows {
			fmt.Fprintf(w, "| %d", x.Threads)
			for i, f := range x.Sides {
				fmt.Fprintf(w, " | %s | %s | %s", num(f.Rate, f.OK), num(f.P95, f.OK), rssCell(sides[i], f.RSS, f.OK, f.RSSOK))
			}
			for _, f := range x.Sides[1:] {
				imp := "-"
				if f.HasImprovement {
					imp = percent(f.Improvement)
				}
				fmt.Fprintf(w, " | %s", imp)
			}
			fmt.Fprintf(w, " |\n")
		}
		fmt.Fprintf(w, "\n")
		for i := range others {
			if len(others) > 1 {
				fmt.Fprintf(w, "- ")
			}
			fmt.Fprintf(w, "%s\n", summarize(wl, sides, i+1, rows))
		}
		fmt.Fprintf(w, "\n![%s: %s and 95%% latency against threads](%s)\n\n", wl, rt.Label, chartFile(wl))
	}
}

// joinAnd joins names as a sentence lists them: "a", "a and b", "a, b
// and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// clusterLayout describes a playground target's nodes, as its processes'
// names in the run's memory figures show them (pd1, store1, db1,
// haproxy), and the CPU caps and config files of its flags; "" for
// another kind of target.
func clusterLayout(s side) string {
	if s.target.Kind != KindPlayground {
		return ""
	}
	count := map[string]int{}
	proxy := false
	var peaks map[string]int64
	if s.target.PrepareRSS != nil {
		peaks = s.target.PrepareRSS.Peaks
	}
	for _, wr := range s.target.Workloads {
		for _, run := range wr.Runs {
			if peaks == nil && run.RSS != nil {
				peaks = run.RSS.Peaks
			}
		}
	}
	for name := range peaks {
		role := strings.TrimRight(name, "0123456789")
		if name == "haproxy" {
			proxy = true
		} else if role != name {
			count[role]++
		}
	}
	var parts []string
	if len(count) == 0 {
		parts = append(parts, "nodes not recorded (basalt playground's default is 1 PD, 3 stores and 1 SQL node behind HAProxy)")
	} else {
		nodes := fmt.Sprintf("%s, %s and %s", plural(count["pd"], "PD member"), plural(count["store"], "store"), plural(count["db"], "SQL node"))
		if proxy {
			nodes += " behind HAProxy"
		}
		parts = append(parts, nodes)
	}
	args := specOf(s).Args
	caps := []string{}
	for _, c := range []struct{ flag, what string }{{"db.cpus", "each SQL node"}, {"kv.cpus", "each store"}} {
		if v := flagValue(args, c.flag); v != "" && v != "0" {
			caps = append(caps, fmt.Sprintf("%s at %s CPU", c.what, v))
		}
	}
	if len(caps) == 0 {
		parts = append(parts, "no CPU caps (every process shares the machine's cores, sysbench's too)")
	} else {
		parts = append(parts, "CPU capped with cgroups: "+strings.Join(caps, ", "))
	}
	for _, c := range []string{"pd.config", "kv.config", "db.config"} {
		if v := flagValue(args, c); v != "" {
			parts = append(parts, fmt.Sprintf("--%s %s", c, v))
		}
	}
	return strings.Join(parts, "; ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// flagValue is the value of --name (or -name) in args, as "--name V" or
// "--name=V"; "" if it is not there.
func flagValue(args []string, name string) string {
	v := ""
	for i, a := range args {
		f := strings.TrimLeft(a, "-")
		if f == name && i+1 < len(args) && a != f {
			v = args[i+1]
		} else if k, val, ok := strings.Cut(f, "="); ok && k == name && a != f {
			v = val
		}
	}
	return v
}

// settingValue is a variable's value as the settings table shows it:
// Basalt's max_connections 0 means no limit (as TiDB's), not none.
func settingValue(t *TargetResult, name string) string {
	v := t.Variables[name]
	if name == "max_connections" && v == "0" && (t.Kind == KindBasalt || t.Kind == KindPlayground) {
		return "0 (no limit)"
	}
	return v
}

// writePrepareTable writes how long making the tables took on each side
// and the peak resident memory of its servers meanwhile, total and per
// process.
func writePrepareTable(w io.Writer, sides []side) {
	if !slices.ContainsFunc(sides, func(s side) bool { return s.target.PrepareSeconds != 0 || s.target.PrepareRSS != nil }) {
		return
	}
	fmt.Fprintf(w, "### Preparing the tables\n\n")
	fmt.Fprintf(w, "| System | Prepare (s) | Peak RSS MiB | Peak RSS MiB by process |\n| --- | ---: | ---: | --- |\n")
	for _, s := range sides {
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
