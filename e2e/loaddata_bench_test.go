package e2e

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestLoadDataThroughput measures LOAD DATA LOCAL INFILE of a
// sysbench-shaped CSV (id, k, c CHAR(120), pad CHAR(60); BASALT_LOAD_ROWS
// rows, default 1000000) into sbtest1 with its k index, through the
// mariadb client, on Basalt and then on a MariaDB with default settings
// (as TestCompareWithMariaDB starts it), and prints rows/s and the ratio.
// A measurement, not a pass/fail test: it runs only with
// BASALT_LOAD_BENCH=1. BASALT_LOAD_ARGS adds flags to basalt's command
// line (a config file, say).
func TestLoadDataThroughput(t *testing.T) {
	if os.Getenv("BASALT_LOAD_BENCH") == "" {
		t.Skip("set BASALT_LOAD_BENCH=1 to run the LOAD DATA measurement")
	}
	client, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("the mariadb client is not installed")
	}
	rows := envInt("BASALT_LOAD_ROWS", 1000000)
	path := filepath.Join(t.TempDir(), "sbtest1.csv")
	writeSysbenchCSV(t, path, rows)

	rates := map[testkit.Flavor]float64{}
	for _, flavor := range []testkit.Flavor{testkit.Basalt, testkit.MariaDB} {
		var srv *testkit.Server
		if flavor == testkit.Basalt {
			var args []string
			if a := os.Getenv("BASALT_LOAD_ARGS"); a != "" {
				args = append(args, splitArgs(a)...)
			}
			srv = testkit.StartBasalt(t, testkit.BasaltOptions{Args: args})
		} else {
			srv = testkit.StartMariaDB(t)
		}
		db := srv.OpenDB(t, "")
		mustExec(t, db, "CREATE DATABASE sbtest")
		// sysbench's table, as oltp_common creates it.
		mustExec(t, db, `CREATE TABLE sbtest.sbtest1 (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT '0',
			c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k))`)
		if flavor == testkit.Basalt {
			// The whole load is one transaction, counted against the
			// statement's memory quota (docs/loaddata.md).
			mustExec(t, db, "SET GLOBAL tidb_mem_quota_query = 8589934592")
		}
		start := time.Now()
		out := runClient(t, time.Hour, client, "--no-defaults", "--protocol=TCP", "--skip-ssl", "-h", srv.Host(),
			"-P", strconv.Itoa(srv.Port()), "-u", "root", "--local-infile=1", "-vvv", "sbtest", "-e",
			fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE sbtest1 FIELDS TERMINATED BY ','", path))
		elapsed := time.Since(start)
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM sbtest.sbtest1").Scan(&n); err != nil || n != rows {
			t.Fatalf("%s: %d rows loaded (%v), want %d\n%s", flavor, n, err, rows, out)
		}
		rates[flavor] = float64(rows) / elapsed.Seconds()
		t.Logf("%s: %d rows in %v: %.0f rows/s (%s)", flavor, rows, elapsed.Round(time.Millisecond), rates[flavor], infoLine(t, out))
		db.Close()
		srv.Stop()
	}
	t.Logf("Basalt/MariaDB: %.2fx", rates[testkit.Basalt]/rates[testkit.MariaDB])
}

// writeSysbenchCSV writes rows lines shaped as sysbench's sbtest rows:
// id, k (random up to rows), c (eleven groups of digits) and pad (five).
func writeSysbenchCSV(t *testing.T, path string, rows int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	digits := func(groups int) []byte {
		b := make([]byte, 0, groups*12)
		for g := 0; g < groups; g++ {
			if g > 0 {
				b = append(b, '-')
			}
			for i := 0; i < 11; i++ {
				b = append(b, byte('0'+r.IntN(10)))
			}
		}
		return b
	}
	for id := 1; id <= rows; id++ {
		fmt.Fprintf(w, "%d,%d,%s,%s\n", id, 1+r.IntN(rows), digits(10), digits(5))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func splitArgs(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}
