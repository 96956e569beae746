package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/bench"
	"github.com/basalt-db/basalt/testkit"
)

// TestImportThroughput measures the reports' prepare done both ways on
// this machine: BASALT_IMPORT_TABLES tables (default 4) of
// BASALT_IMPORT_ROWS rows (default 1000000) made in a fresh Basalt by
// IMPORT INTO (bench.PrepareByImport, as `basalt bench run --prepare
// import` makes them: the CSV written and imported, two tables at once),
// then ANALYZE TABLE (unless BASALT_IMPORT_SKIP_BASALT is set); and,
// unless BASALT_IMPORT_SKIP_MARIADB is set, by
// `sysbench oltp_common prepare` on a MariaDB with its buffer pool raised
// to 4 GiB. It logs rows/s, the Basalt server's peak RSS (VmHWM) and its
// data directory's size. A measurement, not a pass/fail test: it runs
// only with BASALT_IMPORT_BENCH=1. BASALT_IMPORT_ARGS adds flags to
// basalt's command line.
func TestImportThroughput(t *testing.T) {
	if os.Getenv("BASALT_IMPORT_BENCH") == "" {
		t.Skip("set BASALT_IMPORT_BENCH=1 to run the IMPORT INTO measurement")
	}
	tables, rows := envInt("BASALT_IMPORT_TABLES", 4), envInt("BASALT_IMPORT_ROWS", 1000000)
	total := float64(tables * rows)
	ctx := context.Background()
	basaltRate := 0.0
	if os.Getenv("BASALT_IMPORT_SKIP_BASALT") == "" {
		basaltRate = measureImport(t, ctx, tables, rows)
	}
	if os.Getenv("BASALT_IMPORT_SKIP_MARIADB") != "" {
		return
	}

	maria := testkit.StartMariaDB(t)
	mdb := maria.OpenDB(t, "")
	mustExec(t, mdb, "SET GLOBAL innodb_buffer_pool_size = 4294967296")
	mustExec(t, mdb, "CREATE DATABASE sbtest")
	start := time.Now()
	runSysbench(t, maria, "oltp_common", "prepare", "--tables="+strconv.Itoa(tables), "--table-size="+strconv.Itoa(rows),
		"--threads="+strconv.Itoa(min(tables, 8)))
	prepared := time.Since(start)
	mariaRate := total / prepared.Seconds()
	t.Logf("MariaDB sysbench oltp_common prepare: %d x %d rows in %v: %.0f rows/s", tables, rows, prepared.Round(time.Millisecond), mariaRate)
	if basaltRate > 0 {
		t.Logf("Basalt/MariaDB: %.2fx", basaltRate/mariaRate)
	}
}

// measureImport makes the tables in a fresh Basalt by IMPORT INTO, logs
// what it took, and returns its rows per second.
func measureImport(t *testing.T, ctx context.Context, tables, rows int) float64 {
	total := float64(tables * rows)

	dataDir := filepath.Join(t.TempDir(), "data")
	var args []string
	if a := os.Getenv("BASALT_IMPORT_ARGS"); a != "" {
		args = splitArgs(a)
	}
	srv := testkit.StartBasalt(t, testkit.BasaltOptions{DataDir: dataDir, Args: args})
	db := srv.OpenDB(t, "")
	mustExec(t, db, "CREATE DATABASE sbtest")
	start := time.Now()
	if _, err := bench.PrepareByImport(ctx, db, tables, rows, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	imported := time.Since(start)
	rss := peakRSS(t, srv.PID())
	size := dirSize(t, dataDir)
	start = time.Now()
	for i := 1; i <= tables; i++ {
		mustExec(t, db, fmt.Sprintf("ANALYZE TABLE sbtest.sbtest%d", i))
	}
	analyzed := time.Since(start)
	var n int
	if err := db.QueryRow(fmt.Sprintf("SELECT COUNT(*) FROM sbtest.sbtest%d", tables)).Scan(&n); err != nil || n != rows {
		t.Fatalf("sbtest%d: %d rows (%v), want %d", tables, n, err, rows)
	}
	basaltRate := total / imported.Seconds()
	t.Logf("Basalt IMPORT INTO: %d x %d rows in %v: %.0f rows/s; then ANALYZE TABLE %v; peak RSS %.0f MiB (after ANALYZE %.0f MiB); data directory %.0f MiB",
		tables, rows, imported.Round(time.Millisecond), basaltRate, analyzed.Round(time.Millisecond),
		float64(rss)/(1<<20), float64(peakRSS(t, srv.PID()))/(1<<20), float64(size)/(1<<20))
	db.Close()
	srv.Stop()
	return basaltRate
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Logf("peak RSS: %v", err)
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// dirSize is the size of the files under dir.
func dirSize(t *testing.T, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}
