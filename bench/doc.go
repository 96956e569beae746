// Package bench automates the Sysbench test plan of TiDB's published
// reports and writes the report: for each target (a basalt it starts, a
// Debian MariaDB it starts, or a server already running at an address) it
// prepares the sbtest tables, analyzes them, backs up the data directory,
// and then for each workload restores the backup, warms up and sweeps the
// thread counts, keeping every per-second interval line of sysbench.
//
// Contracts:
//
//   - Every server it starts listens on 127.0.0.1 on ports picked free at
//     start, with its data in a temporary directory it removes; Run stops
//     every server it started before it returns, also on errors and when
//     its context is cancelled.
//   - results.json (see Results) is rewritten after every sysbench run, so
//     a failed or interrupted run keeps what it gathered.
//   - The package does not import testing: cmd/basalt runs it.
//
// The files: plan.go is the test plan and its presets (plans/*.toml);
// results.go the results.json schema; sysbench.go runs sysbench and parses
// its output; server.go is a server process's lifecycle, target.go the
// three kinds of target on top of it; env.go gathers the test environment;
// run.go is the test plan's loop, bulk.go the tables of its one workload
// that makes its own (bulk_insert); cpu.go and rss.go measure the CPU and
// the peak memory of each run; progress.go shows it on a terminal;
// report.go writes report.md and chart.go its PNG charts.
package bench
