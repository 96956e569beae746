package storenode

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/pingcap/log"
	"github.com/tikv/client-go/v2/config"
	"go.uber.org/zap"

	"github.com/basalt-db/basalt/driver"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/sqllogictest"
	"github.com/basalt-db/basalt/store/tikv"
	"github.com/basalt-db/basalt/testkit"
)

// serveSQL serves Basalt's SQL layer on client-go (--store tikv) against a
// one-member PD and the service over one region, both in this process
// and over gRPC, with unary calls so that calls counts each command. It
// returns the server's address (host:port), the service's calls and the
// service. Transactions are pessimistic; innodb_lock_wait_timeout is 1 s.
func serveSQL(t *testing.T) (string, *callCounter, *Service) {
	t.Helper()
	log.SetLevel(zap.FatalLevel)
	t.Cleanup(config.UpdateGlobal(func(c *config.Config) { c.TiKVClient.MaxBatchSize = 0 }))
	pdAddr := startPD(t)
	rs := oneRegion(t)
	pdc := newPDClient([]string{pdAddr})
	t.Cleanup(pdc.close)
	storeAddr, calls, svc := serveStore(t, rs, func(s *Service) { s.TSO = pdc.tso })
	bootstrap(t, pdAddr, storeAddr)
	st, err := tikv.Open([]string{pdAddr})
	if err != nil {
		t.Fatal(err)
	}
	drv, err := session.Open(st, session.Config{PessimisticByDefault: true, PlanCacheCapacity: 100, LockWaitTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{}, driver.New(drv))
	if err != nil {
		t.Fatal(err)
	}
	drv.SetConnections(driver.Connections(srv))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		st.Close()
	})
	return ln.Addr().String(), calls, svc
}

// openDB opens go-sql-driver's pool on the SQL server at addr as root,
// closed when the test ends.
func openDB(t *testing.T, addr string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", (&mysql.Config{Net: "tcp", Addr: addr, User: "root", AllowNativePasswords: true}).FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openConn takes one connection of db, closed when the test ends.
func openConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestServiceSQLConflicts runs SQL scripts of transactions racing on the
// same rows on the cluster's SQL layer over gRPC (serveSQL):
// testdata/sql_conflicts.test, and session's point_dml.test (which
// session runs on the embedded store and client-go's mock cluster).
//
// With BASALT_SQL_TARGET=mariadb the same scripts run against a Debian
// MariaDB, to check the expected results.
func TestServiceSQLConflicts(t *testing.T) {
	files := []string{filepath.Join("testdata", "sql_conflicts.test"), filepath.Join("..", "session", "testdata", "point_dml.test")}
	var dsn, engine string
	if os.Getenv("BASALT_SQL_TARGET") == "mariadb" {
		dsn, engine = testkit.StartMariaDB(t).DSN(""), "mariadb"
	} else {
		addr, _, _ := serveSQL(t)
		dsn, engine = (&mysql.Config{Net: "tcp", Addr: addr, User: "root", AllowNativePasswords: true}).FormatDSN(), "basalt"
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			res, err := sqllogictest.RunFile(context.Background(), db, f, sqllogictest.Options{Engine: engine, MaxFailures: 20, RecordTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d passed, %d failed, %d skipped", res.Passed, res.Failed, res.Skipped)
			for _, fl := range res.Failures {
				t.Error(fl.String())
			}
			if res.Passed == 0 {
				t.Error("the script ran no record")
			}
		})
	}
}

// TestServiceSQLPointDMLRetry checks, by the pessimistic lock requests the
// store receives, that a point UPDATE in a transaction locks first at the
// transaction's timestamp and, when another connection committed the row
// after it, fails there with a write conflict and runs again at a fresh
// timestamp: two lock requests, where one suffices without the race. Then
// a point UPDATE that meets another transaction's lock waits for its
// commit, and goes on from the row it committed.
func TestServiceSQLPointDMLRetry(t *testing.T) {
	addr, calls, _ := serveSQL(t)
	db := openDB(t, addr)
	ctx := context.Background()
	a, b := openConn(t, db), openConn(t, db)
	exec := func(c *sql.Conn, q string) int64 {
		t.Helper()
		res, err := c.ExecContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n, _ := res.RowsAffected()
		return n
	}
	k := func(c *sql.Conn) int {
		t.Helper()
		var k int
		if err := c.QueryRowContext(ctx, "SELECT k FROM d1.t WHERE id = 1").Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	// locks runs q on c and returns the rows it changed and the
	// pessimistic lock requests the store received meanwhile.
	locks := func(c *sql.Conn, q string) (int64, int) {
		t.Helper()
		before := calls.snapshot()["KvPessimisticLock"]
		n := exec(c, q)
		return n, calls.snapshot()["KvPessimisticLock"] - before
	}
	exec(a, "CREATE DATABASE d1")
	exec(a, "CREATE TABLE d1.t (id INT PRIMARY KEY, k INT NOT NULL)")
	exec(a, "INSERT INTO d1.t VALUES (1, 0)")

	const update = "UPDATE d1.t SET k = k + 1 WHERE id = 1"
	for _, race := range []bool{false, true} {
		exec(a, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
		before := k(a)
		if race {
			exec(b, update)
		}
		n, l := locks(a, update)
		wantLocks := 1
		if race {
			wantLocks = 2
		}
		if n != 1 || l != wantLocks {
			t.Errorf("race %v: %s changed %d rows with %d lock requests, want 1 with %d", race, update, n, l, wantLocks)
		}
		exec(a, "COMMIT")
		want := before + 1
		if race {
			want++
		}
		if got := k(b); got != want {
			t.Errorf("race %v: k = %d after the commit, want %d", race, got, want)
		}
	}
	if got := k(b); got != 3 {
		t.Fatalf("k = %d, want 3", got)
	}

	// A lock wait: a's UPDATE waits for b's lock, then changes the row b
	// committed.
	exec(a, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
	if got := k(a); got != 3 {
		t.Fatalf("k = %d in a's snapshot, want 3", got)
	}
	exec(b, "BEGIN")
	exec(b, "UPDATE d1.t SET k = k + 10 WHERE id = 1")
	done := make(chan error, 1)
	go func() {
		res, err := a.ExecContext(ctx, update)
		if err == nil {
			if n, _ := res.RowsAffected(); n != 1 {
				err = fmt.Errorf("%d rows changed, want 1", n)
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a's UPDATE did not wait for b's lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	exec(b, "COMMIT")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a's UPDATE after b's commit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a's UPDATE still waits after b's commit")
	}
	if got := k(a); got != 14 {
		t.Errorf("k = %d in a after its UPDATE, want 14 (3, +10 by b, +1 by a)", got)
	}
	exec(a, "COMMIT")
	if got := k(b); got != 14 {
		t.Errorf("k = %d after both committed, want 14", got)
	}
}
