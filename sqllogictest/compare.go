package sqllogictest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// CompareOptions tune CompareFile.
type CompareOptions struct {
	// Engines name the two servers, for skipif and onlyif: a record runs
	// only if it applies to both.
	Engines [2]string
	// MaxMismatches is how many mismatches the result describes. Default 20.
	MaxMismatches int
	// RecordTimeout bounds each statement and query; 0 means no bound.
	RecordTimeout time.Duration
}

// CompareResult is the outcome of comparing one script on two servers.
type CompareResult struct {
	// Compared counts the records both servers ran; Skipped those that
	// apply to only one of them.
	Compared, Skipped int
	Mismatches        []Mismatch
	// Failed counts every mismatch (Mismatches holds the first ones).
	Failed int
}

// Mismatch is a record on which the two servers disagree.
type Mismatch struct {
	Line int
	SQL  string
	A, B string // what each server did
}

func (m Mismatch) String() string {
	sql := strings.Join(strings.Fields(m.SQL), " ")
	if len(sql) > 240 {
		sql = sql[:240] + "..."
	}
	return fmt.Sprintf("line %d: %s\n    A: %s\n    B: %s", m.Line, sql, m.A, m.B)
}

// CompareFile runs the script at path on two servers, each on one
// connection in a database of its own, and compares what they do record by
// record, ignoring the script's expected results: a statement must succeed
// on both with the same affected-row count, or fail on both with the same
// error code; a query must fail alike or return the same columns and rows,
// rendered by the record's type letters, in the same order if the query
// has an ORDER BY and as a multiset otherwise. Records guarded so that
// they apply to one server only are skipped.
func CompareFile(ctx context.Context, a, b *sql.DB, path string, opts CompareOptions) (res CompareResult, err error) {
	if opts.MaxMismatches == 0 {
		opts.MaxMismatches = 20
	}
	records, err := ParseFile(path)
	if err != nil {
		return res, err
	}
	name := fmt.Sprintf("cmp_%08x", rand.Uint32())
	var runners [2]*runner
	for i, db := range []*sql.DB{a, b} {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
			return res, err
		}
		r := &runner{db: db, opts: Options{Engine: opts.Engines[i], RecordTimeout: opts.RecordTimeout}, database: name}
		runners[i] = r
		defer func() { err = errors.Join(err, r.close()) }()
		if err := r.connect(ctx, ""); err != nil {
			return res, err
		}
	}
	for i := range records {
		rec := &records[i]
		if rec.Kind == Halt {
			if rec.Applies(opts.Engines[0]) || rec.Applies(opts.Engines[1]) {
				break
			}
			continue
		}
		if rec.Kind == File {
			for j, r := range runners {
				if rec.Applies(opts.Engines[j]) {
					if err := r.writeFile(rec); err != nil {
						return res, err
					}
				}
			}
			continue
		}
		if !rec.Applies(opts.Engines[0]) || !rec.Applies(opts.Engines[1]) {
			res.Skipped++
			continue
		}
		res.Compared++
		var outs [2]string
		for j, r := range runners {
			outs[j] = r.outcome(ctx, rec)
		}
		if outs[0] == outs[1] {
			continue
		}
		res.Failed++
		if len(res.Mismatches) < opts.MaxMismatches {
			res.Mismatches = append(res.Mismatches, Mismatch{Line: rec.Line, SQL: rec.SQL, A: outs[0], B: outs[1]})
		}
		for _, r := range runners {
			if err := r.recover(ctx, rec); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// orderBy finds an ORDER BY that orders the whole result: the last one,
// outside parentheses.
var orderBy = regexp.MustCompile(`(?is)\border\s+by\b[^()]*$`)

// outcome runs a record and describes what happened, in a form two
// servers' outcomes can be compared by.
func (r *runner) outcome(ctx context.Context, rec *Record) string {
	if r.opts.RecordTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.RecordTimeout)
		defer cancel()
	}
	describe := func(err error) string {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return fmt.Sprintf("error %d", me.Number)
		}
		return "error: " + err.Error()
	}
	conn, err := r.connOf(ctx, rec)
	if err != nil {
		return describe(err)
	}
	if rec.Kind == Statement {
		res, err := conn.ExecContext(ctx, r.sql(rec))
		if err != nil {
			return describe(err)
		}
		n, _ := res.RowsAffected()
		return fmt.Sprintf("ok, %d rows affected", n)
	}
	values, ncol, err := r.query(ctx, conn, rec)
	if err != nil {
		return describe(err)
	}
	if ncol == 0 {
		return "no columns"
	}
	rows := make([]string, 0, len(values)/ncol)
	for i := 0; i+ncol <= len(values); i += ncol {
		rows = append(rows, strings.Join(values[i:i+ncol], " | "))
	}
	if !orderBy.MatchString(rec.SQL) {
		slices.Sort(rows)
	}
	return fmt.Sprintf("%d columns, %d rows: [%s]", ncol, len(rows), strings.Join(rows, "] ["))
}
