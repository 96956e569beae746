package e2e

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestDashboardInChromium loads the status port's /dashboard in headless
// Chromium (Debian's chromium, which scripts/test-deps.sh installs) while
// clients, and sysbench if it is installed, run statements, and checks
// what the page's JavaScript rendered into the DOM: the connections
// figure, points on the charts, the summary's top statement, the slow
// statement in the slow log table, the store's figures. It keeps a
// screenshot, dashboard.png, in $BASALT_DASHBOARD_SHOTS if set, else in
// the test's temporary directory (logged).
func TestDashboardInChromium(t *testing.T) {
	browser := findChromium(t)
	srv := testkit.StartBasalt(t, testkit.BasaltOptions{})
	admin := srv.OpenDB(t, "")
	mustExec(t, admin, "CREATE DATABASE dash")
	mustExec(t, admin, "CREATE TABLE dash.t (id INT PRIMARY KEY, k INT, c VARCHAR(20))")
	for i := range 10 {
		mustExec(t, admin, fmt.Sprintf("INSERT INTO dash.t VALUES (%d, %d, 'row%d')", i, i, i))
	}
	// Slower than tidb_slow_log_threshold's 300 ms: the slow log's entry.
	// The load's connections log only statements over 5 s: on a loaded
	// machine its statements took 0.3-0.8 s at times, and ten of them
	// pushed this one out of the table's latest ten.
	mustExec(t, admin, "SET GLOBAL tidb_slow_log_threshold = 5000")
	slowConn, err := admin.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET SESSION tidb_slow_log_threshold = 300", "SELECT SLEEP(0.35)"} {
		if _, err := slowConn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	slowConn.Close()

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	// Clients holding their connections open, each reading and writing
	// its rows: the connections figure, Select and Update on the charts,
	// commits.
	db := srv.OpenDB(t, "dash")
	const clients = 4
	for c := range clients {
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer conn.Close()
			for i := 0; ctx.Err() == nil; i++ {
				id := c*2 + i%2
				var s string
				if err := conn.QueryRowContext(ctx, "SELECT c FROM t WHERE id = ?", id).Scan(&s); err != nil && ctx.Err() == nil {
					t.Errorf("select: %v", err)
					return
				}
				if _, err := conn.ExecContext(ctx, "UPDATE t SET k = k + 1 WHERE id = ?", id); err != nil && ctx.Err() == nil {
					t.Errorf("update: %v", err)
					return
				}
			}
		})
	}
	if _, err := exec.LookPath("sysbench"); err == nil {
		mustExec(t, admin, "CREATE DATABASE sbtest")
		sb := []string{"--tables=1", "--table-size=1000", "--threads=2"}
		if _, err := testkit.Sysbench(t, srv, append([]string{"oltp_point_select"}, append(sb, "prepare")...)...); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if _, err := testkit.Sysbench(t, srv, append([]string{"oltp_point_select", "--time=10"}, append(sb, "run")...)...); err != nil && ctx.Err() == nil {
				t.Errorf("sysbench: %v", err)
			}
		})
	} else {
		t.Log("sysbench is not installed: the load is the Go clients' alone")
	}
	time.Sleep(4 * time.Second) // a few seconds of history in the ring

	url := "http://" + srv.StatusAddr() + "/dashboard"
	profile := t.TempDir()
	chrome := func(args ...string) []byte {
		t.Helper()
		return runChromium(t, browser, profile, url, args...)
	}
	dom := string(chrome("--dump-dom"))

	// The summary's busiest statement, as the server reports it.
	var top string
	if err := admin.QueryRow(`SELECT DIGEST_TEXT FROM information_schema.STATEMENTS_SUMMARY
		WHERE SCHEMA_NAME = 'dash' AND DIGEST_TEXT LIKE 'select%' ORDER BY EXEC_COUNT DESC LIMIT 1`).Scan(&top); err != nil {
		t.Fatal(err)
	}
	checkDashboardDOM(t, dom, top)

	dir := os.Getenv("BASALT_DASHBOARD_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "dashboard.png")
	chrome("--screenshot="+shot, "--window-size=1280,2000")
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10<<10 {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot: %s", shot)
}

// findChromium returns Debian's chromium, or skips the test.
func findChromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (scripts/test-deps.sh installs it; apt-get install chromium)")
	return ""
}

// runChromium loads url in headless Chromium with args (--dump-dom,
// --screenshot=...) and returns what it printed.
func runChromium(t *testing.T, browser, profile, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	// The virtual time budget lets the page's fetch of /dashboard/data
	// and its rendering finish before the DOM is dumped.
	cmd := exec.CommandContext(ctx, browser, append([]string{"--headless", "--disable-gpu", "--no-sandbox",
		"--user-data-dir=" + profile, "--virtual-time-budget=4000"}, append(args, url)...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", browser, args, err, stderr.String())
	}
	return out
}

// TestDashboardOnCluster: a SQL node of a cluster (1 PD, 3 stores) shows
// the cluster's stores on its dashboard, as PD knows them: three stores
// up, each holding the replicas of the cluster's regions, the leaders
// among them.
func TestDashboardOnCluster(t *testing.T) {
	browser := findChromium(t)
	srv := testkit.StartCluster(t, 3, "").StartSQLNode(t)
	admin := srv.OpenDB(t, "")
	mustExec(t, admin, "CREATE DATABASE dashc")
	mustExec(t, admin, "CREATE TABLE dashc.t (id INT PRIMARY KEY)")
	mustExec(t, admin, "INSERT INTO dashc.t VALUES (1), (2)")
	url := "http://" + srv.StatusAddr() + "/dashboard"
	// PD learns of each store's regions from its heartbeats: give them a
	// few seconds.
	var dom string
	var rows [][]string
	for deadline := time.Now().Add(30 * time.Second); ; {
		dom = string(runChromium(t, browser, t.TempDir(), url, "--dump-dom"))
		rows = clusterRows(dom)
		leaders, regions := 0, 0
		for _, r := range rows {
			l, _ := strconv.Atoi(r[4])
			n, _ := strconv.Atoi(r[3])
			leaders, regions = leaders+l, regions+n
		}
		if len(rows) == 3 && leaders >= 1 && regions >= 3 || time.Now().After(deadline) {
			t.Logf("cluster table: %q (leaders %d, regions %d)", rows, leaders, regions)
			if len(rows) != 3 || leaders < 1 || regions < 3 {
				t.Fatalf("want 3 stores with at least one leader and 3 replicas; DOM:\n%s", dom)
			}
			break
		}
		time.Sleep(time.Second)
	}
	if regexp.MustCompile(`<div id="cluster-part"[^>]*hidden`).MatchString(dom) {
		t.Errorf("the cluster part is hidden")
	}
	for _, r := range rows {
		if r[2] != "Up" {
			t.Errorf("store %s is %q, want Up", r[0], r[2])
		}
	}
}

// clusterRows returns the cells of the dashboard's cluster table: store,
// address, state, regions, leaders.
func clusterRows(dom string) [][]string {
	m := regexp.MustCompile(`(?s)<table id="cluster">.*?<tbody>(.*?)</tbody>`).FindStringSubmatch(dom)
	if m == nil {
		return nil
	}
	var rows [][]string
	for _, tr := range regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(m[1], -1) {
		var cells []string
		for _, td := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(tr[1], -1) {
			cells = append(cells, strings.ReplaceAll(html.UnescapeString(td[1]), ",", ""))
		}
		if len(cells) == 5 {
			rows = append(rows, cells)
		}
	}
	return rows
}

// checkDashboardDOM checks the page's DOM after its script ran.
func checkDashboardDOM(t *testing.T, dom, topDigest string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
	}
	if !regexp.MustCompile(`<p id="updated"[^>]*data-ok="1"`).MatchString(dom) {
		fail("the page never rendered its data (#updated has no data-ok)")
	}
	if m := regexp.MustCompile(`<p id="error"[^>]*>([^<]*)<`).FindStringSubmatch(dom); m == nil || m[1] != "" {
		fail("#error: %q", m)
	}
	figure := func(id string) float64 {
		m := regexp.MustCompile(`id="` + id + `">([^<]*)<`).FindStringSubmatch(dom)
		if m == nil {
			fail("no #%s", id)
			return -1
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
		if err != nil {
			fail("#%s = %q", id, m[1])
			return -1
		}
		return v
	}
	if v := figure("connections"); v < 4 {
		fail("connections figure %v, want at least the test's 4 clients", v)
	}
	if v := figure("qps"); v <= 0 {
		fail("statements/s figure %v, want > 0", v)
	}
	// Every chart's series is a polyline with its number of points.
	lines := regexp.MustCompile(`<polyline [^>]*points="([^"]*)"[^>]*data-series="([^"]*)" data-points="(\d+)"`).FindAllStringSubmatch(dom, -1)
	found := map[string]int{}
	for _, l := range lines {
		n, _ := strconv.Atoi(l[3])
		if got := len(strings.Fields(l[1])); got != n {
			fail("series %s: %d points drawn, data-points %d", l[2], got, n)
		}
		found[l[2]] = max(found[l[2]], n)
	}
	for _, s := range []string{"Select", "Update", "commits", "connections"} {
		if found[s] < 3 {
			fail("chart series %s has %d points, want at least 3 (series: %v)", s, found[s], found)
		}
	}
	// The top statements' table holds the summary's busiest select.
	texts := regexp.MustCompile(`<td class="q digest-text">([^<]*)</td>`).FindAllStringSubmatch(dom, -1)
	var seen []string
	ok := false
	for _, m := range texts {
		seen = append(seen, html.UnescapeString(m[1]))
		ok = ok || html.UnescapeString(m[1]) == topDigest
	}
	if !ok {
		fail("top statements lack %q; they are %q", topDigest, seen)
	}
	if !regexp.MustCompile(`<td class="q slow-query">SELECT SLEEP\(0\.35\);</td>`).MatchString(dom) {
		fail("the slow log table lacks SELECT SLEEP(0.35);")
	}
	for _, name := range []string{"block cache hit rate", "compactions", "latest-version cache"} {
		if !strings.Contains(dom, "<td>"+name+"</td>") {
			fail("the store table lacks %q", name)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
