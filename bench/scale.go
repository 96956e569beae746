package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The scale-out scenario of TiDB 1.0's Sysbench report: the same workload
// on clusters of 1, 2, 4 ... SQL nodes, the client threads growing with
// them, to show QPS growing as nodes are added. On one small machine each
// SQL node is capped to a fixed CPU share (basalt playground --db.cpus, a
// cgroup per node) so that a node added is capacity added.
//
// A scale-out run is an ordinary bench run whose targets are one
// playground per node count, each with its own thread count; results.json
// has the usual shape plus a "scale" object, and WriteScaleReport turns it
// into a table and a chart per workload against node count.

// ScalePlan is what makes a run a scale-out run; it is stored in
// results.json.
type ScalePlan struct {
	// Nodes are the SQL node counts, one playground each, in run order.
	Nodes []int `json:"nodes"`
	// DBCPUs and KVCPUs cap each SQL node and each store (0: no cap).
	DBCPUs float64 `json:"db_cpus"`
	KVCPUs float64 `json:"kv_cpus,omitempty"`
	// Stores is the playground's --kv (0: its default, 3).
	Stores int `json:"stores,omitempty"`
	// ThreadsPerNode times a cluster's SQL nodes is its sysbench threads.
	ThreadsPerNode int `json:"threads_per_node"`
}

// ScaleOptions configure RunScale.
type ScaleOptions struct {
	Scale ScalePlan
	// Plan gives the workloads, data size, run length, warm-up, rand type
	// and prepared statement mode; its targets and threads are replaced.
	Plan Plan
	// Binary is the basalt binary of the playgrounds (default: this
	// executable).
	Binary          string
	OutDir, WorkDir string
	Progress        *Progress
}

// ScalePlan's targets: one playground per node count, named "N SQL
// nodes", run with N × ThreadsPerNode threads.
func (s ScalePlan) targets(bin string) []TargetSpec {
	var specs []TargetSpec
	for _, n := range s.Nodes {
		args := []string{"--db", strconv.Itoa(n)}
		if s.DBCPUs > 0 {
			args = append(args, "--db.cpus", strconv.FormatFloat(s.DBCPUs, 'f', -1, 64))
		}
		if s.KVCPUs > 0 {
			args = append(args, "--kv.cpus", strconv.FormatFloat(s.KVCPUs, 'f', -1, 64))
		}
		if s.Stores > 0 {
			args = append(args, "--kv", strconv.Itoa(s.Stores))
		}
		specs = append(specs, TargetSpec{Name: nodesLabel(n), Kind: KindPlayground, Binary: bin,
			Args: args, Threads: []int{n * s.ThreadsPerNode}})
	}
	return specs
}

func nodesLabel(n int) string {
	if n == 1 {
		return "1 SQL node"
	}
	return strconv.Itoa(n) + " SQL nodes"
}

// Validate checks the node counts and threads per node.
func (s ScalePlan) Validate() error {
	if len(s.Nodes) == 0 {
		return errors.New("no node counts")
	}
	seen := map[int]bool{}
	for _, n := range s.Nodes {
		if n < 1 || seen[n] {
			return fmt.Errorf("node counts %v: want distinct counts of at least 1", s.Nodes)
		}
		seen[n] = true
	}
	if s.ThreadsPerNode < 1 {
		return fmt.Errorf("threads per node %d: want at least 1", s.ThreadsPerNode)
	}
	return nil
}

// RunScale runs the scale-out scenario: for each node count in turn, start
// a playground of that many SQL nodes (capped as the plan says; a
// playground that cannot make its cgroups refuses to start, and RunScale
// returns its error), prepare the sysbench tables on it, then per workload
// restore the backup taken after prepare and run sysbench through HAProxy
// with N × ThreadsPerNode threads; stop it. This is Run with one
// playground target per node count: results.json is written as it goes,
// and the report (WriteScaleReport) into OutDir at the end.
func RunScale(ctx context.Context, opts ScaleOptions) (*Results, error) {
	if err := opts.Scale.Validate(); err != nil {
		return nil, err
	}
	plan := opts.Plan
	plan.Name = "scale"
	plan.Threads = nil
	plan.Targets = opts.Scale.targets(opts.Binary)
	scale := opts.Scale
	res, err := Run(ctx, Options{Plan: &plan, OutDir: opts.OutDir, WorkDir: opts.WorkDir,
		Progress: opts.Progress, Scale: &scale})
	if err != nil {
		return res, err
	}
	return res, WriteScaleReport(opts.OutDir, res)
}

// scaleRow is one node count's line of a workload's table.
type scaleRow struct {
	Nodes, Threads int
	// Rate is the workload's (rateOf): QPS, or rows/s for bulk_insert.
	Rate, P95 float64
	Errors    int64
	// SpeedUp is Rate over the first node count's; 0 when that has none.
	SpeedUp float64
	// CPU and RSS are the run's; nil when they were not measured.
	CPU *RunCPU
	RSS *RunRSS
}

// scaleRows are workload's results per node count, in run order, leaving
// out node counts whose run failed or did not happen.
func scaleRows(res *Results, workload string) []scaleRow {
	var rows []scaleRow
	for i, tr := range res.Targets {
		if i >= len(res.Scale.Nodes) {
			break
		}
		wr := tr.workload(workload)
		if wr == nil {
			continue
		}
		for _, r := range wr.Runs {
			if r.Error == "" {
				rows = append(rows, scaleRow{Nodes: res.Scale.Nodes[i], Threads: r.Threads,
					Rate: rateOf(workload).Of(r.Summary), P95: r.Summary.P95LatencyMs, Errors: r.Summary.Errors, CPU: r.CPU, RSS: r.RSS})
			}
		}
	}
	if len(rows) > 0 && rows[0].Rate > 0 {
		for i := range rows {
			rows[i].SpeedUp = rows[i].Rate / rows[0].Rate
		}
	}
	return rows
}

// WriteScaleReport writes report.md, with a table per workload (SQL
// nodes, threads, QPS, p95, speed-up over the first node count, CPU,
// peak RSS), and a chart per workload of QPS and p95 against node count
// into dir.
func WriteScaleReport(dir string, res *Results) error {
	if res.Scale == nil {
		return errors.New("not the results of a scale-out run (basalt bench scale)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	writeScaleReport(&md, res)
	for _, w := range res.Plan.Workloads {
		var pts []chartPoint
		for _, r := range scaleRows(res, w) {
			pts = append(pts, chartPoint{X: r.Nodes, Rate: r.Rate, P95: r.P95})
		}
		if len(pts) == 0 {
			continue
		}
		series := []chartSeries{{Name: scaleCapLabel(*res.Scale), Points: pts}}
		if err := writeChart(filepath.Join(dir, chartFile(w)), w, "SQL nodes", series); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, ReportFile), []byte(md.String()), 0o644)
}

// scaleCapLabel says how the nodes were capped.
func scaleCapLabel(s ScalePlan) string {
	label := "SQL nodes uncapped"
	if s.DBCPUs > 0 {
		label = fmt.Sprintf("%g CPU per SQL node", s.DBCPUs)
	}
	if s.KVCPUs > 0 {
		label += fmt.Sprintf(", %g per store", s.KVCPUs)
	}
	return label
}

func writeScaleReport(w io.Writer, res *Results) {
	s, p, env := *res.Scale, res.Plan, res.Environment
	fmt.Fprintf(w, "# Basalt scale-out: sysbench QPS against SQL nodes\n\n")
	version, _, _ := strings.Cut(env.BasaltVersion, ";") // "Basalt v1.2.3"
	if version == "" && len(res.Targets) > 0 {
		version = "Basalt " + res.Targets[0].Version
	}
	stores := s.Stores
	if stores == 0 {
		stores = 3
	}
	storeCap := "stores uncapped"
	if s.KVCPUs > 0 {
		storeCap = fmt.Sprintf("each store capped at %g CPU", s.KVCPUs)
	}
	sqlCap := "SQL nodes uncapped"
	if s.DBCPUs > 0 {
		sqlCap = fmt.Sprintf("each SQL node capped at %g CPU (a cgroup v1 cpu controller cgroup per node, CFS quota per 100 ms)", s.DBCPUs)
	}
	fmt.Fprintf(w, "The scale-out scenario of TiDB 1.0's Sysbench report on one machine: "+
		"%s as `basalt playground` (1 PD, %d stores, %s SQL nodes behind HAProxy), %s, %s. "+
		"Each node count is a fresh playground: sysbench tables prepared and analyzed, backed up, "+
		"restored before each workload; sysbench runs through HAProxy with %d threads per SQL node. "+
		"Speed-up is QPS over that of %s. \"SQL nodes throttled\" is the mean share of their 100 ms CFS periods "+
		"in which the SQL nodes used up their quota during the run (near 0: the cap did not limit them); "+
		"\"Machine CPU busy\" is the share of the whole machine's CPU time that was not idle, "+
		"whoever used it (near 100%%: the machine, not the caps, was the limit). "+
		"\"Peak RSS\" is the sum of the highest resident memory of each of the playground's processes "+
		"(PD, stores, SQL nodes, HAProxy, the playground itself) during the run, in MiB; results.json has each "+
		"(targets[].workloads[].runs[].rss).\n\n",
		version, stores, joinInts(s.Nodes), sqlCap, storeCap, s.ThreadsPerNode, nodesLabel(s.Nodes[0]))
	if !res.Complete {
		fmt.Fprintf(w, "**The run did not complete**: %s\n\n", res.Error)
	}
	fmt.Fprintf(w, "| Parameter | Value |\n|---|---|\n")
	fmt.Fprintf(w, "| Machine | %s, %d CPUs, %.1f GiB |\n", cell(env.CPUModel), env.CPUCores, float64(env.MemoryBytes)/(1<<30))
	fmt.Fprintf(w, "| OS | %s, %s |\n", cell(env.OS), cell(env.Kernel))
	fmt.Fprintf(w, "| sysbench | %s |\n", cell(env.SysbenchVersion))
	fmt.Fprintf(w, "| Data | %d tables × %d rows |\n", p.Tables, p.TableSize)
	fmt.Fprintf(w, "| Runs | %d s each, warm-up %d s, --rand-type=%s, --db-ps-mode=%s |\n", p.RunSeconds, p.WarmupSeconds, p.RandType, p.PSMode)
	fmt.Fprintf(w, "| Started | %s |\n\n", res.Started.Format("2006-01-02 15:04 MST"))

	fmt.Fprintf(w, "## Results\n")
	for _, wl := range p.Workloads {
		rows := scaleRows(res, wl)
		fmt.Fprintf(w, "\n### %s\n\n", wl)
		if len(rows) == 0 {
			fmt.Fprintf(w, "No run finished.\n")
			continue
		}
		fmt.Fprintf(w, "| SQL nodes | Threads | %s | 95%% latency (ms) | Speed-up vs %s | Retried errors | SQL nodes throttled | Machine CPU busy | Peak RSS MiB |\n|---|---|---|---|---|---|---|---|---|\n",
			rateOf(wl).Label, nodesLabel(rows[0].Nodes))
		for _, r := range rows {
			throttled, busy, rss := "-", "-", "-"
			if t, ok := r.CPU.meanThrottled("db"); ok {
				throttled = fmt.Sprintf("%.0f%%", t)
			}
			if r.CPU != nil {
				busy = fmt.Sprintf("%.0f%%", r.CPU.MachineBusy)
			}
			if r.RSS != nil {
				rss = fmt.Sprintf("%.0f", r.RSS.MiB())
			}
			fmt.Fprintf(w, "| %d | %d | %.2f | %.2f | %s | %d | %s | %s | %s |\n", r.Nodes, r.Threads, r.Rate, r.P95, speedUp(r.SpeedUp), r.Errors, throttled, busy, rss)
		}
		fmt.Fprintf(w, "\n![%s](%s)\n", wl, chartFile(wl))
	}
	fmt.Fprintf(w, "\n## Commands\n\nEach playground, and every sysbench command run on it, is in results.json "+
		"(targets[].setup, targets[].workloads[].runs[].command).\n\n")
	for i, tr := range res.Targets {
		fmt.Fprintf(w, "- %s: `basalt playground %s`\n", tr.Name, strings.Join(p.Targets[i].Args, " "))
	}
}

// speedUp is a ratio of QPS as "1.95×", or "-" when there is none.
func speedUp(x float64) string {
	if x <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", x)
}
