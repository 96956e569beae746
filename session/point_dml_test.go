package session_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/store/tikv"
)

// countingStore counts the timestamps the SQL layer asks its store for:
// the transactions it begins (a start timestamp each) and CurrentTS.
type countingStore struct {
	kv.Storage
	begins, current atomic.Int64
}

func (s *countingStore) Begin(opts kv.TxnOptions) (kv.Txn, error) {
	s.begins.Add(1)
	return s.Storage.Begin(opts)
}

func (s *countingStore) CurrentTS() (uint64, error) {
	s.current.Add(1)
	return s.Storage.CurrentTS()
}

// TestPointDMLTimestamps: a pessimistic transaction of sysbench's
// oltp_write_only (two UPDATEs, a DELETE and an INSERT by primary key)
// takes one start timestamp and no for-update timestamp, as TiDB's
// PessimisticRRTxnContextProvider does; a range UPDATE takes one, and a
// point statement whose key was committed since the transaction's
// for-update timestamp takes one for its retry.
//
// It runs on the embedded store and on client-go's mock cluster, whose
// pessimistic locks report write conflicts as TiKV does.
func TestPointDMLTimestamps(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		testPointDMLTimestamps(t, st, true)
	})
	t.Run("client-go", func(t *testing.T) {
		if err := tikv.SetLogLevel("error"); err != nil {
			t.Fatal(err)
		}
		st, err := tikv.OpenMock()
		if err != nil {
			t.Fatal(err)
		}
		// Without the cases where another connection commits a key the
		// transaction then locks: there the COMMIT fails, before this
		// change too, as the mock's prewrite checks a pessimistically
		// locked key for conflicts at the start timestamp, not at its
		// for-update timestamp as TiKV does (mocktikv prewriteMutation).
		testPointDMLTimestamps(t, st, false)
	})
}

func testPointDMLTimestamps(t *testing.T, inner kv.Storage, conflicts bool) {
	st := &countingStore{Storage: inner}
	_, _, addr, stop := serveOn(t, st, session.Config{PessimisticByDefault: true, PlanCacheCapacity: 100, LockWaitTimeout: time.Second})
	t.Cleanup(stop)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	connExec(t, conn, "CREATE DATABASE d1", "USE d1",
		"CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))",
		"INSERT INTO sbtest1 VALUES (1, 1, 'c', 'p'), (2, 2, 'c', 'p'), (3, 3, 'c', 'p')")
	connExec(t, other, "USE d1")
	for _, tc := range []struct {
		name    string
		between []string // run by another connection after the first statement
		stmts   []string
		current int64 // CurrentTS calls, BEGIN to COMMIT
	}{
		{name: "write_only", stmts: []string{
			"UPDATE sbtest1 SET k = k + 1 WHERE id = 1",
			"UPDATE sbtest1 SET c = 'x' WHERE id = 2",
			"DELETE FROM sbtest1 WHERE id = 3",
			"INSERT INTO sbtest1 (id, k, c, pad) VALUES (3, 3, 'c', 'p')",
		}},
		{name: "prepared", stmts: []string{"prepared"}},
		{name: "range", stmts: []string{"UPDATE sbtest1 SET k = k + 1 WHERE id = 1", "UPDATE sbtest1 SET k = k + 1 WHERE id BETWEEN 1 AND 2"}, current: 1},
		{name: "conflict", between: []string{"UPDATE d1.sbtest1 SET k = k + 10 WHERE id = 2"},
			stmts: []string{"UPDATE sbtest1 SET k = k + 1 WHERE id = 1", "UPDATE sbtest1 SET k = k + 1 WHERE id = 2"}, current: 1},
		// A missing row's key is locked all the same: nothing to retry.
		{name: "missing", stmts: []string{"UPDATE sbtest1 SET k = k + 1 WHERE id = 1", "DELETE FROM sbtest1 WHERE id = 99"}},
		// A row inserted since the snapshot conflicts, and is found.
		{name: "inserted", between: []string{"INSERT INTO d1.sbtest1 VALUES (4, 4, 'c', 'p')"},
			stmts: []string{"UPDATE sbtest1 SET k = k + 1 WHERE id = 1", "DELETE FROM sbtest1 WHERE id = 4"}, current: 1},
	} {
		if len(tc.between) > 0 && !conflicts {
			continue
		}
		connExec(t, conn, "BEGIN")
		b0, c0 := st.begins.Load(), st.current.Load()
		for i, q := range tc.stmts {
			if q == "prepared" {
				for _, q := range []string{"UPDATE sbtest1 SET k = k + 1 WHERE id = ?", "DELETE FROM sbtest1 WHERE id = ?"} {
					if _, err := conn.ExecContext(ctx, q, 1); err != nil {
						t.Fatalf("%s: %s: %v", tc.name, q, err)
					}
				}
				if _, err := conn.ExecContext(ctx, "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)", 1, 1, "c", "p"); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				continue
			}
			connExec(t, conn, q)
			if i == 0 {
				connExec(t, other, tc.between...)
			}
		}
		b1, c1 := st.begins.Load(), st.current.Load()
		connExec(t, conn, "COMMIT")
		if b1-b0 > 1+int64(len(tc.between)) || c1-c0 != tc.current {
			t.Errorf("%s: %d Begin, %d CurrentTS; want 1 Begin (and one per other statement), %d CurrentTS", tc.name, b1-b0, c1-c0, tc.current)
		}
	}
	if !conflicts {
		return
	}
	var k, n int
	if err := conn.QueryRowContext(ctx, "SELECT k FROM sbtest1 WHERE id = 2").Scan(&k); err != nil || k != 14 {
		t.Errorf("k of id 2: %d (%v), want 14 (2, +1 in range, +10 by the other connection, +1)", k, err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM sbtest1").Scan(&n); err != nil || n != 3 {
		t.Errorf("%d rows (%v), want 3 (the one inserted by the other connection deleted)", n, err)
	}
}
