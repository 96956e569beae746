package storenode

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Basalt's SQL layer on client-go (--store tikv) against the service: how
// sysbench's write transactions commit. A single-row autocommit write
// (oltp_update_index, oltp_update_non_index, oltp_delete, oltp_insert) and
// oltp_write_only's BEGIN .. four DML .. COMMIT, their keys in one region,
// commit in one phase: one prewrite answered with a one_pc_commit_ts and no
// KvCommit (issue 16: autocommit DML used to commit in two phases).
func TestServiceSQLOnePC(t *testing.T) {
	addr, calls, svc := serveSQL(t)
	ctx := context.Background()
	conn := openConn(t, openDB(t, addr))
	exec := func(stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	exec("CREATE DATABASE d1", "USE d1",
		"CREATE TABLE sbtest1 (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', "+
			"pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k))",
		"INSERT INTO sbtest1 (k, c, pad) VALUES (1, 'a', 'b'), (2, 'a', 'b'), (3, 'a', 'b')")
	for _, tc := range []struct {
		stmts []string
		locks int // pessimistic lock requests
		gets  int // KvGet requests
	}{
		{stmts: []string{"UPDATE sbtest1 SET k = k + 1 WHERE id = 1"}, gets: 1},
		{stmts: []string{"UPDATE sbtest1 SET c = 'x' WHERE id = 2"}, gets: 1},
		{stmts: []string{"DELETE FROM sbtest1 WHERE id = 3"}, gets: 1},
		{stmts: []string{"INSERT INTO sbtest1 (id, k, c, pad) VALUES (3, 3, 'c', 'p')"}},
		// The locks of the pessimistic point DML return the rows they
		// read: no KvGet after them (store/tikv, lockedValues).
		{stmts: []string{"BEGIN", "UPDATE sbtest1 SET k = k + 1 WHERE id = 1", "UPDATE sbtest1 SET c = 'y' WHERE id = 2",
			"DELETE FROM sbtest1 WHERE id = 3", "INSERT INTO sbtest1 (id, k, c, pad) VALUES (3, 3, 'c', 'p')", "COMMIT"}, locks: 3},
	} {
		before, pw := calls.snapshot(), svc.PrewriteStats()
		exec(tc.stmts...)
		after, pw2 := calls.snapshot(), svc.PrewriteStats()
		delta := func(m string) int { return after[m] - before[m] }
		got := fmt.Sprintf("KvPrewrite %d (1PC %d, async commit %d, fallback %d), KvCommit %d, KvPessimisticLock %d, KvGet %d, KvBatchGet %d",
			delta("KvPrewrite"), pw2.OnePC-pw.OnePC, pw2.AsyncCommit-pw.AsyncCommit, pw2.Fallback-pw.Fallback,
			delta("KvCommit"), delta("KvPessimisticLock"), delta("KvGet"), delta("KvBatchGet"))
		want := fmt.Sprintf("KvPrewrite 1 (1PC 1, async commit 0, fallback 0), KvCommit 0, KvPessimisticLock %d, KvGet %d, KvBatchGet 0", tc.locks, tc.gets)
		t.Logf("%s: %s", strings.Join(tc.stmts, "; "), got)
		if got != want {
			t.Errorf("%s: %s, want %s", strings.Join(tc.stmts, "; "), got, want)
		}
	}
}

// TestServiceSQLRangeScans counts the read RPCs of oltp_read_only's
// statements, the SQL layer on client-go against the service: a point
// select is one KvGet, and each of the four range queries of 100 rows is
// one KvScan (the range's end key and client-go's batch of 256 as its
// limit), whether it sums, sorts or removes duplicates on the SQL node.
func TestServiceSQLRangeScans(t *testing.T) {
	addr, calls, _ := serveSQL(t)
	ctx := context.Background()
	conn := openConn(t, openDB(t, addr))
	exec := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE d1")
	exec("USE d1")
	exec("CREATE TABLE sbtest1 (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', " +
		"pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k))")
	var rows []string
	for i := 1; i <= 300; i++ {
		rows = append(rows, fmt.Sprintf("(%d, %d, 'c-%d', 'pad')", i, i%7, i%13))
	}
	exec("INSERT INTO sbtest1 (id, k, c, pad) VALUES " + strings.Join(rows, ", "))
	exec("BEGIN")
	for _, tc := range []struct {
		q    string
		want string // the read RPCs, and the rows answered
	}{
		{"SELECT c FROM sbtest1 WHERE id = 42", "KvGet 1, KvScan 0, KvBatchGet 0; 1 rows"},
		{"SELECT c FROM sbtest1 WHERE id BETWEEN 100 AND 199", "KvGet 0, KvScan 1, KvBatchGet 0; 100 rows"},
		{"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 100 AND 199", "KvGet 0, KvScan 1, KvBatchGet 0; 1 rows"},
		{"SELECT c FROM sbtest1 WHERE id BETWEEN 100 AND 199 ORDER BY c", "KvGet 0, KvScan 1, KvBatchGet 0; 100 rows"},
		{"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 100 AND 199 ORDER BY c", "KvGet 0, KvScan 1, KvBatchGet 0; 13 rows"},
	} {
		before := calls.snapshot()
		rs, err := conn.QueryContext(ctx, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		n := 0
		for rs.Next() {
			n++
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		rs.Close()
		after := calls.snapshot()
		delta := func(m string) int { return after[m] - before[m] }
		got := fmt.Sprintf("KvGet %d, KvScan %d, KvBatchGet %d; %d rows", delta("KvGet"), delta("KvScan"), delta("KvBatchGet"), n)
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.q, got, tc.want)
		}
	}
	exec("COMMIT")
}
