package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/datadriven"
	"github.com/go-sql-driver/mysql"
)

// The tests run a real Server on 127.0.0.1 with the testDriver behind it,
// and talk to it with real clients: github.com/go-sql-driver/mysql, the
// mariadb command-line client, and rawClient for what those cannot send.
// Expected outputs live in testdata/; regenerate them with
//
//	go test ./server/ -rewrite

func init() {
	// The driver logs the connections the tests break on purpose.
	mysql.SetLogger(&mysql.NopLogger{})
}

// testRSAKey is shared by all test servers: making one takes a while.
var testRSAKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

type testServer struct {
	srv  *Server
	drv  *testDriver
	addr string
	logs *syncBuffer
}

// syncBuffer collects a server's log for assertions.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer serves a new Server with a testDriver on a free port of
// 127.0.0.1 until the test ends.
func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, cfg, l)
}

// startServerOn serves a new Server with a testDriver on l until the test
// ends, then shuts it down and checks that every session was closed.
func startServerOn(t testing.TB, cfg Config, l net.Listener) *testServer {
	t.Helper()
	ts := &testServer{drv: newTestDriver(), logs: &syncBuffer{}, addr: l.Addr().String()}
	if cfg.RSAKey == nil {
		cfg.RSAKey = testRSAKey()
	}
	cfg.Logger = slog.New(slog.NewTextHandler(ts.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := New(cfg, ts.drv)
	if err != nil {
		t.Fatal(err)
	}
	ts.srv, ts.drv.srv = srv, srv
	var serveErr error
	served := make(chan struct{})
	go func() {
		serveErr = srv.Serve(l)
		close(served)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
		if serveErr != ErrServerClosed {
			t.Errorf("Serve returned %v", serveErr)
		}
		if o, c := ts.drv.opened.Load(), ts.drv.closed.Load(); o != c {
			t.Errorf("%d sessions opened, %d closed", o, c)
		}
	})
	return ts
}

func (ts *testServer) dsn(user, password, db string, params ...string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = user, password, db
	cfg.Net, cfg.Addr = "tcp", ts.addr
	cfg.Timeout = 5 * time.Second
	dsn := cfg.FormatDSN()
	if len(params) > 0 {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + strings.Join(params, "&")
	}
	return dsn
}

func (ts *testServer) openDB(t testing.TB, user, password, db string, params ...string) *sql.DB {
	t.Helper()
	d, err := sql.Open("mysql", ts.dsn(user, password, db, params...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// runDriverCommand runs the datadriven commands that use the Go driver:
//
//	connect user=U [password=P] [db=D] [params=a=b&c=d]
//	    open a connection; print "ok" and the current database, or the error
//	query [binary] [user=U] [password=P] [db=D]
//	    the input's first line is a query, the next lines its arguments as
//	    type:value (int, uint, float, str, hex, bool, null); "binary" sends it
//	    as a prepared statement even without arguments
//	exec [binary] ...        as query, printing affected rows and last insert id
func runDriverCommand(t *testing.T, ts *testServer, d *datadriven.TestData) string {
	user, password, db, params := "root", "", "test", ""
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			continue
		}
		switch a.Key {
		case "user":
			user = a.Vals[0]
		case "password":
			password = a.Vals[0]
		case "db":
			db = a.Vals[0]
			if db == "none" {
				db = ""
			}
		case "params":
			params = strings.Join(a.Vals, ",")
		}
	}
	var ps []string
	if params != "" {
		ps = strings.Split(params, "&")
	}
	conn, err := sql.Open("mysql", ts.dsn(user, password, db, ps...))
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	defer conn.Close()
	ctx := context.Background()

	switch d.Cmd {
	case "connect":
		var cur sql.NullString
		if err := conn.QueryRowContext(ctx, "select database()").Scan(&cur); err != nil {
			return "error: " + err.Error() + "\n"
		}
		return fmt.Sprintf("ok database=%s\n", nullString(cur))
	case "query", "exec":
		lines := strings.Split(d.Input, "\n")
		query, args := lines[0], parseArgs(t, lines[1:])
		binary := d.HasArg("binary")
		if d.Cmd == "exec" {
			var res sql.Result
			if binary {
				res, err = execPrepared(ctx, conn, query, args)
			} else {
				res, err = conn.ExecContext(ctx, query, args...)
			}
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			aff, _ := res.RowsAffected()
			id, _ := res.LastInsertId()
			return fmt.Sprintf("affected=%d lastid=%d\n", aff, id)
		}
		var rows *sql.Rows
		if binary {
			stmt, err := conn.PrepareContext(ctx, query)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			defer stmt.Close()
			rows, err = stmt.QueryContext(ctx, args...)
		} else {
			rows, err = conn.QueryContext(ctx, query, args...)
		}
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		defer rows.Close()
		return formatRows(rows)
	}
	t.Fatalf("unknown command %q", d.Cmd)
	return ""
}

func execPrepared(ctx context.Context, conn *sql.DB, query string, args []any) (sql.Result, error) {
	stmt, err := conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	return stmt.ExecContext(ctx, args...)
}

func nullString(s sql.NullString) string {
	if !s.Valid {
		return "NULL"
	}
	return s.String
}

// parseArgs turns "type:value" lines into driver arguments.
func parseArgs(t *testing.T, lines []string) []any {
	var args []any
	for _, l := range lines {
		if l == "" {
			continue
		}
		typ, val, _ := strings.Cut(l, ":")
		var a any
		var err error
		switch typ {
		case "int":
			a, err = strconv.ParseInt(val, 10, 64)
		case "uint":
			a, err = strconv.ParseUint(val, 10, 64)
		case "float":
			a, err = strconv.ParseFloat(val, 64)
		case "str":
			a = val
		case "hex":
			a, err = hex.DecodeString(val)
		case "bool":
			a = val == "true"
		case "null":
			a = nil
		default:
			t.Fatalf("unknown argument type in %q", l)
		}
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, a)
	}
	return args
}

// formatRows prints each result of a query column by column: a line per
// column with its name, database type and the value of each row,
// "|"-separated. Results after the first follow a "next result" line.
func formatRows(rows *sql.Rows) string {
	var b strings.Builder
	for first := true; first || rows.NextResultSet(); first = false {
		if !first {
			b.WriteString("-- next result\n")
		}
		types, err := rows.ColumnTypes()
		if err != nil {
			fmt.Fprintf(&b, "error: %s\n", err)
			return b.String()
		}
		cols := make([][]string, len(types))
		vals := make([]any, len(types))
		ptrs := make([]any, len(types))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				fmt.Fprintf(&b, "error: %s\n", err)
				return b.String()
			}
			for i, v := range vals {
				cols[i] = append(cols[i], formatValue(v))
			}
		}
		for i, ct := range types {
			fmt.Fprintf(&b, "%s %s: %s\n", ct.Name(), ct.DatabaseTypeName(), strings.Join(cols[i], " | "))
		}
		if len(types) == 0 {
			b.WriteString("(no columns)\n")
		}
	}
	if err := rows.Err(); err != nil {
		fmt.Fprintf(&b, "error: %s\n", err)
	}
	return b.String()
}

func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		if utf8.Valid(v) && !bytes.ContainsFunc(v, func(r rune) bool { return r < 0x20 }) {
			return strconv.Quote(string(v))
		}
		return "0x" + hex.EncodeToString(v)
	case int64:
		return "int64:" + strconv.FormatInt(v, 10)
	case uint64:
		return "uint64:" + strconv.FormatUint(v, 10)
	case float32:
		return "float32:" + strconv.FormatFloat(float64(v), 'g', -1, 32)
	case float64:
		return "float64:" + strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return fmt.Sprintf("%T:%v", v, v)
	}
}
