package server

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/go-sql-driver/mysql"
)

// A session's idle timeout closes its connection after that long without a
// command (and at most idleCheckInterval more), with
// ER_CLIENT_INTERACTION_TIMEOUT first (as MySQL 8.0.24+ sends it: sequence
// id 0, unasked). Commands reset the clock.
func TestIdleTimeout(t *testing.T) {
	defer func(d time.Duration) { idleCheckInterval = d }(idleCheckInterval)
	idleCheckInterval = 20 * time.Millisecond
	ts := startServer(t, Config{})
	c, err := dialRaw(ts.addr, "root", "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if err := c.command(append([]byte{comQuery}, "set idle 300"...)); err != nil {
		t.Fatal(err)
	}
	if p, err := c.readPacket(); err != nil || p[0] != 0 {
		t.Fatalf("set idle: %v %q", err, p)
	}
	// Commands every 100ms keep the connection, well past 300ms.
	for i := 0; i < 8; i++ {
		time.Sleep(100 * time.Millisecond)
		if err := c.command([]byte{comPing}); err != nil {
			t.Fatal(err)
		}
		if p, err := c.readPacket(); err != nil || p[0] != 0 {
			t.Fatalf("ping %d: %v %q", i, err, p)
		}
	}
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	c.seq = 0
	p, err := c.readPacket()
	if err != nil {
		t.Fatalf("waiting for the idle timeout: %v", err)
	}
	if got, want := describeErr(p), "ERR 4031 (HY000) The client was disconnected by the server because of inactivity. See wait_timeout and interactive_timeout for configuring this behavior."; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("closed after %v idle, want about 300ms", waited)
	}
	if _, err := c.readPacket(); err == nil {
		t.Fatal("connection still open after the idle timeout")
	}
	waitFor(t, "the idle connection to be forgotten", func() bool { return ts.srv.ConnectionCount() == 0 })

	// go-sql-driver/mysql sees the connection gone: the error packet, or a
	// bad connection if it notices the close first.
	db := ts.openDB(t, "root", "", "test")
	pc, _ := pinnedConn(t, db)
	if _, err := pc.ExecContext(context.Background(), "set idle 200"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	err = pc.PingContext(context.Background())
	t.Logf("go-sql-driver after the idle timeout: %v", err)
	if mysqlCode(err) != errno.ErClientInteractionTimeout && !errors.Is(err, driver.ErrBadConn) && !errors.Is(err, mysql.ErrInvalidConn) {
		t.Fatalf("ping after the idle timeout: got %v, want 4031 or a bad connection", err)
	}
	pc.Close()

	// A pool notices a connection closed while idle in it (the driver
	// checks a reused connection for unread input or EOF) and replaces it
	// without the application seeing an error.
	db.SetMaxOpenConns(1)
	var before, after uint32
	if err := db.QueryRow("select connection_id()").Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("set idle 200"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	if err := db.QueryRow("select connection_id()").Scan(&after); err != nil {
		t.Fatalf("pooled query after the idle timeout: %v", err)
	}
	if before == after {
		t.Fatalf("the pool still uses connection %d, which should have timed out", before)
	}
}

// SetMaxConnections takes effect for the next connection; connections
// already served stay.
func TestSetMaxConnections(t *testing.T) {
	ts := startServer(t, Config{MaxConnections: 3})
	db := ts.openDB(t, "root", "", "test")
	pinnedConn(t, db)
	pinnedConn(t, db)
	ts.srv.SetMaxConnections(2)
	if got := ts.srv.MaxConnections(); got != 2 {
		t.Fatalf("MaxConnections() = %d, want 2", got)
	}
	_, err := db.Conn(context.Background())
	if mysqlCode(err) != errno.ErConCount || !strings.Contains(err.Error(), "Too many connections") {
		t.Fatalf("third connection under max 2: got %v, want 1040", err)
	}
	ts.srv.SetMaxConnections(1) // fewer than open: both stay
	waitFor(t, "the refused connection to go", func() bool { return ts.srv.ConnectionCount() == 2 })
	ts.srv.SetMaxConnections(0) // no bound
	for i := 0; i < 3; i++ {
		pinnedConn(t, db)
	}
	if n := ts.srv.ConnectionCount(); n != 5 {
		t.Fatalf("%d connections, want 5", n)
	}
}

// SetMaxAllowedPacket bounds the connections accepted after it; those
// already open keep the bound they started with, as in MySQL.
func TestSetMaxAllowedPacket(t *testing.T) {
	ts := startServer(t, Config{MaxAllowedPacket: 1 << 20})
	db := ts.openDB(t, "root", "", "test")
	old, _ := pinnedConn(t, db)
	ts.srv.SetMaxAllowedPacket(64 << 10)
	if got := ts.srv.MaxAllowedPacket(); got != 64<<10 {
		t.Fatalf("MaxAllowedPacket() = %d, want %d", got, 64<<10)
	}
	q := "select long 3" + strings.Repeat(" ", 100<<10)
	var s string
	if err := old.QueryRowContext(context.Background(), q).Scan(&s); err != nil || s != "abc" {
		t.Fatalf("100 KiB query on a connection opened under 1 MiB: %q, %v", s, err)
	}
	fresh, _ := pinnedConn(t, db)
	err := fresh.QueryRowContext(context.Background(), q).Scan(&s)
	if mysqlCode(err) != errno.ErNetPacketTooLarge {
		t.Fatalf("100 KiB query on a connection opened under 64 KiB: got %v, want 1153", err)
	}
}
