package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, elem ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParseSysbench reads outputs captured from sysbench 1.0.20 in
// testdata/sysbench: an oltp_read_write run with --report-interval=1 (one
// deadlock retried in its third second) and a run that failed at thread
// initialisation.
func TestParseSysbench(t *testing.T) {
	run := readTestdata(t, "sysbench", "run.txt")
	var got []Interval
	for _, line := range strings.Split(run, "\n") {
		if iv, ok := parseInterval(line); ok {
			got = append(got, iv)
		}
	}
	want := []Interval{
		{Second: 1, Threads: 4, TPS: 339.80, QPS: 6829.88, ReadQPS: 4788.07, WriteQPS: 1359.22, OtherQPS: 682.59, P95Ms: 24.38},
		{Second: 2, Threads: 4, TPS: 401.52, QPS: 8067.45, ReadQPS: 5645.31, WriteQPS: 1618.11, OtherQPS: 804.04, P95Ms: 20.00},
		{Second: 3, Threads: 4, TPS: 307.99, QPS: 6165.74, ReadQPS: 4321.80, WriteQPS: 1226.97, OtherQPS: 616.97, P95Ms: 38.94, ErrPerSec: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("intervals:\n got %+v\nwant %+v", got, want)
	}
	sum, ok := ParseSummary(run)
	wantSum := Summary{
		Seconds: 3.0318, Transactions: 1055, TPS: 347.92, Queries: 21116, QPS: 6963.78,
		AvgLatencyMs: 11.44, P95LatencyMs: 26.68, MaxLatencyMs: 70.33, Errors: 1,
	}
	if !ok || sum != wantSum {
		t.Errorf("summary: got %+v (ok %v), want %+v", sum, ok, wantSum)
	}
	if lines := FatalLines(run); len(lines) != 0 {
		t.Errorf("run.txt: FATAL lines %q, want none", lines)
	}

	fatal := readTestdata(t, "sysbench", "fatal.txt")
	if _, ok := ParseSummary(fatal); ok {
		t.Errorf("fatal.txt: found a summary in a failed run")
	}
	lines := FatalLines(fatal)
	if len(lines) != 7 || lines[1] != `FATAL: MySQL error: 1146 "Table 'sbtest.sbtest5' doesn't exist"` {
		t.Errorf("fatal.txt: FATAL lines %q", lines)
	}
}

func TestCommandStringMasksPassword(t *testing.T) {
	got := commandString("sysbench", sysbenchArgs(sysbenchConn{Host: "h", Port: "1", User: "u", Password: "secret"}, "oltp_insert", "run"))
	if strings.Contains(got, "secret") || !strings.Contains(got, "--mysql-password=***") {
		t.Errorf("command %q shows the password", got)
	}
}

// TestParseBulkInsert reads a bulk_insert run of sysbench 1.0.20 (2
// threads, 3 s, on Basalt): one event per row, which sysbench calls a
// transaction, and one query per multi-row INSERT, so its rate is its TPS
// (rows/s); the last INSERT, sent as the threads finish, ran past the 3 s.
func TestParseBulkInsert(t *testing.T) {
	out := readTestdata(t, "sysbench", "bulk_insert.txt")
	sum, ok := ParseSummary(out)
	want := Summary{Seconds: 4.0459, Transactions: 115515, TPS: 28548.83, Queries: 5, QPS: 1.24,
		AvgLatencyMs: 0.06, P95LatencyMs: 0, MaxLatencyMs: 3239.05}
	if !ok || sum != want {
		t.Errorf("summary: got %+v (ok %v), want %+v", sum, ok, want)
	}
	if got := rateOf(BulkInsert); got.Label != "rows/s" || got.Of(sum) != 28548.83 {
		t.Errorf("bulk_insert's rate: %s %v, want rows/s 28548.83", got.Label, got.Of(sum))
	}
	if iv := ParseIntervals(out); len(iv) != 4 || iv[0].TPS != 75983.29 || iv[3].WriteQPS != 4.10 {
		t.Errorf("intervals: %+v", iv)
	}
}
