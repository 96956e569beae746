package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// SchemaVersion is the version of the results.json schema below. It
// changes only when a field changes meaning or is removed; new fields may
// be added without changing it.
const SchemaVersion = 1

// Results is results.json: everything one "basalt bench run" measured and
// how. The schema (JSON names in the struct tags):
//
//	{
//	  "schema": 1,
//	  "started": RFC 3339 time, "finished": RFC 3339 time or absent,
//	  "complete": true once every run of the plan finished,
//	  "error": the error that stopped the run, or absent,
//	  "environment": Environment (machine, OS, tool versions),
//	  "plan": Plan (as run, after flag overrides),
//	  "scale": ScalePlan, only in a scale-out run's results,
//	  "targets": [TargetResult...] in plan order
//	}
//
// A TargetResult holds the target's version, its settings in force, the
// exact setup commands, and per workload the warm-up commands and one
// ThreadRun per thread count: its exact sysbench command line, every
// per-second Interval, the final Summary and the peak resident memory of
// the target's servers during it (RunRSS).
type Results struct {
	Schema      int         `json:"schema"`
	Started     time.Time   `json:"started"`
	Finished    *time.Time  `json:"finished,omitempty"`
	Complete    bool        `json:"complete"`
	Error       string      `json:"error,omitempty"`
	Environment Environment `json:"environment"`
	Plan        Plan        `json:"plan"`
	// Scale is set by a scale-out run: its targets are one playground
	// per SQL node count, in Scale.Nodes order.
	Scale   *ScalePlan     `json:"scale,omitempty"`
	Targets []TargetResult `json:"targets"`
}

// Environment is the test environment of a run.
type Environment struct {
	Hostname        string `json:"hostname"`
	CPUModel        string `json:"cpu_model"`
	CPUCores        int    `json:"cpu_cores"`
	MemoryBytes     int64  `json:"memory_bytes"`
	Disk            string `json:"disk"` // df of the directory holding the data dirs
	OS              string `json:"os"`   // PRETTY_NAME of /etc/os-release
	Kernel          string `json:"kernel"`
	GoVersion       string `json:"go_version"`
	SysbenchVersion string `json:"sysbench_version"`
	BasaltVersion   string `json:"basalt_version,omitempty"`
	MariaDBVersion  string `json:"mariadb_version,omitempty"`
}

// TargetResult is one target's part of a run.
type TargetResult struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // basalt, playground, mariadb or dsn
	Address string `json:"address"`
	// Version is SELECT VERSION() on the target.
	Version string `json:"version"`
	// Restored says whether each workload started from the backup taken
	// after prepare. It is false for dsn targets: their workloads run one
	// after another on the same, changing data.
	Restored bool   `json:"restored"`
	Note     string `json:"note,omitempty"`
	// Variables are the settings in force: SHOW VARIABLES of a few.
	Variables map[string]string `json:"variables"`
	// Setup are the exact commands and statements of the preparation.
	Setup []string `json:"setup"`
	// PrepareSeconds is how long making the tables took (sysbench's
	// prepare or the import), before ANALYZE TABLE.
	PrepareSeconds float64 `json:"prepare_seconds,omitempty"`
	// PrepareRSS is the peak resident memory of the target's server
	// processes while the tables were made and analyzed; absent for a
	// dsn target (not measured: not a process this run started) and
	// where nothing was prepared.
	PrepareRSS *RunRSS          `json:"prepare_rss,omitempty"`
	Workloads  []WorkloadResult `json:"workloads"`
}

// WorkloadResult is one workload on one target.
type WorkloadResult struct {
	Workload string      `json:"workload"`
	Warmup   []string    `json:"warmup"` // the exact warm-up commands
	Runs     []ThreadRun `json:"runs"`   // in the plan's thread order
}

// ThreadRun is one sysbench run at one thread count.
type ThreadRun struct {
	Threads   int        `json:"threads"`
	Command   string     `json:"command"`
	Started   time.Time  `json:"started"`
	Intervals []Interval `json:"intervals"`
	Summary   Summary    `json:"summary"`
	// CPU is where the machine's CPU went during the run, and whether
	// capped nodes were throttled; absent where it cannot be read.
	CPU *RunCPU `json:"cpu,omitempty"`
	// RSS is the peak resident memory of the target's server processes
	// during the run (see RunRSS); absent for a dsn target, whose server
	// this run did not start, and so not measured.
	RSS *RunRSS `json:"rss,omitempty"`
	// Setup are the commands that made this run's own tables before it
	// and dropped them after: bulk_insert's, which are not the prepared
	// sbtest tables (see bulkInsert).
	Setup []string `json:"setup,omitempty"`
	// Error is why sysbench failed; the run then has the intervals it
	// printed and no summary, and reports leave it out.
	Error string `json:"error,omitempty"`
}

// Interval is one line of sysbench --report-interval=1:
//
//	[ 1s ] thds: 4 tps: 512.91 qps: 10278.20 (r/w/o: 7195.24/2054.64/1028.32) lat (ms,95%): 11.24 err/s: 0.00 reconn/s: 0.00
type Interval struct {
	Second       float64 `json:"second"`
	Threads      int     `json:"threads"`
	TPS          float64 `json:"tps"`
	QPS          float64 `json:"qps"`
	ReadQPS      float64 `json:"read_qps"`
	WriteQPS     float64 `json:"write_qps"`
	OtherQPS     float64 `json:"other_qps"`
	P95Ms        float64 `json:"p95_ms"`
	ErrPerSec    float64 `json:"err_per_sec"`
	ReconnPerSec float64 `json:"reconn_per_sec"`
}

// Summary is sysbench's final report of a run.
type Summary struct {
	Seconds      float64 `json:"seconds"`
	Transactions int64   `json:"transactions"`
	TPS          float64 `json:"tps"`
	Queries      int64   `json:"queries"`
	QPS          float64 `json:"qps"`
	AvgLatencyMs float64 `json:"avg_latency_ms"`
	P95LatencyMs float64 `json:"p95_latency_ms"`
	MaxLatencyMs float64 `json:"max_latency_ms"`
	// Errors are sysbench's "ignored errors": deadlocks and lock wait
	// timeouts after which it retried the transaction.
	Errors     int64 `json:"errors"`
	Reconnects int64 `json:"reconnects"`
}

// WriteFile writes r to path atomically (a temporary file renamed over it).
func (r *Results) WriteFile(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".results-*.json")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes it 0600
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// ReadResults reads a results.json, or the one in the directory path that
// "basalt bench run --out" wrote.
func ReadResults(path string) (*Results, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "results.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != SchemaVersion {
		return nil, fmt.Errorf("%s: results schema %d, want %d", path, r.Schema, SchemaVersion)
	}
	return &r, nil
}
