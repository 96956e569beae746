package ddljob_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/basalt-db/basalt/testkit"
)

// lease is the SQL nodes' schema lease here; the DDL owner's election
// and the schema-change lock live under leases of the same length.
const lease = 3 * time.Second

// TestOwnerKilledMidAddIndex runs two SQL nodes on one cluster (1 PD, 3
// stores, processes of the built binary). A starts first, so it is the
// DDL owner, and waits a minute in every ADD INDEX once the index is
// write-only (BASALT_TEST_DDL_BACKFILL_DELAY). B issues ADD INDEX while
// it writes the table: the job runs on A, and A is killed (SIGKILL) once
// B lists the job running and write-only. Then, within a few leases:
//
//   - B, now the owner, has recovered the job: B's ADD INDEX returns, and
//     the index is either absent (the job "rollback done", 8214) or
//     public and complete (the job "synced");
//   - ADMIN CHECK TABLE is clean, and B's writes met no error but 8028;
//   - the same ADD INDEX issued again on B works, and the index then
//     holds an entry per row.
func TestOwnerKilledMidAddIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of processes")
	}
	c := testkit.StartCluster(t, 3, "")
	os.Setenv("BASALT_TEST_DDL_BACKFILL_DELAY", "60s")
	a := c.StartSQLNode(t, "--lease", lease.String())
	os.Unsetenv("BASALT_TEST_DDL_BACKFILL_DELAY")
	dbA := a.OpenDB(t, "test")
	b := c.StartSQLNode(t, "--lease", lease.String())
	dbB := b.OpenDB(t, "test")

	var owner, selfA string
	deadline := time.Now().Add(10 * time.Second)
	for owner == "" || owner != selfA {
		var ver int64
		var addr, running, query string
		if err := dbA.QueryRow("ADMIN SHOW DDL").Scan(&ver, &owner, &addr, &running, &selfA, &query); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("A (%s) is not the DDL owner (%q)", selfA, owner)
		}
		time.Sleep(50 * time.Millisecond)
	}

	mustExec(t, dbB, "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL)")
	const rows = 500
	var vals []string
	for i := 1; i <= rows; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d)", i, i%13))
	}
	mustExec(t, dbB, "INSERT INTO t VALUES "+strings.Join(vals, ", "))

	// B's writes, through the whole change.
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		ops      atomic.Int64
		errMu    sync.Mutex
		loadErrs []error
	)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				id := 1 + (i*7+w*131)%rows
				_, err := dbB.Exec("UPDATE t SET k = (k + 1) % 13 WHERE id = ?", id)
				if err == nil {
					ops.Add(1)
				} else if errCode(err) != 8028 {
					errMu.Lock()
					loadErrs = append(loadErrs, err)
					errMu.Unlock()
				}
			}
		}()
	}

	// ADMIN CANCEL DDL JOBS on B stops A's job midway; it is taken back.
	cancelErr := make(chan error, 1)
	go func() {
		_, err := dbB.Exec("ALTER TABLE t ADD INDEX ic (k)")
		cancelErr <- err
	}()
	id := waitRunning(t, dbB)
	var cancelled int64
	var result string
	if err := dbB.QueryRow(fmt.Sprintf("ADMIN CANCEL DDL JOBS %d", id)).Scan(&cancelled, &result); err != nil || result != "successful" {
		t.Fatalf("ADMIN CANCEL DDL JOBS %d: %s, %v", id, result, err)
	}
	select {
	case err := <-cancelErr:
		if errCode(err) != 8214 {
			t.Errorf("the cancelled ADD INDEX returned %v, want 8214", err)
		}
	case <-time.After(10 * lease):
		t.Fatal("the cancelled ADD INDEX did not return")
	}
	if job := ddlJobs(t, dbB, 1); job[0] != "add index test.t none rollback done" || hasIndex(t, dbB, "t", "ic") {
		t.Errorf("after ADMIN CANCEL DDL JOBS: job %v, index ic present %v", job, hasIndex(t, dbB, "t", "ic"))
	}
	if err := dbB.QueryRow(fmt.Sprintf("ADMIN CANCEL DDL JOBS %d", id)).Scan(&cancelled, &result); err != nil ||
		result != fmt.Sprintf("error: [ddl:8225]This job:%d is finished, so can't be cancelled", id) {
		t.Errorf("ADMIN CANCEL DDL JOBS of a finished job: %s, %v", result, err)
	}

	addErr := make(chan error, 1)
	go func() {
		_, err := dbB.Exec("ALTER TABLE t ADD INDEX ik (k)")
		addErr <- err
	}()
	// Wait until A runs it, write-only, then kill A.
	waitRunning(t, dbB)
	a.Kill()
	killed := time.Now()
	t.Log("A (the DDL owner) killed in the middle of ADD INDEX")

	var err error
	select {
	case err = <-addErr:
	case <-time.After(10 * lease):
		t.Fatalf("B's ADD INDEX did not return %v after A was killed", 10*lease)
	}
	took := time.Since(killed)
	t.Logf("B's ADD INDEX returned %v after the kill: %v", took.Round(time.Millisecond), err)
	if took > 4*lease {
		t.Errorf("the job was recovered %v after its runner died, more than 4 leases", took)
	}
	job := ddlJobs(t, dbB, 1)
	present := hasIndex(t, dbB, "t", "ik")
	switch {
	case !present && errCode(err) == 8214 && job[0] == "add index test.t none rollback done":
		t.Log("the job was rolled back")
	case present && err == nil && job[0] == "add index test.t public synced":
		t.Log("the job was finished")
	default:
		t.Errorf("after the recovery: index present %v, B's error %v, job %v", present, err, job)
	}
	mustExec(t, dbB, "ADMIN CHECK TABLE t")
	if !present {
		start := time.Now()
		mustExec(t, dbB, "ALTER TABLE t ADD INDEX ik (k)")
		t.Logf("ADD INDEX again on B took %v", time.Since(start).Round(time.Millisecond))
	}
	stop.Store(true)
	wg.Wait()
	for _, err := range loadErrs {
		t.Errorf("B's writes: %v", err)
	}
	if ops.Load() == 0 {
		t.Error("B's writes did nothing")
	}
	mustExec(t, dbB, "ADMIN CHECK TABLE t")
	var viaIndex int
	if err := dbB.QueryRow("SELECT COUNT(*) FROM t USE INDEX (ik) WHERE k >= 0").Scan(&viaIndex); err != nil || viaIndex != rows {
		t.Errorf("ik counts %d rows (%v), want %d", viaIndex, err, rows)
	}
}

// waitRunning waits until the newest DDL job is an ADD INDEX running
// write-only, and returns its id.
func waitRunning(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var id int64
		jobs := ddlJobs(t, db, 1)
		if len(jobs) == 1 && jobs[0] == "add index test.t write only running" {
			if err := db.QueryRow("ADMIN SHOW DDL JOBS 1 WHERE STATE = 'running'").Scan(&id,
				new(any), new(any), new(any), new(any), new(any),
				new(any), new(any), new(any), new(any), new(any),
				new(any)); err != nil {
				t.Fatal(err)
			}
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ADD INDEX job is running write-only: %v", jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func errCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

func hasIndex(t *testing.T, db *sql.DB, table, index string) bool {
	t.Helper()
	rows, err := db.Query("SHOW INDEX FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	found := false
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		if strings.EqualFold(string(vals[2]), index) { // Key_name
			found = true
		}
	}
	return found
}

// ddlJobs is the first n rows of ADMIN SHOW DDL JOBS, each as "JOB_TYPE
// DB_NAME.TABLE_NAME SCHEMA_STATE STATE".
func ddlJobs(t *testing.T, db *sql.DB, n int) []string {
	t.Helper()
	rows, err := db.Query(fmt.Sprintf("ADMIN SHOW DDL JOBS %d", n))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() && len(out) < n {
		var id, schemaID, tableID, rowCount int64
		var dbName, table, typ, schemaState, state string
		var created, started, ended sql.NullString
		if err := rows.Scan(&id, &dbName, &table, &typ, &schemaState, &schemaID, &tableID, &rowCount,
			&created, &started, &ended, &state); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s.%s %s %s", typ, dbName, table, schemaState, state))
	}
	return out
}
