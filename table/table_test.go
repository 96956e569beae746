package table_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/scripttest"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// TestTable runs the scripts in testdata/: what a table does to values
// and rows, on a fresh store per file whose current database is test.
// The commands:
//
//	exec            CREATE TABLE, CREATE INDEX and ALTER TABLE statements,
//	                ';'-separated; prints ok or the first error
//	convert table=t col=c [mode=...]
//	                each line an expression, converted for column c as an
//	                INSERT under sql_mode mode (MySQL 8's default if not
//	                given, none for an empty one) would: the value stored,
//	                its kind, and the warnings, or the error
//	write table=t [mode=...]
//	                each line one change, committed on its own:
//	                  insert <handle> (<values>)
//	                  update <handle> (<old values>) (<new values>)
//	                  delete <handle> (<values>)
//	                values are expressions converted for the columns; a
//	                table whose primary key is its handle takes the key's
//	                value as <handle>. Prints ok or the error per line
//	kv table=t      the keys the table holds, decoded: rows by handle,
//	                then index entries by index (a string's key holds its
//	                collation's sort key: 'a' under a _ci collation is "A")
//	decode table=t [cols=(a,b)] [tz=zone]
//	                every stored row, decoded by a table.Decoder of the
//	                named columns (all if not given), TIMESTAMP values in
//	                zone (as stored if not given)
//
// Rewrite the expected output with -rewrite.
func TestTable(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newHarness(t)
		datadriven.RunTest(t, path, h.run)
	})
}

// defaultSQLMode is MySQL 8's default sql_mode, as sessions start with.
const defaultSQLMode = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

var testNow = time.Date(2024, 2, 29, 13, 14, 15, 0, time.UTC)

type harness struct {
	store kv.Storage
	cat   *catalog.Catalog
	ddl   *ddl.DDL
	p     *parser.Parser
}

func newHarness(t *testing.T) *harness {
	st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cat, err := catalog.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	// Changes run one at a time: there is never an older schema version
	// in use to wait out.
	wait := func(context.Context, int64) error { return nil }
	return &harness{store: st, cat: cat, ddl: &ddl.DDL{Store: st, Catalog: cat, Wait: wait}, p: parser.New()}
}

func (h *harness) run(t *testing.T, td *datadriven.TestData) string {
	ctx := context.Background()
	switch td.Cmd {
	case "exec":
		stmts, err := parserdriver.Parse(h.p, td.Input)
		if err != nil {
			return "parse error: " + err.Error() + "\n"
		}
		for _, s := range stmts {
			if err := h.exec(ctx, s, evalCtx(t, td).Mode); err != nil {
				return scripttest.Err(err) + "\n"
			}
		}
		return "ok\n"
	case "convert":
		tbl := h.table(t, td)
		col := tbl.FindColumn(argVal(t, td, "col"))
		if col == nil {
			t.Fatalf("%s: no column %s", td.Pos, argVal(t, td, "col"))
		}
		var out strings.Builder
		for _, line := range lines(td.Input) {
			ectx := evalCtx(t, td)
			v, err := h.eval(ectx, line)
			if err == nil {
				v, err = table.Convert(ectx, v, col)
			}
			fmt.Fprintf(&out, "%s → %s\n", line, result(v, err, ectx))
		}
		return out.String()
	case "write":
		tbl := h.table(t, td)
		var out strings.Builder
		for _, line := range lines(td.Input) {
			err := h.write(ctx, evalCtx(t, td), tbl, line)
			if err != nil {
				fmt.Fprintf(&out, "%s: %s\n", line, scripttest.Err(err))
			} else {
				fmt.Fprintf(&out, "%s: ok\n", line)
			}
		}
		return out.String()
	case "kv":
		return h.dump(t, h.table(t, td))
	case "decode":
		tbl := h.table(t, td)
		var cols []int
		if arg, ok := td.Arg("cols"); ok {
			cols = []int{}
			for _, name := range arg.Vals {
				if name == "" {
					continue // cols=()
				}
				c := tbl.FindColumn(name)
				if c == nil {
					t.Fatalf("%s: no column %s", td.Pos, name)
				}
				cols = append(cols, c.Offset)
			}
		}
		var zone *time.Location
		if arg, ok := td.Arg("tz"); ok {
			var err error
			if zone, err = time.LoadLocation(arg.SingleVal(t)); err != nil {
				t.Fatal(err)
			}
		}
		var out strings.Builder
		h.rows(t, table.NewDecoder(tbl, cols, zone), func(hd tablecodec.Handle, row []types.Datum) {
			fmt.Fprintf(&out, "%s\n", scripttest.Row(row))
		})
		return out.String()
	}
	t.Fatalf("%s: unknown command %s", td.Pos, td.Cmd)
	return ""
}

func (h *harness) exec(ctx context.Context, s ast.StmtNode, mode expression.SQLMode) error {
	switch x := s.(type) {
	case *ast.CreateTableStmt:
		return h.ddl.CreateTable(ctx, catalog.DefaultDB, x)
	case *ast.CreateIndexStmt:
		return h.ddl.CreateIndex(ctx, catalog.DefaultDB, x.Table, x.IndexName, x.KeyType == ast.IndexKeyTypeUnique,
			x.IndexPartSpecifications, x.IfNotExists)
	case *ast.AlterTableStmt:
		_, err := h.ddl.AlterTable(ctx, catalog.DefaultDB, x, uint32(mode))
		return err
	}
	return fmt.Errorf("exec: %T is not a schema change", s)
}

// write applies one line of a write command in a transaction of its own.
func (h *harness) write(ctx context.Context, ectx *expression.Ctx, tbl *catalog.TableInfo, line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	handleText, rest, _ := strings.Cut(rest, " ")
	hv, err := strconv.ParseInt(handleText, 10, 64)
	if err != nil {
		return fmt.Errorf("bad handle %q", handleText)
	}
	hd := tablecodec.IntHandle(hv)
	var rows [][]types.Datum
	for _, tuple := range tuples(rest) {
		row, err := h.row(ectx, tbl, tuple)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	txn, err := h.store.Begin(kv.TxnOptions{})
	if err != nil {
		return err
	}
	defer txn.Rollback()
	wc := &table.WriteCtx{Context: ctx, Eval: ectx, Reader: txn, Txn: txn}
	w := table.NewWriter(tbl)
	switch {
	case verb == "insert" && len(rows) == 1:
		err = w.Add(wc, rows[0], hd)
	case verb == "update" && len(rows) == 2:
		err = w.Update(wc, rows[0], rows[1], hd)
	case verb == "delete" && len(rows) == 1:
		err = w.Remove(wc, rows[0], hd)
	default:
		return fmt.Errorf("cannot %s %d rows", verb, len(rows))
	}
	if err != nil {
		return err
	}
	return txn.Commit(ctx)
}

// row evaluates a tuple's expressions and converts them for t's columns.
func (h *harness) row(ectx *expression.Ctx, t *catalog.TableInfo, tuple string) ([]types.Datum, error) {
	stmts, err := parserdriver.Parse(h.p, "SELECT "+tuple)
	if err != nil {
		return nil, err
	}
	fields := stmts[0].(*ast.SelectStmt).Fields.Fields
	if len(fields) != len(t.Columns) {
		return nil, fmt.Errorf("%d values for %d columns", len(fields), len(t.Columns))
	}
	row := make([]types.Datum, len(fields))
	for i, f := range fields {
		e, err := (&expression.Builder{Clause: "field list"}).Build(f.Expr)
		if err != nil {
			return nil, err
		}
		v, err := e.Eval(ectx, nil)
		if err != nil {
			return nil, err
		}
		if row[i], err = table.Convert(ectx, v, t.Columns[i]); err != nil {
			return nil, err
		}
	}
	return row, nil
}

// eval evaluates one expression.
func (h *harness) eval(ectx *expression.Ctx, sql string) (types.Datum, error) {
	stmts, err := parserdriver.Parse(h.p, "SELECT "+sql)
	if err != nil {
		return types.Null, err
	}
	e, err := (&expression.Builder{Clause: "field list"}).Build(stmts[0].(*ast.SelectStmt).Fields.Fields[0].Expr)
	if err != nil {
		return types.Null, err
	}
	return e.Eval(ectx, nil)
}

// dump prints the keys of t: its rows, then each index's entries.
func (h *harness) dump(t *testing.T, tbl *catalog.TableInfo) string {
	var out strings.Builder
	h.rows(t, table.NewDecoder(tbl, nil, nil), func(hd tablecodec.Handle, row []types.Datum) {
		fmt.Fprintf(&out, "row %s: %s\n", handleString(hd), scripttest.Row(row[:len(tbl.Columns)]))
	})
	for _, ix := range tbl.Indexes {
		h.scan(t, tablecodec.IndexPrefix(tbl.ID, ix.ID), func(k, v []byte) {
			vals, hd, hasHandle, err := tablecodec.DecodeIndexKey(k, len(ix.Columns), tbl.CommonHandle)
			if err != nil {
				t.Fatal(err)
			}
			if !hasHandle {
				if hd, err = tablecodec.DecodeHandle(v, tbl.CommonHandle); err != nil {
					t.Fatal(err)
				}
			}
			kind := "key"
			if !hasHandle {
				kind = "unique key"
			}
			fmt.Fprintf(&out, "index %s %s %s → %s\n", ix.Name, kind, scripttest.Row(vals), handleString(hd))
		})
	}
	return out.String()
}

// rows calls fn with each stored row of dec's table, decoded by dec: its
// handle, and the row in a table source's layout (the columns, then the
// handle).
func (h *harness) rows(t *testing.T, dec *table.Decoder, fn func(hd tablecodec.Handle, row []types.Datum)) {
	tbl := dec.Table()
	h.scan(t, tablecodec.RowPrefix(tbl.ID), func(k, v []byte) {
		_, hd, err := tablecodec.DecodeRowKey(k, tbl.CommonHandle)
		if err != nil {
			t.Fatal(err)
		}
		row := make([]types.Datum, len(tbl.Columns)+1)
		if err := dec.Decode(hd, v, row); err != nil {
			t.Fatal(err)
		}
		fn(hd, row)
	})
}

// scan calls fn with each key under prefix, at the latest snapshot.
func (h *harness) scan(t *testing.T, prefix []byte, fn func(k, v []byte)) {
	ts, err := h.store.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	it, err := h.store.Snapshot(ts).Iter(prefix, kv.PrefixEnd(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ; it.Valid(); it.Next() {
		fn(it.Key(), it.Value())
	}
}

func (h *harness) table(t *testing.T, td *datadriven.TestData) *catalog.TableInfo {
	name := argVal(t, td, "table")
	tbl := h.cat.InfoSchema().Table(catalog.DefaultDB, name)
	if tbl == nil {
		t.Fatalf("%s: no table %s", td.Pos, name)
	}
	return tbl
}

func evalCtx(t *testing.T, td *datadriven.TestData) *expression.Ctx {
	modeText := defaultSQLMode
	if arg, ok := td.Arg("mode"); ok {
		modeText = strings.Join(arg.Vals, ",")
		if modeText == "none" {
			modeText = ""
		}
	}
	mode, err := expression.ParseSQLMode(modeText)
	if err != nil {
		t.Fatalf("%s: %v", td.Pos, err)
	}
	return &expression.Ctx{Context: context.Background(), Now: testNow, Mode: mode, Strict: mode.Strict(), InWrite: true}
}

func argVal(t *testing.T, td *datadriven.TestData, key string) string {
	arg, ok := td.Arg(key)
	if !ok {
		t.Fatalf("%s: %s needs %s=", td.Pos, td.Cmd, key)
	}
	return arg.SingleVal(t)
}

func lines(input string) []string {
	var out []string
	for _, l := range strings.Split(input, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// tuples splits "(a, b) (c, d)" into "a, b" and "c, d", minding quotes.
func tuples(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			if depth == 0 {
				start = i + 1
			}
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				out = append(out, s[start:i])
			}
		}
	}
	return out
}

// result prints a converted value with its kind and the warnings, or the
// error.
func result(v types.Datum, err error, ectx *expression.Ctx) string {
	if err != nil {
		return scripttest.Err(err)
	}
	s := scripttest.Value(v) + " (" + v.Kind().String() + ")"
	for _, w := range ectx.Warnings {
		level := "warning"
		if w.Note {
			level = "note"
		}
		s += fmt.Sprintf("; %s %d: %s", level, w.Code, w.Msg)
	}
	return s
}

func handleString(h tablecodec.Handle) string {
	if h.Common != nil {
		return fmt.Sprintf("%x", h.Common)
	}
	return strconv.FormatInt(h.Int, 10)
}
