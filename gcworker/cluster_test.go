package gcworker_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/gcworker"
	"github.com/basalt-db/basalt/testkit"
	"github.com/tikv/client-go/v2/oracle"
	"github.com/tikv/client-go/v2/txnkv"
	"github.com/tikv/pd/client/constants"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// storeConfig makes the stores report to PD often (the region is
// replicated within seconds) and poll the GC safe point every 200 ms.
const storeConfig = `
[raftstore]
pd-heartbeat-tick-interval = "200ms"
pd-store-heartbeat-tick-interval = "1s"

[gc]
poll-safe-point-interval = "200ms"
`

// TestGCAcrossSQLNodes runs two SQL nodes (processes, --store tikv) on 1
// PD and 3 stores that poll PD's GC safe point every 200 ms, with a GC
// life time of 1 s and a run interval of 300 ms set by SET GLOBAL on one
// node (the other follows through the shared global variables):
//
//   - one node, and only one, is the GC leader: the etcd election's
//     leader, the one mysql.tidb names, the same one throughout;
//   - a key written five times through client-go keeps every version
//     while tidb_gc_enable is OFF, and its newest version only, on every
//     store (leader and followers: the deletions go through Raft), once
//     GC is on again and the safe point passed the versions; a snapshot
//     read below the safe point fails with client-go's GC error;
//   - a transaction left open on one node holds the safe point below its
//     start, and its snapshot stays readable, until it commits; so does a
//     long autocommit SELECT until it ends;
//   - the leader killed (SIGKILL), the other node takes over once the
//     leader's lease has expired.
func TestGCAcrossSQLNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of processes")
	}
	c := testkit.StartCluster(t, 3, storeConfig)
	// Every store holds a replica before the versions are counted.
	testkit.WaitFor(t, 60*time.Second, "a replica on every store", func() (bool, string) {
		for _, s := range []string{"store1", "store2", "store3"} {
			var st struct {
				RegionCount int `json:"region_count"`
			}
			getJSON(t, "http://"+c.StatusAddr(s)+"/status", &st)
			if st.RegionCount == 0 {
				return false, s + " has no region"
			}
		}
		return true, ""
	})
	a := c.StartSQLNode(t, "--lease", "2s")
	b := c.StartSQLNode(t, "--lease", "2s")
	dbA, dbB := a.OpenDB(t, "test"), b.OpenDB(t, "test")

	testkit.MustExec(t, dbA, "SET GLOBAL tidb_gc_life_time = '1s'")
	testkit.MustExec(t, dbA, "SET GLOBAL tidb_gc_run_interval = '300ms'")
	testkit.WaitFor(t, 5*time.Second, "B to see A's GC settings", func() (bool, string) {
		got := queryString(t, dbB, "SELECT CONCAT(@@GLOBAL.tidb_gc_life_time, ' ', @@GLOBAL.tidb_gc_run_interval)")
		return got == "1s 300ms", got
	})

	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{c.PD}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	kvc, err := txnkv.NewClient([]string{c.PD})
	if err != nil {
		t.Fatal(err)
	}
	defer kvc.Close()
	ctx := context.Background()
	// safePoint reads PD's GC safe point. PD may be unavailable for a few
	// seconds on a loaded machine (its etcd stalled on a slow fsync, its
	// leader lease lost and won again, as CI once saw): such errors are
	// retried for 30 s rather than failing the test.
	safePoint := func() uint64 {
		deadline := time.Now().Add(30 * time.Second)
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := kvc.GetPDClient().GetGCStatesClient(constants.NullKeyspaceID).GetGCState(rctx)
			cancel()
			if err == nil {
				return st.GCSafePoint
			}
			if time.Now().After(deadline) {
				t.Fatalf("PD's GC safe point: %v", err)
			}
			t.Logf("PD's GC safe point: %v; retrying", err)
			time.Sleep(200 * time.Millisecond)
		}
	}

	// One leader, named alike by the election and by mysql.tidb.
	var leader, other *testkit.Server
	testkit.WaitFor(t, 10*time.Second, "a GC leader in mysql.tidb", func() (bool, string) {
		desc := gcRow(t, dbB, "tikv_gc_leader_desc")
		switch {
		case strings.Contains(desc, fmt.Sprintf("pid:%d,", a.PID())):
			leader, other = a, b
		case strings.Contains(desc, fmt.Sprintf("pid:%d,", b.PID())):
			leader, other = b, a
		}
		return leader != nil, desc
	})
	dbLeader, dbOther := dbA, dbB
	if leader == b {
		dbLeader, dbOther = dbB, dbA
	}
	uuid := gcRow(t, dbOther, "tikv_gc_leader_uuid")
	resp, err := etcd.Get(ctx, gcworker.LeaderKey, clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != uuid {
		t.Fatalf("election leader %v (err %v), mysql.tidb names %q", resp.Kvs, err, uuid)
	}
	lastRun := gcRow(t, dbOther, "tikv_gc_last_run_time")
	for range 5 { // the leader keeps running GC, and stays the leader
		time.Sleep(300 * time.Millisecond)
		if got := gcRow(t, dbOther, "tikv_gc_leader_uuid"); got != uuid {
			t.Fatalf("GC leader changed from %s to %s with both nodes up", uuid, got)
		}
	}
	if got := gcRow(t, dbOther, "tikv_gc_last_run_time"); got == lastRun {
		t.Fatalf("tikv_gc_last_run_time stayed %s for 1.5 s with a run interval of 300ms", got)
	}

	// The other rows TiDB shows.
	for name, want := range map[string]string{"tikv_gc_life_time": "1s", "tikv_gc_run_interval": "300ms", "tikv_gc_enable": "true"} {
		if got := gcRow(t, dbOther, name); got != want {
			t.Errorf("mysql.tidb %s = %q, want %q", name, got, want)
		}
	}
	if sp, err := time.Parse("20060102-15:04:05.000 -0700", gcRow(t, dbOther, "tikv_gc_safe_point")); err != nil ||
		time.Since(sp) > time.Minute {
		t.Errorf("mysql.tidb tikv_gc_safe_point: %v, %v; want a time less than a minute ago", sp, err)
	}

	t.Run("OldVersionsCollected", func(t *testing.T) {
		// GC paused (tidb_gc_enable) while the versions are written and
		// counted, however slow the machine.
		testkit.MustExec(t, dbLeader, "SET GLOBAL tidb_gc_enable = OFF")
		time.Sleep(time.Second) // a run under way ends
		key := []byte("gctest_key")
		var commits []uint64
		for i := range 5 {
			txn, err := kvc.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if err := txn.Set(key, []byte(fmt.Sprint("v", i))); err != nil {
				t.Fatal(err)
			}
			if err := txn.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			commits = append(commits, txn.CommitTS())
		}
		// (The followers may apply the last writes a moment later.)
		testkit.WaitFor(t, 5*time.Second, "5 versions on each store", func() (bool, string) {
			n := versions(t, c, key)
			return n == 15, fmt.Sprintf("%d versions on the 3 stores", n)
		})
		time.Sleep(1500 * time.Millisecond) // past the life time
		if n, sp := versions(t, c, key), safePoint(); n != 15 || sp > commits[0] {
			t.Fatalf("with tidb_gc_enable OFF: %d versions, safe point %d past the first write %d", n, sp, commits[0])
		}
		testkit.MustExec(t, dbOther, "SET GLOBAL tidb_gc_enable = ON")
		testkit.WaitFor(t, 15*time.Second, "the safe point to pass the last write", func() (bool, string) {
			sp := safePoint()
			return sp > commits[4], fmt.Sprintf("safe point %d, last commit %d", sp, commits[4])
		})
		testkit.WaitFor(t, 10*time.Second, "one version left on each store", func() (bool, string) {
			n := versions(t, c, key)
			return n == 3, fmt.Sprintf("%d versions on the 3 stores", n)
		})
		// The newest version reads at a current snapshot; one below the
		// safe point is refused by a new client, which reads PD's.
		v, err := kvc.GetSnapshot(oracle.GoTimeToTS(time.Now())).Get(ctx, key)
		if err != nil || string(v.Value) != "v4" {
			t.Fatalf("current read: %q, %v; want v4", v.Value, err)
		}
		fresh, err := txnkv.NewClient([]string{c.PD})
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if _, err := fresh.GetSnapshot(commits[1]).Get(ctx, key); err == nil ||
			!strings.Contains(err.Error(), "safe point") && !strings.Contains(err.Error(), "GC") {
			t.Fatalf("read at ts %d below the safe point: err %v, want client-go's GC safe point error", commits[1], err)
		}
	})

	t.Run("OpenTxnHoldsSafePoint", func(t *testing.T) {
		testkit.MustExec(t, dbLeader, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
		testkit.MustExec(t, dbLeader, "INSERT INTO t VALUES (1, 0)")
		// A transaction open on the node that is not the leader: only its
		// report in etcd tells the leader about it.
		conn, err := dbOther.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		before, err := kvc.CurrentTimestamp(oracle.GlobalTxnScope)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		var v int
		if err := conn.QueryRowContext(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil || v != 0 {
			t.Fatalf("v = %d, %v", v, err)
		}
		after, err := kvc.CurrentTimestamp(oracle.GlobalTxnScope)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			testkit.MustExec(t, dbLeader, "UPDATE t SET v = v + 1 WHERE id = 1")
		}
		// Several runs, each with a life time long past, later:
		time.Sleep(3 * time.Second)
		if sp := safePoint(); sp >= after {
			t.Fatalf("safe point %d passed the open transaction (begun between %d and %d)", sp, before, after)
		}
		if err := conn.QueryRowContext(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil || v != 0 {
			t.Fatalf("the open transaction's snapshot: v = %d, %v; want 0", v, err)
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "the safe point to move past the committed transaction", func() (bool, string) {
			sp := safePoint()
			return sp > after, fmt.Sprintf("safe point %d, transaction begun before %d", sp, after)
		})
	})

	t.Run("AutocommitReadHoldsSafePoint", func(t *testing.T) {
		// A 3 s autocommit SELECT on the node that is not the leader reads
		// one snapshot throughout: GC keeps it. A range, not a point get by
		// the primary key: that reads the newest version with no timestamp
		// (TiDB's MaxTS point get), which GC never removes.
		done := make(chan error, 1)
		go func() {
			var v, z int
			done <- dbOther.QueryRow("SELECT v, SLEEP(3) FROM t WHERE id >= 1").Scan(&v, &z)
		}()
		time.Sleep(300 * time.Millisecond)
		after, err := kvc.CurrentTimestamp(oracle.GlobalTxnScope)
		if err != nil {
			t.Fatal(err)
		}
		testkit.MustExec(t, dbLeader, "UPDATE t SET v = v + 1 WHERE id = 1")
		time.Sleep(2500 * time.Millisecond)
		if sp := safePoint(); sp >= after {
			t.Fatalf("safe point %d passed a running SELECT (begun before %d)", sp, after)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "the safe point to move past the finished SELECT", func() (bool, string) {
			sp := safePoint()
			return sp > after, fmt.Sprintf("safe point %d, SELECT begun before %d", sp, after)
		})
	})

	t.Run("LeaderKilled", func(t *testing.T) {
		leader.Kill()
		testkit.WaitFor(t, 15*time.Second, "the other node to take over", func() (bool, string) {
			desc := gcRow(t, dbOther, "tikv_gc_leader_desc")
			return strings.Contains(desc, fmt.Sprintf("pid:%d,", other.PID())), desc
		})
		// And it runs GC: the safe point moves on.
		sp := safePoint()
		testkit.WaitFor(t, 10*time.Second, "the new leader to move the safe point", func() (bool, string) {
			now := safePoint()
			return now > sp, fmt.Sprintf("safe point %d, was %d", now, sp)
		})
	})
}

// versions is how many versions of key the cluster's stores hold in all.
func versions(t *testing.T, c *testkit.Cluster, key []byte) int {
	t.Helper()
	end := append(append([]byte(nil), key...), 0)
	total := 0
	for _, s := range []string{"store1", "store2", "store3"} {
		url := fmt.Sprintf("http://%s/debug/gc?start=%s&end=%s", c.StatusAddr(s), hex.EncodeToString(key), hex.EncodeToString(end))
		var out struct{ Versions int }
		getJSON(t, url, &out)
		total += out.Versions
	}
	return total
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// gcRow is a GC row of mysql.tidb.
func gcRow(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v sql.NullString
	err := db.QueryRow("SELECT VARIABLE_VALUE FROM mysql.tidb WHERE VARIABLE_NAME = ?", name).Scan(&v)
	if err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	return v.String
}

func queryString(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s string
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}
