//go:build tpcc

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestTPCC runs go-tpc's TPC-C (github.com/pingcap/go-tpc, the binary
// named by BASALT_GOTPC, which `make tpcc` installs) against Basalt and
// against a MariaDB started as the comparison tests start it: prepare,
// run and check on each, then prints both tpmC figures and their ratio.
// It is not part of `make test` (the tpcc build tag): `make tpcc` runs it.
//
//	BASALT_TPCC_WAREHOUSES  warehouses (1)
//	BASALT_TPCC_THREADS     run threads (8)
//	BASALT_TPCC_TIME        run duration (1m)
//	BASALT_TPCC_PROFILE     if set, a file to write a 30 s CPU profile of
//	                        basalt to, taken in the middle of its run
//	BASALT_TPCC_MARIADB_CHECK  how long MariaDB's check may take (3m)
//
// A run fails on any error go-tpc reports (a transaction that failed
// other than by the run's end cancelling it), on a failed consistency
// check, and when a server completes no NEW_ORDER.
func TestTPCC(t *testing.T) {
	bin := os.Getenv("BASALT_GOTPC")
	if bin == "" {
		t.Skip("BASALT_GOTPC is not set (make tpcc installs go-tpc and sets it)")
	}
	cfg := tpccConfig{
		warehouses: envOr("BASALT_TPCC_WAREHOUSES", "1"),
		threads:    envOr("BASALT_TPCC_THREADS", "8"),
		duration:   envOr("BASALT_TPCC_TIME", "1m"),
		profile:    os.Getenv("BASALT_TPCC_PROFILE"),
	}
	dur, err := time.ParseDuration(cfg.duration)
	if err != nil {
		t.Fatalf("BASALT_TPCC_TIME: %v", err)
	}
	cfg.runTime = dur
	if cfg.mariadbCheck, err = time.ParseDuration(envOr("BASALT_TPCC_MARIADB_CHECK", "3m")); err != nil {
		t.Fatalf("BASALT_TPCC_MARIADB_CHECK: %v", err)
	}

	results := map[string]float64{}
	for _, target := range []string{"basalt", "mariadb"} {
		t.Run(target, func(t *testing.T) {
			var srv *testkit.Server
			statusPort := 0
			if target == "basalt" {
				statusPort = freePort(t)
				srv = testkit.StartBasalt(t, testkit.BasaltOptions{Args: []string{"--status-port", strconv.Itoa(statusPort)}})
			} else {
				srv = testkit.StartMariaDB(t)
			}
			results[target] = runTPCC(t, bin, srv, cfg, statusPort)
		})
	}
	b, m := results["basalt"], results["mariadb"]
	fmt.Printf("TPC-C, %s warehouse(s), %s threads, %s: basalt tpmC %.1f, mariadb tpmC %.1f", cfg.warehouses, cfg.threads, cfg.duration, b, m)
	if m > 0 {
		fmt.Printf(", basalt/mariadb %.3f", b/m)
	}
	fmt.Println()
}

type tpccConfig struct {
	warehouses, threads, duration string
	runTime, mariadbCheck         time.Duration
	profile                       string
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runTPCC runs prepare, run and check against srv and returns the run's
// tpmC.
func runTPCC(t *testing.T, bin string, srv *testkit.Server, cfg tpccConfig, statusPort int) float64 {
	common := []string{"-H", srv.Host(), "-P", strconv.Itoa(srv.Port()), "-U", "root", "-D", "tpcc", "--warehouses", cfg.warehouses}
	gotpc := func(ctx context.Context, step string, args ...string) (string, error) {
		start := time.Now()
		cmd := exec.CommandContext(ctx, bin, append(append([]string{"tpcc", step}, common...), args...)...)
		out, err := cmd.CombinedOutput()
		t.Logf("%s %s: %s", srv.Flavor(), step, time.Since(start).Round(time.Second))
		if err != nil && ctx.Err() == nil {
			t.Fatalf("go-tpc tpcc %s: %v\n%s", step, err, out)
		}
		return string(out), ctx.Err()
	}
	ctx := context.Background()
	// The consistency check runs once, after the run (check below).
	out, _ := gotpc(ctx, "prepare", "-T", "4", "--no-check")
	if strings.Contains(out, "failed") {
		t.Errorf("%s: prepare failed:\n%s", srv.Flavor(), out)
	}

	profDone := make(chan struct{})
	if statusPort != 0 && cfg.profile != "" {
		go func() {
			defer close(profDone)
			// Skip the start of the run, then profile for up to 30 s.
			time.Sleep(cfg.runTime / 4)
			secs := min(30, int(cfg.runTime.Seconds()/2))
			if err := fetchProfile(statusPort, secs, cfg.profile); err != nil {
				t.Errorf("CPU profile: %v", err)
				return
			}
			t.Logf("CPU profile of basalt (%d s of the run) in %s", secs, cfg.profile)
		}()
	} else {
		close(profDone)
	}
	out, _ = gotpc(ctx, "run", "-T", cfg.threads, "--time", cfg.duration)
	<-profDone
	// Without --ignore-error a thread that meets an error reports it
	// ("execute run failed") and stops.
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "failed") {
			t.Errorf("%s: %s", srv.Flavor(), line)
		}
	}
	summary := tpccSummary(out)
	t.Logf("%s run summary:\n%s", srv.Flavor(), summary)
	// The *_ERR counts also hold the transactions in flight when the
	// run's time is up, which go-tpc cancels (and does not print): at
	// most one per thread. More are errors go-tpc met and (without
	// --ignore-error) printed above.
	errs := 0
	for _, line := range strings.Split(summary, "\n") {
		if m := errLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			errs += n
		}
	}
	if threads, _ := strconv.Atoi(cfg.threads); errs > threads {
		t.Errorf("%s: go-tpc counted %d failed transactions, more than the %d threads cancelled at the end", srv.Flavor(), errs, threads)
	}
	m := tpmCLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%s: no tpmC in go-tpc's output (no NEW_ORDER completed?):\n%s", srv.Flavor(), out)
	}
	tpmC, _ := strconv.ParseFloat(m[1], 64)

	// MariaDB, the reference, answers check 3.3.2.10 by reading history
	// through idx_h_c_w_id once per customer (30,000 times 30,000 rows
	// per warehouse), which takes longer than the rest of this test: its
	// check gets a time limit, and running out of it is only reported.
	checkCtx := ctx
	if srv.Flavor() == testkit.MariaDB {
		var cancel context.CancelFunc
		checkCtx, cancel = context.WithTimeout(ctx, cfg.mariadbCheck)
		defer cancel()
	}
	out, err := gotpc(checkCtx, "check", "-T", "1")
	switch {
	case err != nil:
		t.Logf("%s: check did not finish in %s; its output so far:\n%s", srv.Flavor(), cfg.mariadbCheck, out)
	case strings.Contains(out, "failed"):
		t.Errorf("%s: consistency check failed:\n%s", srv.Flavor(), out)
	default:
		t.Logf("%s: consistency check passed", srv.Flavor())
	}
	return tpmC
}

var (
	tpmCLine = regexp.MustCompile(`tpmC: ([0-9.]+)`)
	errLine  = regexp.MustCompile(`_ERR\s+- .*Count: ([0-9]+)`)
)

// tpccSummary keeps the summary go-tpc prints at the end of a run.
func tpccSummary(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "[Summary]") || strings.Contains(line, "tpmC") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func fetchProfile(port, secs int, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+30)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
