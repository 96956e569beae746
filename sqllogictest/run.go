package sqllogictest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Options tune RunFile. The zero value runs a whole script as MySQL.
type Options struct {
	// Engine is the name skipif and onlyif lines are matched against.
	// Default "mysql", the engine the corpus's results were generated on.
	Engine string
	// MaxRecords stops the script after this many statement and query
	// records (passed, failed or skipped); 0 means no limit.
	MaxRecords int
	// MaxFailures is how many failures Result.Failures describes. Default 5.
	MaxFailures int
	// RecordTimeout bounds each statement and query; 0 means no bound. A
	// record that times out fails, and the script goes on, on a new
	// connection.
	RecordTimeout time.Duration
}

// Result is the outcome of one script.
type Result struct {
	Passed, Failed, Skipped int
	// Failures describes the first Options.MaxFailures failures.
	Failures []Failure
	Elapsed  time.Duration
}

// Failure is a record that did not do what the script expected.
type Failure struct {
	Line     int
	SQL      string
	Expected string
	Got      string
}

// String describes the failure on three lines, the SQL on one line and
// cut short if long.
func (f Failure) String() string {
	const maxSQL = 240
	sql := strings.Join(strings.Fields(f.SQL), " ")
	if len(sql) > maxSQL {
		sql = sql[:maxSQL] + "..."
	}
	return fmt.Sprintf("line %d: %s\n    expected: %s\n    got:      %s", f.Line, sql, f.Expected, f.Got)
}

// RunFile runs the script at path on one connection from db, in a new
// database (named slt_<random>) that it drops at the end. Failed records
// are part of the Result; the error reports what kept the script from
// running: an unreadable script, a database that cannot be created, a
// connection that cannot be re-established, a cancelled ctx. RunFile may
// be called concurrently, with one script per call.
func RunFile(ctx context.Context, db *sql.DB, path string, opts Options) (res Result, err error) {
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	if opts.Engine == "" {
		opts.Engine = "mysql"
	}
	if opts.MaxFailures == 0 {
		opts.MaxFailures = 5
	}
	records, err := ParseFile(path)
	if err != nil {
		return res, err
	}

	r := &runner{db: db, opts: opts, database: fmt.Sprintf("slt_%08x", rand.Uint32())}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+r.database); err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, r.close()) }()
	if err := r.connect(ctx, ""); err != nil {
		return res, err
	}

	for i := range records {
		rec := &records[i]
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if rec.Kind == Halt {
			if rec.Applies(opts.Engine) {
				break
			}
			continue
		}
		if opts.MaxRecords > 0 && res.Passed+res.Failed+res.Skipped == opts.MaxRecords {
			break
		}
		if rec.Kind == File {
			if rec.Applies(opts.Engine) {
				if err := r.writeFile(rec); err != nil {
					return res, err
				}
			}
			continue
		}
		if !rec.Applies(opts.Engine) {
			res.Skipped++
			continue
		}
		f := r.run(ctx, rec)
		if f == nil {
			res.Passed++
			continue
		}
		res.Failed++
		if len(res.Failures) < opts.MaxFailures {
			res.Failures = append(res.Failures, *f)
		}
		if err := r.recover(ctx, rec); err != nil {
			return res, fmt.Errorf("after line %d: %w", rec.Line, err)
		}
	}
	return res, nil
}

// runner runs one script's records on its connections, by name ("" is
// the default one).
type runner struct {
	db       *sql.DB
	opts     Options
	database string
	conns    map[string]*sql.Conn
	// files is the directory of the script's File records, made at the
	// first; "" before.
	files string
}

// writeFile writes a File record's file.
func (r *runner) writeFile(rec *Record) error {
	if r.files == "" {
		dir, err := os.MkdirTemp("", "slt-files-")
		if err != nil {
			return err
		}
		// Readable by a server running as another user (LOAD DATA INFILE).
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		r.files = dir
	}
	return os.WriteFile(filepath.Join(r.files, rec.Name), []byte(rec.Content), 0o644)
}

// sql is a record's SQL with $FILES naming the directory of its files.
func (r *runner) sql(rec *Record) string {
	if r.files == "" || !strings.Contains(rec.SQL, "$FILES") {
		return rec.SQL
	}
	return strings.ReplaceAll(rec.SQL, "$FILES", r.files)
}

// connect (re)opens the runner's connection name in its database.
func (r *runner) connect(ctx context.Context, name string) error {
	if c := r.conns[name]; c != nil {
		c.Close()
		delete(r.conns, name)
	}
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return err
	}
	if r.conns == nil {
		r.conns = map[string]*sql.Conn{}
	}
	r.conns[name] = conn
	_, err = conn.ExecContext(ctx, "USE "+r.database)
	return err
}

// connOf returns the connection rec runs on, opening it on first use.
func (r *runner) connOf(ctx context.Context, rec *Record) (*sql.Conn, error) {
	if c := r.conns[rec.Conn]; c != nil {
		return c, nil
	}
	if err := r.connect(ctx, rec.Conn); err != nil {
		return nil, err
	}
	return r.conns[rec.Conn], nil
}

// recover replaces rec's connection if a timeout or a server that dropped
// it left it unusable.
func (r *runner) recover(ctx context.Context, rec *Record) error {
	if c := r.conns[rec.Conn]; c != nil && c.PingContext(ctx) == nil {
		return nil
	}
	return r.connect(ctx, rec.Conn)
}

// close drops the runner's database and closes its connections.
func (r *runner) close() error {
	for _, c := range r.conns {
		c.Close()
	}
	if r.files != "" {
		os.RemoveAll(r.files)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := r.db.ExecContext(ctx, "DROP DATABASE "+r.database)
	return err
}

// run executes one statement or query record and returns how it failed,
// or nil.
func (r *runner) run(ctx context.Context, rec *Record) *Failure {
	if r.opts.RecordTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.RecordTimeout)
		defer cancel()
	}
	fail := func(expected, got string) *Failure {
		return &Failure{Line: rec.Line, SQL: rec.SQL, Expected: expected, Got: got}
	}
	conn, err := r.connOf(ctx, rec)
	if err != nil {
		return fail("a connection", "error: "+err.Error())
	}
	if rec.Kind == Statement {
		_, err := conn.ExecContext(ctx, r.sql(rec))
		switch {
		case rec.ExpectError && err == nil:
			return fail("an error", "success")
		case !rec.ExpectError && err != nil:
			return fail("success", "error: "+err.Error())
		case rec.ErrorCode != 0:
			var me *mysql.MySQLError
			if !errors.As(err, &me) || int(me.Number) != rec.ErrorCode {
				return fail(fmt.Sprintf("error %d", rec.ErrorCode), "error: "+err.Error())
			}
		}
		return nil
	}

	want := summarize(rec.Expected)
	if rec.Hash != "" {
		want = fmt.Sprintf("%d values hashing to %s", rec.HashCount, rec.Hash)
	}
	values, ncol, err := r.query(ctx, conn, rec)
	if err != nil {
		return fail(want, "error: "+err.Error())
	}
	// An empty result's columns do not matter: the generator kept
	// whatever types the query line had when MySQL returned no rows.
	if len(values) > 0 && ncol != len(rec.Types) {
		return fail(fmt.Sprintf("%d columns (%s)", len(rec.Types), rec.Types), fmt.Sprintf("%d columns", ncol))
	}
	sortValues(values, ncol, rec.Sort)
	if rec.Hash != "" {
		got := hashValues(values)
		if len(values) == rec.HashCount && got == rec.Hash {
			return nil
		}
		return fail(want, fmt.Sprintf("%d values hashing to %s: %s", len(values), got, summarize(values)))
	}
	if slices.Equal(values, rec.Expected) {
		return nil
	}
	got := summarize(values)
	for i := range min(len(values), len(rec.Expected)) {
		if values[i] != rec.Expected[i] {
			got += fmt.Sprintf(" (value %d is %q, expected %q)", i+1, values[i], rec.Expected[i])
			break
		}
	}
	return fail(want, got)
}

// query runs a query and returns its values, rendered by the record's type
// letters, row after row, and the number of columns.
func (r *runner) query(ctx context.Context, conn *sql.Conn, rec *Record) ([]string, int, error) {
	rows, err := conn.QueryContext(ctx, r.sql(rec))
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, 0, err
	}
	raw := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	var values []string
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		for i, v := range raw {
			typ := byte('T')
			if i < len(rec.Types) {
				typ = rec.Types[i]
			}
			text, null := valueText(v)
			values = append(values, render(text, null, typ))
		}
	}
	return values, len(cols), rows.Err()
}
