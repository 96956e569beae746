package storenode

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/pingcap/log"
	"github.com/tikv/client-go/v2/config"
	"go.uber.org/zap"

	"github.com/basalt-db/basalt/driver"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/store/tikv"
)

// Basalt's SQL layer on client-go (--store tikv) against the service: how
// sysbench's write transactions commit. A single-row autocommit write
// (oltp_update_index, oltp_update_non_index, oltp_delete, oltp_insert) and
// oltp_write_only's BEGIN .. four DML .. COMMIT, their keys in one region,
// commit in one phase: one prewrite answered with a one_pc_commit_ts and no
// KvCommit (issue 16: autocommit DML used to commit in two phases).
func TestServiceSQLOnePC(t *testing.T) {
	log.SetLevel(zap.FatalLevel)
	pdAddr := startPD(t)
	rs := oneRegion(t)
	pdc := newPDClient([]string{pdAddr})
	t.Cleanup(pdc.close)
	storeAddr, calls, svc := serveStore(t, rs, func(s *Service) { s.TSO = pdc.tso })
	bootstrap(t, pdAddr, storeAddr)
	// Unary calls, so that calls counts each command.
	defer config.UpdateGlobal(func(c *config.Config) { c.TiKVClient.MaxBatchSize = 0 })()
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
	db, err := sql.Open("mysql", (&mysql.Config{Net: "tcp", Addr: ln.Addr().String(), User: "root", AllowNativePasswords: true}).FormatDSN())
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
	}{
		{stmts: []string{"UPDATE sbtest1 SET k = k + 1 WHERE id = 1"}},
		{stmts: []string{"UPDATE sbtest1 SET c = 'x' WHERE id = 2"}},
		{stmts: []string{"DELETE FROM sbtest1 WHERE id = 3"}},
		{stmts: []string{"INSERT INTO sbtest1 (id, k, c, pad) VALUES (3, 3, 'c', 'p')"}},
		{stmts: []string{"BEGIN", "UPDATE sbtest1 SET k = k + 1 WHERE id = 1", "UPDATE sbtest1 SET c = 'y' WHERE id = 2",
			"DELETE FROM sbtest1 WHERE id = 3", "INSERT INTO sbtest1 (id, k, c, pad) VALUES (3, 3, 'c', 'p')", "COMMIT"}, locks: 3},
	} {
		before, pw := calls.snapshot(), svc.PrewriteStats()
		exec(tc.stmts...)
		after, pw2 := calls.snapshot(), svc.PrewriteStats()
		delta := func(m string) int { return after[m] - before[m] }
		got := fmt.Sprintf("KvPrewrite %d (1PC %d, async commit %d, fallback %d), KvCommit %d, KvPessimisticLock %d",
			delta("KvPrewrite"), pw2.OnePC-pw.OnePC, pw2.AsyncCommit-pw.AsyncCommit, pw2.Fallback-pw.Fallback,
			delta("KvCommit"), delta("KvPessimisticLock"))
		want := fmt.Sprintf("KvPrewrite 1 (1PC 1, async commit 0, fallback 0), KvCommit 0, KvPessimisticLock %d", tc.locks)
		t.Logf("%s: %s", strings.Join(tc.stmts, "; "), got)
		if got != want {
			t.Errorf("%s: %s, want %s", strings.Join(tc.stmts, "; "), got, want)
		}
	}
}
