package server

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/go-sql-driver/mysql"
)

// mysqlCode returns the MySQL error number of err, or 0.
func mysqlCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// pinnedConn returns one connection of db and its connection id.
func pinnedConn(t *testing.T, db *sql.DB) (*sql.Conn, uint32) {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var id uint32
	if err := c.QueryRowContext(context.Background(), "select connection_id()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return c, id
}

// startSleep runs "select sleep" on c in the background and waits until
// the session has begun it. The statement's error arrives on the channel.
func startSleep(t *testing.T, ts *testServer, c *sql.Conn) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		var n int
		errc <- c.QueryRowContext(context.Background(), "select sleep").Scan(&n)
	}()
	select {
	case <-ts.drv.sleeping:
	case err := <-errc:
		t.Fatalf("select sleep ended early: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("select sleep did not start")
	}
	return errc
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A panicking session reports ER_UNKNOWN_ERROR, its stack is logged, its
// connection closes, and the server keeps serving.
func TestPanicRecovered(t *testing.T) {
	ts := startServer(t, Config{})
	db := ts.openDB(t, "root", "", "test")
	db.SetMaxIdleConns(0)

	_, err := db.Exec("select panic")
	if mysqlCode(err) != errno.ErUnknown || !strings.Contains(err.Error(), "Internal error: test session panicked") {
		t.Fatalf("got %v, want error 1105 about the panic", err)
	}
	logs := ts.logs.String()
	if !strings.Contains(logs, "panic running command") || !strings.Contains(logs, "goroutine ") {
		t.Errorf("panic not logged with a stack:\n%s", logs)
	}
	var n int
	if err := db.QueryRow("select 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("next connection: %v", err)
	}
	waitFor(t, "the panicked session to close", func() bool { return ts.drv.closed.Load() >= 1 })
}

// KILL QUERY interrupts the running statement with ER_QUERY_INTERRUPTED;
// its connection goes on.
func TestKillQuery(t *testing.T) {
	ts := startServer(t, Config{})
	db := ts.openDB(t, "root", "", "test")
	victim, id := pinnedConn(t, db)
	errc := startSleep(t, ts, victim)

	if _, err := db.Exec(fmt.Sprintf("kill query %d", id)); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; mysqlCode(err) != errno.ErQueryInterrupted {
		t.Fatalf("got %v, want 1317", err)
	}
	var n int
	if err := victim.QueryRowContext(context.Background(), "select 1").Scan(&n); err != nil {
		t.Fatalf("the killed query's connection: %v", err)
	}
	// KILL QUERY of an idle connection does nothing.
	if _, err := db.Exec(fmt.Sprintf("kill query %d", id)); err != nil {
		t.Fatal(err)
	}
	if err := victim.QueryRowContext(context.Background(), "select 1").Scan(&n); err != nil {
		t.Fatalf("after KILL QUERY of an idle connection: %v", err)
	}
}

// KILL CONNECTION ends the connection, running statement or not, and its
// session is closed; an unknown id is ER_NO_SUCH_THREAD.
func TestKillConnection(t *testing.T) {
	ts := startServer(t, Config{})
	db := ts.openDB(t, "root", "", "test")
	busy, busyID := pinnedConn(t, db)
	idle, idleID := pinnedConn(t, db)
	errc := startSleep(t, ts, busy)

	for _, id := range []uint32{busyID, idleID} {
		if _, err := db.Exec(fmt.Sprintf("kill %d", id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-errc; err == nil {
		t.Fatal("the killed connection's statement succeeded")
	}
	if err := idle.PingContext(context.Background()); err == nil {
		t.Fatal("the killed idle connection still answers")
	}
	waitFor(t, "the killed connections to go", func() bool {
		for _, p := range ts.srv.ProcessList() {
			if p.ID == busyID || p.ID == idleID {
				return false
			}
		}
		return true
	})
	if _, err := db.Exec("kill 999999"); mysqlCode(err) != errno.ErNoSuchThread {
		t.Fatalf("got %v, want 1094", err)
	}
}

// SHOW PROCESSLIST's source: each connection's user, database, command,
// state and statement.
func TestProcessList(t *testing.T) {
	ts := startServer(t, Config{})
	db := ts.openDB(t, "root", "", "test")
	busy, busyID := pinnedConn(t, db)
	_, idleID := pinnedConn(t, ts.openDB(t, "native", "native-pw", "other"))
	errc := startSleep(t, ts, busy)

	// A connection turns idle just after its answer is sent.
	var b, i ProcessInfo
	waitFor(t, "the idle connection to sleep", func() bool {
		for _, p := range ts.srv.ProcessList() {
			switch p.ID {
			case busyID:
				b = p
			case idleID:
				i = p
			}
		}
		return i.Command == "Sleep"
	})
	if b.User != "root" || b.DB != "test" || b.Command != "Query" || b.State != "executing" || b.Info != "select sleep" {
		t.Errorf("busy connection: %+v", b)
	}
	if i.User != "native" || i.DB != "other" || i.Command != "Sleep" || i.State != "" || i.Info != "" {
		t.Errorf("idle connection: %+v", i)
	}
	if host, _, _ := net.SplitHostPort(b.Host); host != "127.0.0.1" {
		t.Errorf("host %q", b.Host)
	}
	if err := ts.srv.Kill(busyID, true); err != nil {
		t.Fatal(err)
	}
	<-errc
}

// Shutdown closes idle connections at once and lets a running statement
// end (here by KILL QUERY) and answer its client before closing its
// connection.
func TestShutdownGraceful(t *testing.T) {
	ts := startServer(t, Config{})
	db := ts.openDB(t, "root", "", "test")
	idle, _ := pinnedConn(t, db)
	busy, busyID := pinnedConn(t, db)
	errc := startSleep(t, ts, busy)

	done := make(chan error, 1)
	go func() { done <- ts.srv.Shutdown(context.Background()) }()
	waitFor(t, "the idle connection to close", func() bool { return idle.PingContext(context.Background()) != nil })
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a statement running", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := ts.srv.Kill(busyID, true); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; mysqlCode(err) != errno.ErQueryInterrupted {
		t.Fatalf("the running statement got %v, want its own 1317", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if o, c := ts.drv.opened.Load(), ts.drv.closed.Load(); o != c {
		t.Fatalf("%d sessions opened, %d closed", o, c)
	}
	if _, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		t.Fatal("still accepting connections")
	}
}

// When Shutdown's context ends first, running statements are cancelled and
// their connections closed.
func TestShutdownDeadline(t *testing.T) {
	ts := startServer(t, Config{})
	busy, _ := pinnedConn(t, ts.openDB(t, "root", "", "test"))
	errc := startSleep(t, ts, busy)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Shutdown: %v, want the deadline", err)
	}
	if err := <-errc; err == nil {
		t.Fatal("the cancelled statement succeeded")
	}
	if o, c := ts.drv.opened.Load(), ts.drv.closed.Load(); o != c {
		t.Fatalf("%d sessions opened, %d closed", o, c)
	}
}

func TestMaxConnections(t *testing.T) {
	ts := startServer(t, Config{MaxConnections: 1})
	db := ts.openDB(t, "root", "", "test")
	pinnedConn(t, db)
	_, err := db.Conn(context.Background())
	if mysqlCode(err) != errno.ErConCount {
		t.Fatalf("got %v, want 1040", err)
	}
}

// Over a Unix socket the Go driver sends a caching_sha2_password password
// in cleartext, which the server accepts there.
func TestUnixSocketSHA2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "basalt.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Skipf("no Unix sockets: %v", err)
	}
	ts := startServerOn(t, Config{}, l)
	open := func(password string) error {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "sha2", password, "unix", path, "test"
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Ping()
	}
	if err := open("sha2-pw"); err != nil {
		t.Fatal(err)
	}
	if err := open("wrong"); mysqlCode(err) != errno.ErAccessDenied || !strings.Contains(err.Error(), "'sha2'@'localhost'") {
		t.Fatalf("got %v, want 1045 for sha2@localhost", err)
	}
	if n := ts.srv.sha2FullAuths.Load(); n != 1 {
		t.Fatalf("%d full authentications, want 1", n)
	}
}

// TestHandshakeErrors answers clients that cannot log in with MySQL's
// errors, and out-of-order packets with ER_NET_PACKETS_OUT_OF_ORDER.
func TestHandshakeErrors(t *testing.T) {
	ts := startServer(t, Config{})
	response := func(caps uint32, rest string) []byte {
		p := binary.LittleEndian.AppendUint32(nil, caps)
		p = binary.LittleEndian.AppendUint32(p, 1<<24)
		p = append(p, 45)
		p = append(p, make([]byte, 23)...)
		return append(p, rest...)
	}
	for _, tc := range []struct {
		name   string
		packet []byte
		want   string
	}{
		{"SSLRequest", response(rawProtocol41|rawSecureConn|1<<11, ""), "ERR 1043 (08S01) Bad handshake: TLS is not supported"},
		{"pre-4.1 client", response(rawSecureConn, "root\x00"), "ERR 1251 (08004) Client does not support authentication protocol requested by server; consider upgrading MySQL client"},
		{"short", []byte{1, 2, 3}, "ERR 1043 (08S01) Bad handshake"},
		{"auth data cut short", response(rawProtocol41|rawSecureConn, "root\x00\x14abc"), "ERR 1043 (08S01) Bad handshake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			c := &rawClient{nc: nc, r: bufio.NewReader(nc)}
			if _, err := c.readPacket(); err != nil {
				t.Fatal(err)
			}
			c.writePacket(tc.packet)
			p, err := c.readPacket()
			if err != nil {
				t.Fatal(err)
			}
			if got := describeErr(p); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if _, err := c.readPacket(); err == nil {
				t.Fatal("connection still open")
			}
		})
	}

	t.Run("out of order", func(t *testing.T) {
		c, err := dialRaw(ts.addr, "root", "", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		c.seq = 5
		c.writePacket([]byte{comPing})
		c.seq = 6
		p, err := c.readPacket()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := describeErr(p), "ERR 1156 (08S01) Got packets out of order"; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
