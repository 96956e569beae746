package session

import (
	"io"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Result is what one statement produces: a record set when Rows is
// non-nil, otherwise the counts of an OK.
type Result struct {
	Rows         RecordSet
	AffectedRows uint64
	LastInsertID uint64
	// Info is the OK's message, e.g. "Rows matched: 1  Changed: 1  Warnings: 0".
	Info string
}

// RecordSet is a statement's rows, read one at a time.
type RecordSet interface {
	// Fields describes the columns. The slice and its elements do not
	// change once returned (a cached plan returns the same slice at every
	// execution).
	Fields() []planner.ResultField

	// Next returns the next row, len(Fields()) datums, or nil after the
	// last. The row and the bytes it holds are valid until the next call
	// to Next or Close.
	Next() ([]types.Datum, error)

	// Close releases the rows; the reader calls it exactly once, whether
	// or not Next reached the end.
	Close() error
}

// ResultWriter receives the results of ExecuteQuery and Stmt.Execute, one
// statement at a time: driver's adapter implements it over the protocol
// server. A result's rows are read to the end and closed before
// WriteResult returns; its error (the rows', or the client's going away)
// ends the call that produced the result.
type ResultWriter interface {
	WriteResult(r Result, more bool) error
}

// rows streams an executor's rows.
type rows struct {
	ctx     *executor.Ctx
	exec    executor.Executor
	fields  []planner.ResultField
	done    func() // called once when the rows are closed
	closed  bool
	counted *uint64
}

func (r *rows) Fields() []planner.ResultField { return r.fields }

func (r *rows) Next() ([]types.Datum, error) {
	row, err := r.exec.Next(r.ctx)
	if err != nil {
		return nil, mapError(err, nil)
	}
	if row != nil && r.counted != nil {
		*r.counted++
	}
	return row, nil
}

func (r *rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.exec.Close()
	if r.done != nil {
		r.done()
	}
	return err
}

// staticRows serves precomputed rows (SHOW, EXPLAIN, ...).
type staticRows struct {
	fields []planner.ResultField
	data   [][]types.Datum
	pos    int
}

func (r *staticRows) Fields() []planner.ResultField { return r.fields }
func (r *staticRows) Close() error                  { return nil }
func (r *staticRows) Next() ([]types.Datum, error) {
	if r.pos >= len(r.data) {
		return nil, nil
	}
	r.pos++
	return r.data[r.pos-1], nil
}

// textFields makes the columns of SHOW and EXPLAIN results: strings of up
// to 64 characters in utf8mb4_bin, with the given names.
func textFields(names ...string) []planner.ResultField {
	fields := make([]planner.ResultField, len(names))
	for i, n := range names {
		fields[i] = planner.ResultField{Name: n, OrgName: n,
			Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 64, Charset: "utf8mb4", Collate: "utf8mb4_bin"}}
	}
	return fields
}

// intField is a BIGINT (or, with long false, INT) column of a SHOW result.
func intField(long bool) types.FieldType {
	if long {
		return types.FieldType{Tp: mysql.TypeLonglong, Flen: 21}
	}
	return types.FieldType{Tp: mysql.TypeLong, Flen: 11}
}

// LocalFileOpener is implemented by a ResultWriter that can ask the client
// for a file (LOAD DATA LOCAL INFILE, whose client announced
// CLIENT_LOCAL_FILES): see server.LocalFileOpener. The stream is closed
// before the statement's result is written.
type LocalFileOpener interface {
	OpenLocalFile(name string) (io.ReadCloser, error)
}

// ErrNoLocalFiles is what a LocalFileOpener returns when its command cannot
// take a file from the client (COM_STMT_EXECUTE).
var ErrNoLocalFiles = errno.New(errClientLocalFilesDisabled, "Loading local data is disabled; this must be enabled on both the client and server side")
