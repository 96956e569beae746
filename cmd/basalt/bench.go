package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/basalt-db/basalt/bench"
)

// benchMain is "basalt bench run|report": the Sysbench test plan of the
// reports and the report. Exit status: 0 on success, 1 if the run or the
// report fails, 2 for a bad command line.
func benchMain(args []string, stdout, stderr io.Writer) int {
	usage := "Usage: basalt bench run [--plan quick|report|FILE.toml] [flags] --out DIR\n       basalt bench report --in results.json [--baseline other.json] --out DIR\n       basalt bench scale [--nodes 1,2,4] [--db.cpus 0.25] [flags] --out DIR   (or --in DIR: re-render)\n"
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return benchRun(args[1:], stderr)
	case "report":
		return benchReport(args[1:], stdout, stderr)
	case "scale":
		return benchScale(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "basalt bench: unknown command %q\n%s", args[0], usage)
	return 2
}

func benchRun(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("basalt bench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		planName   = fs.String("plan", "quick", "the test plan: quick, report or a TOML file")
		out        = fs.String("out", "", "the directory for results.json (required)")
		workDir    = fs.String("work-dir", "", "where the servers' temporary data directories go (default $TMPDIR)")
		targets    = fs.String("targets", "", "comma-separated targets, overriding the plan's: basalt, playground, mariadb, HOST:PORT, each optionally NAME=...")
		basaltBin  = fs.String("basalt", "", "the basalt binary of basalt and playground targets (default: this executable)")
		workloads  = fs.String("workloads", "", "comma-separated sysbench workloads, overriding the plan's")
		threads    = fs.String("threads", "", "comma-separated thread counts, overriding the plan's")
		tables     = fs.Int("tables", 0, "number of tables, overriding the plan's")
		tableSize  = fs.Int("table-size", 0, "rows per table, overriding the plan's")
		runSecs    = fs.Int("time", 0, "seconds per run, overriding the plan's")
		warmupSecs = fs.Int("warmup", -1, "seconds of warm-up per workload, overriding the plan's (0: none)")
		randType   = fs.String("rand-type", "", "sysbench --rand-type, overriding the plan's")
		psMode     = fs.String("ps-mode", "", "sysbench --db-ps-mode (auto or disable), overriding the plan's")
		prepare    = fs.String("prepare", "", "how basalt targets make the tables: sysbench (oltp_common prepare) or import (sysbench's rows through IMPORT INTO), overriding the plan's")
		quiet      = fs.Bool("quiet", false, "log lines instead of the live progress line")
	)
	fs.StringVar(targets, "target", "", "the same as --targets (--target playground, --target HOST:PORT)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "basalt bench run: --out DIR is required and there are no arguments (run basalt bench run -h)")
		return 2
	}
	plan, err := bench.LoadPlan(*planName)
	if err != nil {
		fmt.Fprintf(stderr, "basalt bench run: %v\n", err)
		return 2
	}
	if *targets != "" {
		plan.Targets = nil
		for _, s := range splitList(*targets) {
			t, err := bench.ParseTarget(s)
			if err != nil {
				fmt.Fprintf(stderr, "basalt bench run: --targets: %v\n", err)
				return 2
			}
			plan.Targets = append(plan.Targets, t)
		}
	}
	if *basaltBin != "" {
		for i := range plan.Targets {
			if k := plan.Targets[i].Kind; k == bench.KindBasalt || k == bench.KindPlayground {
				plan.Targets[i].Binary = *basaltBin
			}
		}
	}
	if *workloads != "" {
		plan.Workloads = splitList(*workloads)
	}
	if *threads != "" {
		plan.Threads = nil
		for _, s := range splitList(*threads) {
			n, err := strconv.Atoi(s)
			if err != nil {
				fmt.Fprintf(stderr, "basalt bench run: --threads: %q is not a number\n", s)
				return 2
			}
			plan.Threads = append(plan.Threads, n)
		}
	}
	setInt(&plan.Tables, *tables, 0)
	setInt(&plan.TableSize, *tableSize, 0)
	setInt(&plan.RunSeconds, *runSecs, 0)
	setInt(&plan.WarmupSeconds, *warmupSecs, -1)
	if *randType != "" {
		plan.RandType = *randType
	}
	if *psMode != "" {
		plan.PSMode = *psMode
	}
	if *prepare != "" {
		plan.Prepare = *prepare
	}
	if err := plan.Validate(); err != nil {
		fmt.Fprintf(stderr, "basalt bench run: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	live := !*quiet && stderr == os.Stderr && bench.IsTerminal(os.Stderr)
	res, err := bench.Run(ctx, bench.Options{
		Plan:     plan,
		OutDir:   *out,
		WorkDir:  *workDir,
		Progress: bench.NewProgress(stderr, live),
	})
	if err != nil {
		fmt.Fprintf(stderr, "basalt bench run: %v\n", err)
		if res != nil {
			fmt.Fprintf(stderr, "basalt bench run: the results gathered so far are in %s/%s\n", *out, bench.ResultsFile)
		}
		return 1
	}
	fmt.Fprintf(stderr, "results: %s/%s\n", *out, bench.ResultsFile)
	return 0
}

func benchReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("basalt bench report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		in       = fs.String("in", "", "the results.json to report, or the directory run --out wrote (required)")
		baseline = fs.String("baseline", "", "an earlier results.json (or its directory): compare the same target across the two runs")
		target   = fs.String("target", "", "with --baseline, the target to compare (default: the first)")
		a        = fs.String("a", "", "without --baseline, the reference target A (default: the second target)")
		b        = fs.String("b", "", "without --baseline, the target B compared with A (default: the first target)")
		out      = fs.String("out", "", "the directory for report.md and the charts (required)")
	)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *in == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "basalt bench report: --in and --out are required and there are no arguments (run basalt bench report -h)")
		return 2
	}
	opts := bench.ReportOptions{A: *a, B: *b, Target: *target}
	var err error
	if opts.Results, err = bench.ReadResults(*in); err == nil && *baseline != "" {
		opts.Baseline, err = bench.ReadResults(*baseline)
	}
	if err == nil {
		err = bench.WriteReport(*out, opts)
	}
	if err != nil {
		fmt.Fprintf(stderr, "basalt bench report: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "report: %s/%s\n", *out, bench.ReportFile)
	return 0
}

// benchScale is "basalt bench scale": the scale-out scenario, one
// playground per SQL node count, and its report; with --in, the report of
// an earlier run only.
func benchScale(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("basalt bench scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		nodes      = fs.String("nodes", "1,2,4", "comma-separated SQL node counts, one playground each")
		dbCPUs     = fs.Float64("db.cpus", 0.25, "cap each SQL node at this many CPUs (cgroup v1 cpu controller, as root; 0: no cap)")
		kvCPUs     = fs.Float64("kv.cpus", 0, "cap each store at this many CPUs (0: no cap)")
		stores     = fs.Int("kv", 0, "stores per playground (0: the playground's default, 3)")
		perNode    = fs.Int("threads-per-node", 8, "sysbench threads per SQL node")
		workloads  = fs.String("workloads", "oltp_point_select,oltp_read_write", "comma-separated sysbench workloads")
		tables     = fs.Int("tables", 4, "number of tables")
		tableSize  = fs.Int("table-size", 10000, "rows per table")
		runSecs    = fs.Int("time", 20, "seconds per run")
		warmupSecs = fs.Int("warmup", 5, "seconds of warm-up per workload and node count (0: none)")
		randType   = fs.String("rand-type", "uniform", "sysbench --rand-type")
		psMode     = fs.String("ps-mode", "auto", "sysbench --db-ps-mode (auto or disable)")
		basaltBin  = fs.String("basalt", "", "the basalt binary of the playgrounds (default: this executable)")
		workDir    = fs.String("work-dir", "", "where the playgrounds' temporary directories go (default $TMPDIR)")
		in         = fs.String("in", "", "re-render the report of an earlier run: the directory (or results.json) it wrote")
		out        = fs.String("out", "", "the directory for results.json, report.md and the charts (required)")
		quiet      = fs.Bool("quiet", false, "log lines instead of the live progress line")
	)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "basalt bench scale: --out DIR is required and there are no arguments (run basalt bench scale -h)")
		return 2
	}
	if *in != "" {
		res, err := bench.ReadResults(*in)
		if err == nil {
			err = bench.WriteScaleReport(*out, res)
		}
		if err != nil {
			fmt.Fprintf(stderr, "basalt bench scale: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "report: %s/%s\n", *out, bench.ReportFile)
		return 0
	}
	scale := bench.ScalePlan{DBCPUs: *dbCPUs, KVCPUs: *kvCPUs, Stores: *stores, ThreadsPerNode: *perNode}
	for _, s := range splitList(*nodes) {
		n, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintf(stderr, "basalt bench scale: --nodes: %q is not a number\n", s)
			return 2
		}
		scale.Nodes = append(scale.Nodes, n)
	}
	plan := bench.Plan{Workloads: splitList(*workloads), Tables: *tables, TableSize: *tableSize,
		RunSeconds: *runSecs, WarmupSeconds: *warmupSecs, RandType: *randType, PSMode: *psMode}
	// Checked here so that a bad command line exits 2, not 1 after a start.
	check := plan
	check.Targets = []bench.TargetSpec{{Kind: bench.KindPlayground, Threads: []int{1}}}
	if err := check.Validate(); err != nil {
		fmt.Fprintf(stderr, "basalt bench scale: %v\n", err)
		return 2
	}
	if err := scale.Validate(); err != nil {
		fmt.Fprintf(stderr, "basalt bench scale: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	live := !*quiet && stderr == os.Stderr && bench.IsTerminal(os.Stderr)
	res, err := bench.RunScale(ctx, bench.ScaleOptions{
		Scale:    scale,
		Plan:     plan,
		Binary:   *basaltBin,
		OutDir:   *out,
		WorkDir:  *workDir,
		Progress: bench.NewProgress(stderr, live),
	})
	if err != nil {
		fmt.Fprintf(stderr, "basalt bench scale: %v\n", err)
		if res != nil {
			fmt.Fprintf(stderr, "basalt bench scale: what was measured is in %s/%s\n", *out, bench.ResultsFile)
		}
		return 1
	}
	fmt.Fprintf(stdout, "report: %s/%s\n", *out, bench.ReportFile)
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// setInt sets *dst to v unless v is the flag's unset value.
func setInt(dst *int, v, unset int) {
	if v != unset {
		*dst = v
	}
}
