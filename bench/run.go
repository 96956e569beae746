package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Options configure Run.
type Options struct {
	Plan *Plan
	// OutDir receives results.json; it is created if missing.
	OutDir string
	// WorkDir holds the temporary data directories of the servers Run
	// starts; empty means os.TempDir().
	WorkDir string
	// Progress shows what Run is doing; nil shows nothing.
	Progress *Progress
	// Scale, if not nil, says that the plan is a scale-out run (see
	// RunScale); it is stored in results.json.
	Scale *ScalePlan
}

// ResultsFile is the name of the results in Options.OutDir.
const ResultsFile = "results.json"

// Run runs the plan: for each target, start it, create database sbtest,
// sysbench oltp_common prepare, ANALYZE TABLE each table, stop it and back
// up its data directory; then for each workload restore the backup, warm
// up, and run sysbench once per thread count. results.json is written
// after every run; on an error Run stops, records the error in it and
// returns the error with what it gathered so far. Every server Run started
// is stopped and its directories removed before it returns.
func Run(ctx context.Context, opts Options) (res *Results, err error) {
	plan := opts.Plan
	if err := plan.Validate(); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("sysbench"); err != nil {
		return nil, errors.New("sysbench is not installed (apt-get install sysbench)")
	}
	workDir := opts.WorkDir
	if workDir == "" {
		workDir = os.TempDir()
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(opts.OutDir, ResultsFile)
	prog := opts.Progress
	if prog == nil {
		prog = NewProgress(nil, false)
	}

	// Every target is made before any runs, so that a missing mariadbd
	// stops the run before the first target's long sweep.
	var targets []target
	defer func() {
		for _, t := range targets {
			if cerr := t.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("stopping %s: %w", t.Spec().Name, cerr))
			}
		}
	}()
	for _, spec := range plan.Targets {
		t, err := newTarget(spec, workDir)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}

	res = &Results{
		Schema:      SchemaVersion,
		Started:     time.Now().UTC(),
		Environment: gatherEnvironment(plan, workDir),
		Plan:        *plan,
		Scale:       opts.Scale,
	}
	for i, t := range targets {
		res.Plan.Targets[i] = t.Spec()
	}
	save := func() error { return res.WriteFile(path) }
	if err := save(); err != nil {
		return res, err
	}
	prog.begin(plan)
	defer prog.end()
	for _, t := range targets {
		res.Targets = append(res.Targets, TargetResult{
			Name:     t.Spec().Name,
			Kind:     t.Spec().Kind,
			Restored: t.Restorable(),
		})
		tr := &res.Targets[len(res.Targets)-1]
		if err := runTarget(ctx, plan, t, tr, prog, save, workDir); err != nil {
			err = fmt.Errorf("target %s: %w", t.Spec().Name, err)
			res.Error = err.Error()
			now := time.Now().UTC()
			res.Finished = &now
			return res, errors.Join(err, save())
		}
		// Stop it now: the next target should not share the machine with it.
		if cerr := t.Close(); cerr != nil {
			prog.logf("%s: %v", t.Spec().Name, cerr)
		}
	}
	now := time.Now().UTC()
	res.Finished = &now
	res.Complete = true
	return res, save()
}

// runTarget runs the plan on one target, filling tr and calling save after
// every sysbench run.
func runTarget(ctx context.Context, plan *Plan, t target, tr *TargetResult, prog *Progress, save func() error, workDir string) error {
	spec := t.Spec()
	prog.stage(spec.Name, "starting")
	if err := t.Start(ctx); err != nil {
		return err
	}
	tr.Address = t.Address()
	conn := t.Conn()
	data := []string{"--tables=" + strconv.Itoa(plan.Tables), "--table-size=" + strconv.Itoa(plan.TableSize)}

	db, err := sql.Open("mysql", t.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&tr.Version); err != nil {
		return fmt.Errorf("SELECT VERSION(): %w", err)
	}
	tr.Variables = showSettings(ctx, db, t.Spec().Kind)
	measured := serverProcesses(t) != nil

	prepare := true
	create := "CREATE DATABASE sbtest"
	if !t.Restorable() {
		create = "CREATE DATABASE IF NOT EXISTS sbtest"
		tr.Note = "an already running server: no restore between workloads, so each workload runs on the data the previous ones changed"
		var n int
		if db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sbtest.sbtest1").Scan(&n) == nil {
			prepare = false
			tr.Note += fmt.Sprintf("; sbtest.sbtest1 existed (%d rows) and was used as it was, not prepared", n)
		}
	}
	if !measured {
		tr.Note = addNote(tr.Note, "peak RSS not measured: its server is not a process this run started")
	}
	tr.Setup = append(tr.Setup, create+";")
	if _, err := db.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("%s: %w", create, err)
	}
	if prepare {
		prog.stage(spec.Name, fmt.Sprintf("preparing %d tables of %d rows", plan.Tables, plan.TableSize))
		rss := startRSS(serverProcesses(t))
		defer rss.finish() // on errors
		began := time.Now()
		if plan.Prepare == PrepareImport && spec.Kind == KindBasalt {
			setup, err := PrepareByImport(ctx, db, plan.Tables, plan.TableSize, workDir)
			tr.Setup = append(tr.Setup, setup...)
			if err != nil {
				return err
			}
		} else {
			args := sysbenchArgs(conn, "oltp_common", "prepare", append(data, "--threads="+strconv.Itoa(min(plan.Tables, 8)))...)
			tr.Setup = append(tr.Setup, commandString("sysbench", args))
			if _, err := runSysbench(ctx, args, nil); err != nil {
				return err
			}
		}
		tr.PrepareSeconds = time.Since(began).Seconds()
		for i := 1; i <= plan.Tables; i++ {
			q := fmt.Sprintf("ANALYZE TABLE sbtest.sbtest%d", i)
			tr.Setup = append(tr.Setup, q+";")
			rows, err := db.QueryContext(ctx, q)
			if err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			rows.Close()
		}
		tr.PrepareRSS = rss.finish()
	}
	db.Close()
	if t.Restorable() {
		prog.stage(spec.Name, "backing up")
		steps := "# stop the server; copy its data directory as the backup"
		if b, ok := t.(interface{ backupSteps() string }); ok {
			steps = b.backupSteps()
		}
		tr.Setup = append(tr.Setup, steps)
		if err := t.Backup(); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	}
	if err := save(); err != nil {
		return err
	}

	var cgroups string // the directory of the target's nodes' cgroups, if any
	if c, ok := t.(interface{ cgroupDir() string }); ok {
		cgroups = c.cgroupDir()
	}
	for _, workload := range plan.Workloads {
		tr.Workloads = append(tr.Workloads, WorkloadResult{Workload: workload})
		wr := &tr.Workloads[len(tr.Workloads)-1]
		bulk := workload == BulkInsert // its own tables: bulk.go
		if t.Restorable() {
			prog.stage(spec.Name, workload+": restoring the backup")
			steps := "# stop the server; replace its data directory with the backup; start it"
			if r, ok := t.(interface{ restoreSteps() string }); ok {
				steps = r.restoreSteps()
			}
			wr.Warmup = append(wr.Warmup, steps)
			if err := t.Restore(ctx); err != nil {
				return fmt.Errorf("%s: restore: %w", workload, err)
			}
		}
		wconn := conn
		if bulk {
			wconn = bulkConn(conn)
		}
		if plan.WarmupSeconds > 0 {
			prog.stage(spec.Name, workload+": warming up")
			// prewarm reads every table through its indexes; a server that
			// cannot run its statements is warmed by the run below alone.
			// bulk_insert reads none of them.
			if !bulk {
				args := sysbenchArgs(conn, "oltp_common", "prewarm", append(data, "--threads="+strconv.Itoa(min(plan.Tables, 8)))...)
				cmd := commandString("sysbench", args)
				if _, err := runSysbench(ctx, args, nil); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					cmd += "  # failed, ignored: " + firstLine(fatalOrError(err))
				}
				wr.Warmup = append(wr.Warmup, cmd)
			}
			threads := min(16, maxInt(plan.threads(spec)))
			if bulk {
				setup, err := bulkPrepare(ctx, t, threads)
				wr.Warmup = append(wr.Warmup, setup...)
				if err != nil {
					return fmt.Errorf("%s warm-up: %w", workload, err)
				}
			}
			args := sysbenchArgs(wconn, workload, "run", append(workloadArgs(plan, workload), "--threads="+strconv.Itoa(threads), "--time="+strconv.Itoa(plan.WarmupSeconds))...)
			wr.Warmup = append(wr.Warmup, commandString("sysbench", args))
			prog.run(spec.Name, workload, "warm-up", plan.WarmupSeconds)
			_, err := runSysbench(ctx, args, prog.interval)
			if bulk {
				setup, cerr := bulkCleanup(ctx, t, threads)
				wr.Warmup = append(wr.Warmup, setup...)
				err = errors.Join(err, cerr)
			}
			if err != nil {
				return fmt.Errorf("%s warm-up: %w", workload, err)
			}
			prog.skip()
		}
		for _, threads := range plan.threads(spec) {
			args := sysbenchArgs(wconn, workload, "run", append(workloadArgs(plan, workload),
				"--threads="+strconv.Itoa(threads),
				"--time="+strconv.Itoa(plan.RunSeconds),
				"--report-interval=1",
				"--percentile=95")...)
			run := ThreadRun{Threads: threads, Command: commandString("sysbench", args)}
			if bulk {
				prog.stage(spec.Name, fmt.Sprintf("%s: making its %d tables", workload, threads))
				setup, err := bulkPrepare(ctx, t, threads)
				run.Setup = setup
				if err != nil {
					run.Error = err.Error()
					wr.Runs = append(wr.Runs, run)
					return fmt.Errorf("%s with %d threads: %w", workload, threads, err)
				}
			}
			run.Started = time.Now().UTC()
			prog.run(spec.Name, workload, fmt.Sprintf("%d threads", threads), plan.RunSeconds)
			before := sampleCPU(cgroups)
			rss := startRSS(serverProcesses(t))
			out, err := runSysbench(ctx, args, func(iv Interval) {
				run.Intervals = append(run.Intervals, iv)
				prog.interval(iv)
			})
			run.RSS = rss.finish()
			run.CPU = cpuBetween(before, sampleCPU(cgroups))
			if bulk {
				setup, cerr := bulkCleanup(ctx, t, threads)
				run.Setup = append(run.Setup, setup...)
				if err == nil && cerr != nil {
					err = fmt.Errorf("after the run: %w", cerr)
				}
			}
			sum, ok := ParseSummary(out)
			if err == nil && !ok {
				err = fmt.Errorf("no summary in sysbench's output, which ends:\n%s", Tail(out, 20))
			}
			if err != nil {
				run.Error = err.Error()
				wr.Runs = append(wr.Runs, run)
				return fmt.Errorf("%s with %d threads: %w", workload, threads, err)
			}
			run.Summary = sum
			wr.Runs = append(wr.Runs, run)
			prog.done(sum)
			if err := save(); err != nil {
				return err
			}
		}
	}
	return nil
}

// workloadArgs are the sysbench options of every run of workload under
// plan: runArgs, but none for bulk_insert, which has its own tables
// (bulk.go), draws no random keys and prepares no statements.
func workloadArgs(plan *Plan, workload string) []string {
	if workload == BulkInsert {
		return nil
	}
	return runArgs(plan)
}

// addNote appends a sentence to a target's note.
func addNote(note, more string) string {
	if note == "" {
		return more
	}
	return note + "; " + more
}

// runArgs are the sysbench options of every run of the plan.
func runArgs(plan *Plan) []string {
	return []string{
		"--tables=" + strconv.Itoa(plan.Tables),
		"--table-size=" + strconv.Itoa(plan.TableSize),
		"--rand-type=" + plan.RandType,
		"--db-ps-mode=" + plan.PSMode,
	}
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// fatalOrError is the first FATAL line quoted in err, else err's text.
func fatalOrError(err error) string {
	if lines := FatalLines(err.Error()); len(lines) > 0 {
		return lines[0]
	}
	return err.Error()
}
