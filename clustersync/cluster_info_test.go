package clustersync_test

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// clusterInfo reads information_schema.CLUSTER_INFO on db as lines of
// "TYPE INSTANCE STATUS_ADDRESS VERSION", and checks each row's START_TIME
// and UPTIME where a start time is known.
func clusterInfo(t *testing.T, db *sql.DB) ([]string, error) {
	rows, err := db.Query("SELECT TYPE, INSTANCE, STATUS_ADDRESS, VERSION, START_TIME, UPTIME, SERVER_ID FROM information_schema.cluster_info")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, inst, status, version, start, uptime string
		var id uint64
		if err := rows.Scan(&typ, &inst, &status, &version, &start, &uptime, &id); err != nil {
			return nil, err
		}
		if typ != "pd" { // Basalt's PD tells no start time
			st, err := time.Parse(time.RFC3339, start)
			if err != nil || time.Since(st) < 0 || time.Since(st) > 10*time.Minute {
				t.Errorf("%s %s: START_TIME %q is not a recent RFC 3339 time", typ, inst, start)
			}
			if _, err := time.ParseDuration(uptime); err != nil {
				t.Errorf("%s %s: UPTIME %q is not a duration", typ, inst, uptime)
			}
		}
		out = append(out, strings.Join([]string{typ, inst, status, version}, " "))
	}
	return out, rows.Err()
}

// clusterInfoAcrossNodes: both SQL nodes list both SQL nodes, PD and the
// three stores; once b is killed, a stops listing it within b's lease.
// It kills b: run it last.
func clusterInfoAcrossNodes(t *testing.T, c *testkit.Cluster, a, b *testkit.Server, dbA, dbB *sql.DB) {
	var want []string
	for _, s := range []*testkit.Server{a, b} {
		want = append(want, fmt.Sprintf("tidb 127.0.0.1:%d %s dev", s.Port(), s.StatusAddr()))
	}
	slices.Sort(want)
	sqlNodes := slices.Clone(want)
	want = append(want, fmt.Sprintf("pd %s %s ", c.PD, c.PD))
	var stores []string
	for _, st := range []string{"store1", "store2", "store3"} {
		stores = append(stores, fmt.Sprintf("tikv %s %s 8.5.0", c.StoreAddr(st), c.StatusAddr(st)))
	}
	slices.Sort(stores)
	want = append(want, stores...)
	for name, db := range map[string]*sql.DB{"A": dbA, "B": dbB} {
		got, err := clusterInfo(t, db)
		if err != nil {
			t.Fatalf("CLUSTER_INFO on %s: %v", name, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("CLUSTER_INFO on %s:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	b.Kill()
	killed := time.Now()
	var aOnly []string
	for _, l := range want {
		if l != sqlNodes[0] && l != sqlNodes[1] || strings.Contains(l, fmt.Sprintf(":%d ", a.Port())) {
			aOnly = append(aOnly, l)
		}
	}
	// b's lease is 3 s, etcd's expiry checks add up to about a second.
	testkit.WaitFor(t, 6*time.Second, "the killed SQL node to leave CLUSTER_INFO", func() (bool, string) {
		got, err := clusterInfo(t, dbA)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(got, aOnly), strings.Join(got, "\n")
	})
	if d := time.Since(killed); d < time.Second {
		t.Fatalf("the killed node left CLUSTER_INFO after %v: before its lease could expire, so not by it", d)
	}
}

// TestClusterInfoEmbedded: the binary on its embedded store lists itself
// alone, as a tidb node with its MySQL and status addresses.
func TestClusterInfoEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary")
	}
	s := testkit.StartBasalt(t, testkit.BasaltOptions{})
	got, err := clusterInfo(t, s.OpenDB(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("tidb 127.0.0.1:%d %s dev", s.Port(), s.StatusAddr())}
	if !slices.Equal(got, want) {
		t.Fatalf("CLUSTER_INFO on the embedded store:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
