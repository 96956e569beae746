package session_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	tikvclient "github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"

	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/store/tikv"
)

// readVersions records the versions of the reads client-go sends.
type readVersions struct {
	tikvclient.Client
	mu       sync.Mutex
	versions []uint64
}

func (c *readVersions) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	var v uint64
	switch req.Type {
	case tikvrpc.CmdGet:
		v = req.Get().GetVersion()
	case tikvrpc.CmdBatchGet:
		v = req.BatchGet().GetVersion()
	case tikvrpc.CmdScan:
		v = req.Scan().GetVersion()
	}
	if v != 0 {
		c.mu.Lock()
		c.versions = append(c.versions, v)
		c.mu.Unlock()
	}
	return c.Client.SendRequest(ctx, addr, req, timeout)
}

func (c *readVersions) take() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.versions
	c.versions = nil
	return v
}

// TestLatestReadOnClientGo: on a cluster, an autocommit SELECT of one row
// by its primary key reads the newest versions (math.MaxUint64, no
// timestamp from PD), as TiDB's point get does; every other read takes a
// timestamp.
func TestLatestReadOnClientGo(t *testing.T) {
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	rec := &readVersions{}
	st, err := tikv.OpenMockWrapped(func(c tikvclient.Client) tikvclient.Client {
		rec.Client = c
		return rec
	})
	if err != nil {
		t.Fatal(err)
	}
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
	connExec(t, conn, "CREATE DATABASE d1", "USE d1",
		"CREATE TABLE t (id INT PRIMARY KEY, u INT UNIQUE, v INT)",
		"CREATE TABLE c (b VARCHAR(8) NOT NULL, id INT NOT NULL, v INT, PRIMARY KEY (b, id))",
		"INSERT INTO t VALUES (1, 10, 100), (2, 20, 200)", "INSERT INTO c VALUES ('x', 1, 100)")
	time.Sleep(300 * time.Millisecond) // for AS OF below
	for _, tc := range []struct {
		before, after []string
		query         string
		args          []any
		latest        bool
	}{
		{query: "SELECT v FROM t WHERE id = 1", latest: true},
		{query: "SELECT v FROM t WHERE id = ?", args: []any{2}, latest: true}, // prepared
		{query: "SELECT v, v + 1 FROM t WHERE id = 1 AND v > 5", latest: true},
		{query: "SELECT v FROM c WHERE b = 'x' AND id = 1", latest: true}, // a clustered primary key
		// Two keys: the unique index's entry, then the row.
		{query: "SELECT v FROM t WHERE u = 10"},
		{query: "SELECT v FROM t WHERE id IN (1, 2)"},
		{query: "SELECT v FROM t WHERE id = (SELECT MIN(id) FROM t)"},
		{query: "SELECT (SELECT MAX(v) FROM t), v FROM t WHERE id = 1"},
		{query: "SELECT CASE WHEN v > 0 THEN (SELECT MAX(v) FROM t) ELSE 0 END FROM t WHERE id = 1"},
		{query: "SELECT v FROM t WHERE id = 1 FOR UPDATE"},
		{query: "SELECT v FROM t AS OF TIMESTAMP NOW(6) - INTERVAL 0.2 SECOND WHERE id = 1"},
		{before: []string{"BEGIN"}, query: "SELECT v FROM t WHERE id = 1", after: []string{"COMMIT"}},
		{before: []string{"SET autocommit = 0"}, query: "SELECT v FROM t WHERE id = 1", after: []string{"COMMIT", "SET autocommit = 1"}},
	} {
		connExec(t, conn, tc.before...)
		rec.take()
		rows, err := conn.QueryContext(ctx, tc.query, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil || n == 0 {
			t.Fatalf("%s: %d rows (%v)", tc.query, n, err)
		}
		rows.Close()
		vs := rec.take()
		connExec(t, conn, tc.after...)
		latest := 0
		for _, v := range vs {
			if v == math.MaxUint64 {
				latest++
			}
		}
		switch {
		case tc.latest && (len(vs) != 1 || latest != 1):
			t.Errorf("%s: read at %v, want one read of the newest versions (%d)", tc.query, vs, uint64(math.MaxUint64))
		case !tc.latest && (len(vs) == 0 || latest != 0):
			t.Errorf("%s: read at %v, want reads at timestamps", tc.query, vs)
		}
	}
}
