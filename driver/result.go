package driver

import (
	"io"

	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/session"
)

// writer is the session.ResultWriter of one connection: it hands each
// result of a command to the server's ResultWriter, with its record set
// as server.Rows.
type writer struct {
	c    *conn
	out  server.ResultWriter // the running command's, nil between commands
	rows rows                // reused: the server reads and closes a result's rows before WriteResult returns
}

// WriteResult implements session.ResultWriter.
func (w *writer) WriteResult(r session.Result, more bool) error {
	res := server.Result{AffectedRows: r.AffectedRows, LastInsertID: r.LastInsertID, Info: r.Info}
	if r.Rows != nil {
		w.rows.reset(r.Rows)
		res.Rows = &w.rows
	}
	return w.out.WriteResult(res, more)
}

// OpenLocalFile implements session.LocalFileOpener over the server's
// LocalFileOpener (LOAD DATA LOCAL INFILE).
func (w *writer) OpenLocalFile(name string) (io.ReadCloser, error) {
	o, ok := w.out.(server.LocalFileOpener)
	if !ok {
		return nil, session.ErrNoLocalFiles
	}
	return o.OpenLocalFile(name)
}

// rows is a session.RecordSet as server.Rows: it converts each row of
// datums to wire values of its columns' types.
type rows struct {
	rs session.RecordSet
	// fields is the slice cols was made from. A record set's fields do not
	// change once returned, and a cached plan returns the same slice at
	// every execution, so the columns are described once per plan, not
	// once per execution.
	fields []planner.ResultField
	cols   []server.Column
}

func (r *rows) reset(rs session.RecordSet) {
	r.rs = rs
	f := rs.Fields()
	if len(f) == 0 || len(f) != len(r.fields) || &f[0] != &r.fields[0] {
		r.cols = wireColumns(r.cols[:0], f)
		r.fields = f
	}
}

// Columns implements server.Rows.
func (r *rows) Columns() []server.Column { return r.cols }

// Next implements server.Rows.
func (r *rows) Next(out []server.Value) (bool, error) {
	row, err := r.rs.Next()
	if err != nil || row == nil {
		return false, err
	}
	for i := range out {
		out[i] = wireValue(row[i], r.cols[i].Type)
	}
	return true, nil
}

// Close implements server.Rows.
func (r *rows) Close() error {
	rs := r.rs
	r.rs = nil
	return rs.Close()
}
