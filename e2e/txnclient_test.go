package e2e

// What the transactional invariant tests (crash_test.go, bank_test.go,
// lostupdate_test.go) share: how a client connects, how it reads the
// outcome of a statement, and how it runs a transaction.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
	"github.com/go-sql-driver/mysql"
)

// The driver logs every connection the kills break; the tests report
// what matters themselves.
func init() { mysql.SetLogger(log.New(io.Discard, "", 0)) }

// opTimeout bounds one statement of a workload client. A statement that
// takes longer is a hang, and fails the test: every lock wait ends sooner
// (clients set innodb_lock_wait_timeout to lockWaitSeconds).
const (
	opTimeout       = 90 * time.Second
	lockWaitSeconds = 10
)

// outcome is what a client knows about a statement or transaction it sent.
type outcome int

const (
	// done: the server acknowledged it; it must be durable.
	done outcome = iota
	// rejected: the server answered with an error; none of it happened.
	rejected
	// unknown: the connection broke before the answer (the server was
	// killed); it may or may not have happened.
	unknown
)

func (o outcome) String() string {
	return [...]string{"done", "rejected", "unknown"}[o]
}

// outcomeOf classifies a statement's error. A MySQL error packet is a
// definite answer; anything else (a broken connection, EOF) is not.
func outcomeOf(err error) outcome {
	if err == nil {
		return done
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) && !undetermined(err) {
		return rejected
	}
	return unknown
}

// undetermined reports whether err is the server saying that it does not
// know whether the commit took effect (TiDB's "execution result
// undetermined", 1105: the store holding the primary lock went away
// during the commit); the connection lives on.
func undetermined(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1105 && strings.Contains(me.Message, "execution result undetermined")
}

// Error codes a client retries a transaction after: the transaction was
// rolled back (or, for 1205, its statement was) because of another one.
// 9007, 8002 and 8022 are TiDB's write conflict codes, in case Basalt ever
// reports conflicts the way TiDB does.
var retryableCodes = map[uint16]bool{
	1205: true, // ER_LOCK_WAIT_TIMEOUT
	1213: true, // ER_LOCK_DEADLOCK (Basalt also reports write conflicts so)
	8002: true, // TiDB: SELECT FOR UPDATE write conflict
	8022: true, // TiDB: transaction retry failed
	9007: true, // TiDB: write conflict
}

// retryable reports whether err is a MySQL error after which a client
// simply tries its transaction again.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && retryableCodes[me.Number]
}

// errCode is err's MySQL error number, or 0.
func errCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// clientDSN is srv's DSN for db. With interpolate, the driver puts the
// arguments into the statement text (one round trip, the text protocol);
// without, a statement with arguments is prepared on the server, executed
// (the binary protocol) and closed.
func clientDSN(t testing.TB, srv *testkit.Server, db string, interpolate bool) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(srv.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	cfg.InterpolateParams = interpolate
	return cfg.FormatDSN()
}

// openPool opens a pool to db on srv that interpolates arguments; the
// caller closes it (pools of a killed server are thrown away before the
// restart).
func openPool(t testing.TB, srv *testkit.Server, db string) *sql.DB {
	t.Helper()
	return openPoolDSN(t, clientDSN(t, srv, db, true))
}

func openPoolDSN(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	pool, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxIdleConns(64)
	return pool
}

// clientPools are a workload's two pools: one interpolates arguments, the
// other prepares statements on the server.
type clientPools [2]*sql.DB

func openClientPools(t testing.TB, srv *testkit.Server, db string) clientPools {
	t.Helper()
	return clientPools{openPoolDSN(t, clientDSN(t, srv, db, true)), openPoolDSN(t, clientDSN(t, srv, db, false))}
}

// forClient is the pool of client i: a quarter of the clients, half of
// them odd and half even (odd and even clients often differ in their
// transaction mode), use prepared statements.
func (p clientPools) forClient(i int) *sql.DB {
	if i%8 == 3 || i%8 == 6 {
		return p[1]
	}
	return p[0]
}

func (p clientPools) Close() {
	p[0].Close()
	p[1].Close()
}

// txnMode is how a client's explicit transactions run.
type txnMode string

const (
	// serverDefault leaves tidb_txn_mode alone: pessimistic on Basalt,
	// and the only mode MariaDB has.
	serverDefault txnMode = ""
	pessimistic   txnMode = "pessimistic"
	optimistic    txnMode = "optimistic"
)

// client is one connection of a workload, used by one goroutine.
type client struct {
	conn   *sql.Conn
	mode   txnMode
	flavor testkit.Flavor
}

// newClient takes a connection from pool and sets it up: the lock wait
// timeout and, on Basalt, the transaction mode.
func newClient(ctx context.Context, pool *sql.DB, flavor testkit.Flavor, mode txnMode) (*client, error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, err
	}
	c := &client{conn: conn, mode: mode, flavor: flavor}
	setup := []string{fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", lockWaitSeconds)}
	if mode != serverDefault {
		if flavor != testkit.Basalt {
			conn.Close()
			return nil, fmt.Errorf("%s has no %s transactions", flavor, mode)
		}
		setup = append(setup, fmt.Sprintf("SET SESSION tidb_txn_mode = '%s'", mode))
	}
	for _, s := range setup {
		if _, err := c.exec(ctx, s); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	return c, nil
}

func (c *client) Close() { c.conn.Close() }

// exec runs one statement under opTimeout.
func (c *client) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	res, err := c.conn.ExecContext(ctx, query, args...)
	return res, hangError(ctx, query, err)
}

// execRows runs one DML statement and checks how many rows it changed.
func (c *client) execRows(ctx context.Context, want int64, query string, args ...any) error {
	res, err := c.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != want {
		return &invariantError{fmt.Sprintf("%s %v: %d rows affected, want %d", query, args, n, want)}
	}
	return nil
}

// queryInts runs a query whose columns are all integers (or NULL, read as
// 0) and returns its rows.
func (c *client) queryInts(ctx context.Context, query string, args ...any) ([][]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rows, err := c.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, hangError(ctx, query, err)
	}
	defer rows.Close()
	return scanInts(rows)
}

func scanInts(rows *sql.Rows) ([][]int64, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]int64
	for rows.Next() {
		vals := make([]sql.NullInt64, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]int64, len(cols))
		for i, v := range vals {
			row[i] = v.Int64
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// queryInts on a pool, for checks after a workload.
func poolInts(t testing.TB, db *sql.DB, query string, args ...any) [][]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	out, err := scanInts(rows)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// txn runs body in an explicit transaction (BEGIN ... COMMIT) and reports
// its outcome. If body fails with a MySQL error or errRollback, or COMMIT
// fails with a MySQL error, the transaction is rolled back and its outcome
// is rejected, with the error. Any other error of body (a broken
// connection, an invariantError) makes it unknown.
func (c *client) txn(ctx context.Context, body func() error) (outcome, error) {
	if _, err := c.exec(ctx, "BEGIN"); err != nil {
		return outcomeOf(err), err
	}
	err := body()
	if err == nil {
		_, err = c.exec(ctx, "COMMIT")
		return outcomeOf(err), err
	}
	if outcomeOf(err) == unknown && !errors.Is(err, errRollback) {
		return unknown, err
	}
	if _, rbErr := c.exec(ctx, "ROLLBACK"); outcomeOf(rbErr) == unknown {
		return unknown, rbErr
	} else if rbErr != nil {
		return rejected, errors.Join(err, fmt.Errorf("ROLLBACK: %w", rbErr))
	}
	return rejected, err
}

// errRollback is what a transaction's body returns to roll it back.
var errRollback = errors.New("rolled back by the client")

// invariantError is a broken invariant seen by a client, as opposed to an
// error the server reported.
type invariantError struct{ msg string }

func (e *invariantError) Error() string { return e.msg }

// errHang marks a statement that did not finish within opTimeout.
var errHang = errors.New("hang")

func hangError(ctx context.Context, query string, err error) error {
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%w: %q did not finish within %v: %v", errHang, query, opTimeout, err)
	}
	return err
}

// unexpected reports whether err, returned to a workload client, means
// the test must fail: a hang, a broken invariant, or (unless the server
// is being killed) a lost connection.
func unexpected(err error, killing bool) bool {
	var ie *invariantError
	switch {
	case err == nil:
		return false
	case errors.Is(err, errHang), errors.As(err, &ie):
		return true
	case outcomeOf(err) == unknown:
		return !killing
	}
	return false
}

// broken reports whether err is a lost connection (or one that could not
// be made), as opposed to an answer of the server, a hang or a broken
// invariant.
func broken(err error) bool {
	var ie *invariantError
	var me *mysql.MySQLError
	return err != nil && !errors.As(err, &me) && !errors.Is(err, errHang) && !errors.As(err, &ie) && !errors.Is(err, errRollback)
}

// mustExecAll runs statements on db in order.
func mustExecAll(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
