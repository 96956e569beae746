package planner_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	parsertypes "github.com/pingcap/tidb/pkg/parser/types"
)

// TestPlan runs the scripts in testdata/: SQL in, the plan tree out, as
// EXPLAIN shows it (planner.Explain). Each file starts from a fresh store
// whose catalog has the database test, the current one. The commands:
//
//	exec                  DDL statements (CREATE/DROP TABLE, CREATE/DROP INDEX,
//	                      ALTER TABLE, CREATE DATABASE, USE), ';'-separated;
//	                      prints ok or the first error
//	analyze table=T rows=N
//	                      give T statistics as ANALYZE TABLE would for N rows
//	                      in which each listed column (a line "col lo..hi")
//	                      takes the integers lo..hi spread evenly; columns
//	                      not listed have no statistics
//	plan-during-ddl       a schema change, ';', then a query: the query's plan
//	                      at each step of the change (each new schema
//	                      version that the change waits out) and after it
//	plan [fields] [cols] [only_full_group_by=false]
//	                      plan a SELECT, UNION, UPDATE or DELETE and print its
//	                      plan (for UPDATE and DELETE the rows they change), or
//	                      the error; fields adds the result columns of a query,
//	                      cols the columns each table source reads
//	                      (planner.TableSource.Cols); subqueries adds
//	                      the plans of the subqueries in its conditions
//	                      and select list
//
// The tables hold no rows: plans depend on the schema and the statistics
// only. Rewrite the expected output with -rewrite.
func TestPlan(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newHarness(t)
		datadriven.RunTest(t, path, h.run)
	})
}

type harness struct {
	cat *catalog.Catalog
	ddl *ddl.DDL
	db  string
	p   *parser.Parser
	// onWait, if set, is called at each step of a schema change.
	onWait func(version int64)
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
	h := &harness{cat: cat, db: catalog.DefaultDB, p: parser.New()}
	// Nothing runs under older schema versions, so a schema change never
	// waits; the tables are empty, so nothing is backfilled or converted.
	wait := func(_ context.Context, v int64) error {
		if h.onWait != nil {
			h.onWait(v)
		}
		return nil
	}
	h.ddl = &ddl.DDL{Store: st, Catalog: cat, Wait: wait}
	return h
}

func (h *harness) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "exec":
		stmts, err := parserdriver.Parse(h.p, td.Input)
		if err != nil {
			t.Fatalf("%s: %v", td.Pos, err)
		}
		for _, s := range stmts {
			if err := h.exec(s); err != nil {
				return errText(err)
			}
		}
		return "ok\n"
	case "analyze":
		return h.analyze(t, td)
	case "plan-during-ddl":
		stmts, err := parserdriver.Parse(h.p, td.Input)
		if err != nil || len(stmts) != 2 {
			t.Fatalf("%s: want a schema change and a query: %v", td.Pos, err)
		}
		var out strings.Builder
		show := func(when string) {
			fmt.Fprintf(&out, "%s:\n", when)
			p, _, err := build(h.context(), stmts[1])
			if err != nil {
				out.WriteString(errText(err))
				return
			}
			out.WriteString(explain(p))
		}
		h.onWait = func(v int64) { show(fmt.Sprintf("schema version %d", v)) }
		err = h.exec(stmts[0])
		h.onWait = nil
		if err != nil {
			out.WriteString(errText(err))
		}
		show("after")
		return out.String()
	case "plan":
		stmt, err := h.p.ParseOneStmt(td.Input, "", "")
		if err != nil {
			t.Fatalf("%s: %v", td.Pos, err)
		}
		c := h.context()
		c.OnlyFullGroupBy = !td.HasArg("only_full_group_by") || argString(t, td, "only_full_group_by") != "false"
		p, fields, err := build(c, stmt)
		if err != nil {
			return errText(err)
		}
		out := explain(p)
		if td.HasArg("fields") {
			for _, f := range fields {
				out += "field " + f.Name
				if f.OrgName != "" {
					out += fmt.Sprintf(" (%s.%s)", f.OrgTable, f.OrgName)
				}
				out += ": " + typeName(f.Type) + "\n"
			}
		}
		if td.HasArg("cols") {
			out += sourceCols(p)
		}
		if td.HasArg("subqueries") {
			for i, sq := range subqueries(p) {
				keyed := ""
				if sq.Keyed {
					var keys []string
					for _, k := range sq.Left {
						keys = append(keys, expression.String(k))
					}
					keyed = " (decorrelated, keyed by " + strings.Join(keys, ", ") + ")"
				}
				out += fmt.Sprintf("subquery %d%s:\n%s", i+1, keyed, explain(sq.Plan.(planner.Plan)))
			}
		}
		return out
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

// context is what a session would plan with: the newest schema, the
// current database, the catalog's statistics.
func (h *harness) context() *planner.Context {
	return &planner.Context{IS: h.cat.InfoSchema(), DB: h.db, Stats: h.cat.Stats,
		Parse: func(sql string) (ast.StmtNode, error) { return parser.New().ParseOneStmt(sql, "", "") }}
}

func (h *harness) exec(s ast.StmtNode) error {
	ctx := context.Background()
	switch x := s.(type) {
	case *ast.CreateDatabaseStmt:
		return h.ddl.CreateDatabase(ctx, x)
	case *ast.UseStmt:
		if h.cat.InfoSchema().DB(x.DBName) == nil {
			return fmt.Errorf("unknown database %s", x.DBName)
		}
		h.db = x.DBName
		return nil
	case *ast.CreateTableStmt:
		return h.ddl.CreateTable(ctx, h.db, x)
	case *ast.DropTableStmt:
		return h.ddl.DropTable(ctx, h.db, x)
	case *ast.CreateIndexStmt:
		unique := x.KeyType == ast.IndexKeyTypeUnique
		return h.ddl.CreateIndex(ctx, h.db, x.Table, x.IndexName, unique, x.IndexPartSpecifications, x.IfNotExists)
	case *ast.DropIndexStmt:
		return h.ddl.DropIndex(ctx, h.db, x.Table, x.IndexName, x.IfExists)
	case *ast.AlterTableStmt:
		_, err := h.ddl.AlterTable(ctx, h.db, x, 0)
		return err
	}
	return fmt.Errorf("exec: %T is not a statement these tests run", s)
}

// build plans a statement as EXPLAIN does.
func build(c *planner.Context, stmt ast.StmtNode) (planner.Plan, []planner.ResultField, error) {
	switch st := stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		q, err := planner.BuildQuery(c, st.(ast.ResultSetNode))
		if err != nil {
			return nil, nil, err
		}
		return q.Plan, q.Fields, nil
	case *ast.UpdateStmt:
		if planner.IsMultiUpdate(st) {
			u, err := planner.BuildMultiUpdate(c, st)
			if err != nil {
				return nil, nil, err
			}
			return u.Source, nil, nil
		}
		u, err := planner.BuildUpdate(c, st)
		if err != nil {
			return nil, nil, err
		}
		return u.Source, nil, nil
	case *ast.DeleteStmt:
		if st.IsMultiTable {
			d, err := planner.BuildMultiDelete(c, st)
			if err != nil {
				return nil, nil, err
			}
			return d.Source, nil, nil
		}
		d, err := planner.BuildDelete(c, st)
		if err != nil {
			return nil, nil, err
		}
		return d.Source, nil, nil
	}
	return nil, nil, fmt.Errorf("plan: %T is not a statement EXPLAIN plans", stmt)
}

// explain prints a plan as EXPLAIN's three columns.
func explain(p planner.Plan) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, r := range planner.Explain(p) {
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.ID, r.EstRows, r.Info)
	}
	w.Flush()
	// tabwriter pads the last column too when it is empty.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// analyze gives a table the statistics ANALYZE TABLE would collect from
// rows rows in which each listed column takes the integers lo..hi spread
// evenly (a histogram of 64 buckets, the exact NDV, no NULLs).
func (h *harness) analyze(t *testing.T, td *datadriven.TestData) string {
	name := argString(t, td, "table")
	rows, err := strconv.Atoi(argString(t, td, "rows"))
	if err != nil || rows < 1 {
		t.Fatalf("%s: rows=%s", td.Pos, argString(t, td, "rows"))
	}
	tbl := h.cat.InfoSchema().Table(h.db, name)
	if tbl == nil {
		t.Fatalf("%s: no table %s", td.Pos, name)
	}
	st := &catalog.TableStats{RowCount: int64(rows), Sampled: int64(rows),
		IndexNDV: map[int64]int64{}, ColumnNDV: map[int64]int64{},
		Columns: map[int64]*catalog.ColumnStats{}, Indexes: map[int64]*catalog.ColumnStats{}}
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		colName, span, ok := strings.Cut(line, " ")
		los, his, ok2 := strings.Cut(strings.TrimSpace(span), "..")
		lo, err1 := strconv.ParseInt(los, 10, 64)
		hi, err2 := strconv.ParseInt(his, 10, 64)
		if !ok || !ok2 || err1 != nil || err2 != nil || hi < lo {
			t.Fatalf("%s: want \"col lo..hi\", got %q", td.Pos, line)
		}
		col := tbl.FindColumn(colName)
		if col == nil {
			t.Fatalf("%s: no column %s", td.Pos, colName)
		}
		vals := make([][]byte, rows)
		ndv := map[int64]bool{}
		for i := range rows {
			v := lo + int64(i)*(hi-lo+1)/int64(rows)
			ndv[v] = true
			if vals[i], err = tablecodec.EncodeKeyDatum(nil, types.NewInt(v)); err != nil {
				t.Fatal(err)
			}
		}
		slices.SortFunc(vals, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
		cs := &catalog.ColumnStats{NDV: int64(len(ndv)), AvgSize: 9, Hist: catalog.BuildHistogram(vals, 64, 1)}
		st.Columns[col.ID], st.ColumnNDV[col.ID] = cs, cs.NDV
	}
	if err := h.cat.SetStats(context.Background(), tbl.ID, st); err != nil {
		t.Fatal(err)
	}
	return "ok\n"
}

func argString(t *testing.T, td *datadriven.TestData, key string) string {
	arg, ok := td.Arg(key)
	if !ok {
		t.Fatalf("%s: missing %s=", td.Pos, key)
	}
	return arg.SingleVal(t)
}

// errText is an error as the MySQL client prints it.
func errText(err error) string {
	return err.Error() + "\n"
}

// typeName is a result column's type: the parser's name of its type
// code, (length[,scale]), UNSIGNED, and a string's collation.
func typeName(ft types.FieldType) string {
	s := parsertypes.TypeToStr(ft.Tp, ft.Charset)
	if ft.Decimal > 0 {
		s += fmt.Sprintf("(%d,%d)", ft.Flen, ft.Decimal)
	} else if ft.Flen > 0 {
		s += fmt.Sprintf("(%d)", ft.Flen)
	}
	if ft.Unsigned() {
		s += " unsigned"
	}
	if ft.Collate != "" {
		s += " " + ft.Collate
	} else if ft.Charset != "" {
		s += " " + ft.Charset
	}
	return s
}

// sourceCols lists the columns each table source of p reads, depth first.
func sourceCols(p planner.Plan) string {
	var src *planner.TableSource
	switch x := p.(type) {
	case *planner.PointGet:
		src = &x.TableSource
	case *planner.BatchPointGet:
		src = &x.TableSource
	case *planner.TableScan:
		src = &x.TableSource
	case *planner.IndexScan:
		src = &x.TableSource
	}
	out := ""
	if src != nil {
		names := "all columns"
		if src.Cols != nil {
			parts := make([]string, len(src.Cols))
			for i, c := range src.Cols {
				parts[i] = src.Table.Columns[c].Name
			}
			names = "(" + strings.Join(parts, ", ") + ")"
		}
		out += fmt.Sprintf("reads %s: %s\n", src.Table.Name, names)
	}
	for _, c := range p.Children() {
		out += sourceCols(c)
	}
	return out
}

// subqueries returns the subqueries in the conditions and select lists of
// p's operators, outermost first.
func subqueries(p planner.Plan) []*expression.Subquery {
	var out []*expression.Subquery
	var walkExpr func(e expression.Expr)
	walkExpr = func(e expression.Expr) {
		switch x := e.(type) {
		case *expression.Func:
			for _, a := range x.Args {
				walkExpr(a)
			}
		case *expression.In:
			walkExpr(x.Expr)
			for _, a := range x.List {
				walkExpr(a)
			}
		case *expression.Subquery:
			out = append(out, x)
			for _, a := range x.Left {
				walkExpr(a)
			}
		}
	}
	var walk func(p planner.Plan)
	walk = func(p planner.Plan) {
		switch x := p.(type) {
		case *planner.Selection:
			walkExpr(x.Cond)
		case *planner.Projection:
			for _, e := range x.Exprs {
				walkExpr(e)
			}
		}
		for _, c := range p.Children() {
			walk(c)
		}
	}
	walk(p)
	return out
}
