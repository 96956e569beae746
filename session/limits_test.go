package session_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/session"

	"github.com/basalt-db/basalt/server"
	"github.com/go-sql-driver/mysql"
)

// The limits that need more than one connection, or time: KILL, timeouts,
// max_connections, max_allowed_packet. Their variables' scopes and ranges,
// and the memory quota, are in testdata/limits.test.

type limitsServer struct {
	drv *session.Driver
	srv *server.Server
	db  *sql.DB
	dsn string
}

// startLimits serves a fresh Basalt for the test, as startBasalt does, and
// keeps the driver and server at hand.
func startLimits(t *testing.T) *limitsServer {
	t.Helper()
	drv, srv, addr := serveBasalt(t)
	ls := &limitsServer{drv: drv, srv: srv, dsn: fmt.Sprintf("root@tcp(%s)/", addr)}
	var err error
	if ls.db, err = sql.Open("mysql", ls.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.db.Close() })
	return ls
}

// conn returns a connection of the pool for the test's own use, and its id.
func (ls *limitsServer) conn(t *testing.T) (*sql.Conn, uint32) {
	t.Helper()
	c, err := ls.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var id uint32
	if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return c, id
}

func exec(t *testing.T, c interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q string) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), q); err != nil {
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

// waitBusy waits until connection id runs a statement containing text.
func (ls *limitsServer) waitBusy(t *testing.T, id uint32, text string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range ls.srv.ProcessList() {
			if p.ID == id && strings.Contains(p.Info, text) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("connection %d never ran %q", id, text)
}

// waitGone waits until connection id has left the process list.
func (ls *limitsServer) waitGone(t *testing.T, id uint32) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		alive := false
		for _, p := range ls.srv.ProcessList() {
			alive = alive || p.ID == id
		}
		if !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection %d is still in the process list", id)
		}
	}
}

// fillTable makes test.m with 2^doublings rows of about 250 bytes.
func fillTable(t *testing.T, db *sql.DB, doublings int) {
	t.Helper()
	exec(t, db, "CREATE DATABASE IF NOT EXISTS test")
	exec(t, db, "CREATE TABLE test.m (id INT PRIMARY KEY AUTO_INCREMENT, g INT, pad VARCHAR(250))")
	exec(t, db, "INSERT INTO test.m (g, pad) VALUES (0, '"+strings.Repeat("p", 200)+"')")
	for i := 0; i < doublings; i++ {
		exec(t, db, "INSERT INTO test.m (g, pad) SELECT g + 1, pad FROM test.m")
	}
}

// KILL QUERY interrupts a running statement with 1317 — a SLEEP, a lock
// wait — and the connection, and its transaction, go on.
func TestKillQuery(t *testing.T) {
	ls := startLimits(t)
	a, id := ls.conn(t)
	ctx := context.Background()

	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		var n int
		errc <- a.QueryRowContext(ctx, "SELECT SLEEP(30)").Scan(&n)
	}()
	ls.waitBusy(t, id, "SLEEP")
	exec(t, ls.db, fmt.Sprintf("KILL QUERY %d", id))
	if err := <-errc; errCode(err) != 1317 || !strings.Contains(err.Error(), "Query execution was interrupted") {
		t.Fatalf("killed SLEEP: got %v, want 1317", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the killed SLEEP took %v", d)
	}
	var one int
	if err := a.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after KILL QUERY: %d, %v", one, err)
	}

	// A lock wait.
	exec(t, ls.db, "CREATE DATABASE IF NOT EXISTS test")
	exec(t, ls.db, "CREATE TABLE test.k (id INT PRIMARY KEY, v INT)")
	exec(t, ls.db, "INSERT INTO test.k VALUES (1, 0), (2, 0)")
	b, _ := ls.conn(t)
	exec(t, b, "BEGIN")
	exec(t, b, "UPDATE test.k SET v = 1 WHERE id = 1")
	exec(t, a, "SET innodb_lock_wait_timeout = 30")
	exec(t, a, "BEGIN")
	exec(t, a, "UPDATE test.k SET v = 2 WHERE id = 2")
	go func() {
		_, err := a.ExecContext(ctx, "UPDATE test.k SET v = 2 WHERE id = 1")
		errc <- err
	}()
	ls.waitBusy(t, id, "WHERE id = 1")
	time.Sleep(50 * time.Millisecond) // into the lock wait
	exec(t, ls.db, fmt.Sprintf("KILL QUERY %d", id))
	if err := <-errc; errCode(err) != 1317 {
		t.Fatalf("killed lock wait: got %v, want 1317", err)
	}
	exec(t, b, "COMMIT")
	exec(t, a, "COMMIT") // keeps the statement that ran before
	var sum int
	if err := ls.db.QueryRow("SELECT SUM(v) FROM test.k").Scan(&sum); err != nil || sum != 3 {
		t.Fatalf("SUM(v) = %d, %v; want 3 (b's 1 and a's first 2)", sum, err)
	}
}

// KILL [CONNECTION] closes the connection, running or idle; its open
// transaction is rolled back.
func TestKillConnection(t *testing.T) {
	ls := startLimits(t)
	exec(t, ls.db, "CREATE DATABASE IF NOT EXISTS test")
	exec(t, ls.db, "CREATE TABLE test.k (id INT PRIMARY KEY)")
	a, id := ls.conn(t)
	exec(t, a, "BEGIN")
	exec(t, a, "INSERT INTO test.k VALUES (1)")
	errc := make(chan error, 1)
	go func() {
		var n int
		errc <- a.QueryRowContext(context.Background(), "SELECT SLEEP(30)").Scan(&n)
	}()
	ls.waitBusy(t, id, "SLEEP")
	exec(t, ls.db, fmt.Sprintf("KILL %d", id))
	if err := <-errc; err == nil {
		t.Fatal("the killed connection's SLEEP succeeded")
	}
	if err := a.PingContext(context.Background()); err == nil {
		t.Fatal("the killed connection still answers")
	}
	var n int
	if err := ls.db.QueryRow("SELECT COUNT(*) FROM test.k").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after the killed transaction: %d, %v; want 0", n, err)
	}
	ls.waitGone(t, id)
	if _, err := ls.db.Exec("KILL 999999"); errCode(err) != 1094 {
		t.Fatalf("KILL of no connection: got %v, want 1094", err)
	}
}

// max_execution_time interrupts SELECTs wherever they spend their time:
// scanning, sorting, aggregating, or streaming rows to the client.
func TestMaxExecutionTime(t *testing.T) {
	ls := startLimits(t)
	fillTable(t, ls.db, 15)
	a, _ := ls.conn(t)
	queries := []string{
		"SELECT COUNT(*) FROM test.m WHERE pad LIKE '%x%'",
		"SELECT id FROM test.m ORDER BY pad, g DESC LIMIT 1",
		"SELECT COUNT(*) FROM (SELECT id, COUNT(*) FROM test.m GROUP BY id) d",
		"SELECT COUNT(DISTINCT pad, id) FROM test.m",
	}
	// They take far longer than 1ms.
	for _, q := range queries {
		if _, err := a.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s without a limit: %v", q, err)
		}
	}
	exec(t, a, "SET max_execution_time = 1")
	for _, q := range queries {
		_, err := a.ExecContext(context.Background(), q)
		if errCode(err) != 3024 || !strings.Contains(err.Error(), "maximum statement execution time exceeded") {
			t.Errorf("%s: got %v, want 3024", q, err)
		}
	}
	exec(t, a, "SET max_execution_time = 0")
	// Streaming: the error follows the rows sent in time.
	rows, err := a.QueryContext(context.Background(), "SELECT /*+ MAX_EXECUTION_TIME(20) */ id, pad FROM test.m")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		if n == 0 {
			time.Sleep(100 * time.Millisecond) // let the deadline pass mid-stream
		}
		n++
	}
	if err := rows.Err(); errCode(err) != 3024 {
		t.Fatalf("streaming past the deadline: %d rows, then %v; want 3024", n, err)
	}
	// Not DML: max_execution_time bounds SELECTs only, as in MySQL.
	exec(t, a, "SET max_execution_time = 1")
	exec(t, a, "UPDATE test.m SET g = g + 1")
	exec(t, a, "SET max_execution_time = 0")
	var one int
	if err := a.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

// wait_timeout closes an idle connection; interactive clients get
// interactive_timeout instead.
func TestWaitTimeout(t *testing.T) {
	ls := startLimits(t)
	a, id := ls.conn(t)
	b, _ := ls.conn(t)
	exec(t, a, "SET SESSION wait_timeout = 1")
	start := time.Now()
	ls.waitGone(t, id)
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("connection closed after %v idle, before its wait_timeout of 1s", waited)
	}
	err := a.PingContext(context.Background())
	if errCode(err) != 4031 && !errors.Is(err, driver.ErrBadConn) && !errors.Is(err, mysql.ErrInvalidConn) {
		t.Fatalf("ping after wait_timeout: got %v, want 4031 or a bad connection", err)
	}
	// b, idle as long under the default wait_timeout, lives.
	if err := b.PingContext(context.Background()); err != nil {
		t.Fatalf("a connection under the default wait_timeout: %v", err)
	}

	exec(t, b, "SET GLOBAL wait_timeout = 5")
	exec(t, b, "SET GLOBAL interactive_timeout = 7")
	for _, tc := range []struct {
		interactive bool
		want        time.Duration
	}{{false, 5 * time.Second}, {true, 7 * time.Second}} {
		s, err := ls.drv.OpenSession(context.Background(), session.ConnInfo{ID: 1000, User: "root", Host: "127.0.0.1", Interactive: tc.interactive})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.IdleTimeout(); got != tc.want {
			t.Errorf("interactive %v: idle timeout %v, want %v", tc.interactive, got, tc.want)
		}
		s.Close()
	}
}

// max_connections is the server's bound, changed at once by SET GLOBAL.
func TestMaxConnectionsVar(t *testing.T) {
	ls := startLimits(t)
	a, _ := ls.conn(t)
	ls.conn(t)
	exec(t, a, "SET GLOBAL max_connections = 2")
	var n int
	if err := a.QueryRowContext(context.Background(), "SELECT @@max_connections").Scan(&n); err != nil || n != 2 {
		t.Fatalf("@@max_connections = %d, %v; want 2", n, err)
	}
	_, err := ls.db.Conn(context.Background())
	if errCode(err) != 1040 || !strings.Contains(err.Error(), "Too many connections") {
		t.Fatalf("third connection: got %v, want 1040", err)
	}
	exec(t, a, "SET GLOBAL max_connections = 0")
	ls.conn(t)
	if got := ls.srv.MaxConnections(); got != 0 {
		t.Fatalf("server's max connections %d, want 0", got)
	}
}

// SET GLOBAL max_allowed_packet bounds new connections; each connection
// reads its own bound as @@session.max_allowed_packet.
func TestMaxAllowedPacketVar(t *testing.T) {
	ls := startLimits(t)
	old, _ := ls.conn(t)
	exec(t, old, "SET GLOBAL max_allowed_packet = 65536")
	fresh, _ := ls.conn(t)
	var oldMax, freshMax int
	if err := old.QueryRowContext(context.Background(), "SELECT @@max_allowed_packet").Scan(&oldMax); err != nil {
		t.Fatal(err)
	}
	if err := fresh.QueryRowContext(context.Background(), "SELECT @@max_allowed_packet").Scan(&freshMax); err != nil {
		t.Fatal(err)
	}
	if oldMax != 64<<20 || freshMax != 65536 {
		t.Fatalf("@@max_allowed_packet: old connection %d, new %d; want %d and 65536", oldMax, freshMax, 64<<20)
	}
	q := "SELECT '" + strings.Repeat("x", 100<<10) + "'"
	var s string
	if err := old.QueryRowContext(context.Background(), q).Scan(&s); err != nil || len(s) != 100<<10 {
		t.Fatalf("100 KiB query on the old connection: %d bytes, %v", len(s), err)
	}
	err := fresh.QueryRowContext(context.Background(), q).Scan(&s)
	if errCode(err) != 1153 || !strings.Contains(err.Error(), "Got a packet bigger than 'max_allowed_packet' bytes") {
		t.Fatalf("100 KiB query on the new connection: got %v, want 1153", err)
	}
}
