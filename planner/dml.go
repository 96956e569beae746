package planner

import (
	"sync/atomic"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Insert is a planned INSERT or REPLACE.
type Insert struct {
	DB      string
	Table   *catalog.TableInfo
	Columns []int // offsets of the listed columns, in list order
	Rows    [][]expression.Expr
	Select  *Query
	Replace bool
	Ignore  bool
	// OnDup holds ON DUPLICATE KEY UPDATE assignments, over the table's
	// row layout (the existing row, its handle) followed by the columns
	// of the row the INSERT tried to add (VALUES()).
	OnDup []Assignment
	// Exec is as Update.Exec (a prepared INSERT's or a text INSERT's
	// template's plan runs again).
	Exec atomic.Value
}

// valuesTable names, in ON DUPLICATE KEY UPDATE, the row the INSERT
// tried to add; no SQL name can spell it.
const valuesTable = "\x00values"

// valuesRewriter turns VALUES(col) into a reference to col of the row the
// INSERT tried to add.
type valuesRewriter struct{}

func (valuesRewriter) Enter(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.ValuesExpr); ok {
		return n, true
	}
	return n, false
}

func (valuesRewriter) Leave(n ast.Node) (ast.Node, bool) {
	if v, ok := n.(*ast.ValuesExpr); ok && v.Column != nil {
		name := *v.Column.Name
		name.Schema, name.Table = ast.NewCIStr(""), ast.NewCIStr(valuesTable)
		return &ast.ColumnNameExpr{Name: &name}, true
	}
	return n, true
}

// Assignment sets a column.
type Assignment struct {
	Col  int
	Expr expression.Expr
}

// Update is a planned single-table UPDATE: Source yields the rows to
// change in the table source layout.
type Update struct {
	DB     string
	Table  *catalog.TableInfo
	Source Plan
	Set    []Assignment
	// Ignore (UPDATE IGNORE) skips rows whose new values duplicate a key
	// and turns conversion errors into warnings.
	Ignore bool
	// Exec is where the executor keeps what it reuses across the
	// executions of a cached plan (its table writers), as
	// TableSource.Exec; opaque to the planner. Safe for concurrent use.
	Exec atomic.Value
}

// Delete is a planned single-table DELETE.
type Delete struct {
	DB     string
	Table  *catalog.TableInfo
	Source Plan
	// Ignore (DELETE IGNORE) turns errors of the WHERE clause's
	// conversions into warnings.
	Ignore bool
	// Exec is as Update.Exec.
	Exec atomic.Value
}

// BuildInsert plans an INSERT.
func BuildInsert(c *Context, s *ast.InsertStmt) (*Insert, error) {
	ts, ok := s.Table.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil, errno.New(errno.ErNotSupportedYet, "this INSERT target is not supported")
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return nil, errno.New(errno.ErNotSupportedYet, "this INSERT target is not supported")
	}
	db, t, err := c.TableRef(tn)
	if err != nil {
		return nil, err
	}
	if t.View != nil {
		return nil, errno.New(1471, "The target table %s of the INSERT is not insertable-into", t.Name)
	}
	p := &Insert{DB: db, Table: t, Replace: s.IsReplace, Ignore: s.IgnoreErr}
	{
		if len(s.Columns) == 0 {
			for _, col := range t.Columns {
				p.Columns = append(p.Columns, col.Offset)
			}
		}
		seen := map[int]bool{}
		for _, cn := range s.Columns {
			col := t.FindColumn(cn.Name.O)
			if col == nil {
				return nil, errno.New(errno.ErBadField, "Unknown column '%s' in 'field list'", cn.Name.O)
			}
			if seen[col.Offset] {
				return nil, errno.New(errno.ErFieldSpecifiedTwice, "Column '%s' specified twice", col.Name)
			}
			seen[col.Offset] = true
			p.Columns = append(p.Columns, col.Offset)
		}
		eb := c.builder(nil, "field list")
		// The rows' expressions are cut from one slice, and their
		// literals' constants come in blocks (a bulk INSERT has thousands).
		var consts expression.Constants
		consts.Expect(len(s.Lists) * len(p.Columns))
		exprs := make([]expression.Expr, len(s.Lists)*len(p.Columns))
		if len(s.Lists) > 0 {
			p.Rows = make([][]expression.Expr, 0, len(s.Lists))
		}
		for i, list := range s.Lists {
			if len(list) != len(p.Columns) && !(len(list) == 0 && len(s.Columns) == 0) {
				return nil, errno.New(errno.ErWrongValueCount, "Column count doesn't match value count at row %d", i+1)
			}
			var row []expression.Expr
			if len(list) <= len(exprs) {
				row, exprs = exprs[:len(list):len(list)], exprs[len(list):]
			} else {
				row = make([]expression.Expr, len(list))
			}
			for j, n := range list {
				if _, isDefault := n.(*ast.DefaultExpr); isDefault {
					row[j] = nil
					continue
				}
				if row[j], err = consts.Build(eb, n); err != nil {
					return nil, err
				}
			}
			p.Rows = append(p.Rows, row)
		}
		if s.Select != nil {
			q, err := BuildQuery(c, s.Select)
			if err != nil {
				return nil, err
			}
			if len(q.Fields) != len(p.Columns) {
				return nil, errno.New(errno.ErWrongValueCount, "Column count doesn't match value count at row 1")
			}
			p.Select = q
		}
	}
	if len(s.OnDuplicate) > 0 {
		// The assignments read the existing row (its columns, then its
		// handle) followed by the row the INSERT tried to add, which
		// VALUES(col) names.
		schema := SourceSchema(db, t, "")
		for _, c := range t.Columns {
			schema.Cols = append(schema.Cols, expression.SchemaCol{Table: valuesTable, Name: c.Name, Tp: c.Type, Hidden: true, Merged: true})
		}
		eb := &expression.Builder{Schema: schema, Clause: "field list"}
		for _, a := range s.OnDuplicate {
			col := t.FindColumn(a.Column.Name.O)
			if col == nil {
				return nil, errno.New(errno.ErBadField, "Unknown column '%s' in 'field list'", a.Column.Name.O)
			}
			rewritten, _ := a.Expr.Accept(valuesRewriter{})
			e, err := eb.Build(rewritten.(ast.ExprNode))
			if err != nil {
				return nil, err
			}
			p.OnDup = append(p.OnDup, Assignment{Col: col.Offset, Expr: e})
		}
	}
	return p, nil
}

// singleTable resolves the one table of an UPDATE or DELETE.
func singleTable(c *Context, refs *ast.TableRefsClause) (*TableSource, error) {
	if refs == nil || refs.TableRefs == nil || refs.TableRefs.Right != nil {
		return nil, errno.New(errno.ErNotSupportedYet, "multi-table UPDATE and DELETE are not supported yet")
	}
	ts, ok := refs.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return nil, errno.New(errno.ErNotSupportedYet, "this table reference is not supported")
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return nil, errno.New(errno.ErNotSupportedYet, "this table reference is not supported")
	}
	db, t, err := c.TableRef(tn)
	if err != nil {
		return nil, err
	}
	if t.View != nil {
		return nil, errno.New(1288, "The target table %s of the UPDATE or DELETE is not updatable", t.Name)
	}
	hints, err := tableIndexHints(t, "", tn.IndexHints, nil)
	if err != nil {
		return nil, err
	}
	return &TableSource{base: base{schema: SourceSchema(db, t, ts.AsName.O)}, DB: db, Table: t, Alias: ts.AsName.O, hints: hints}, nil
}

// sourceFor plans the rows an UPDATE or DELETE changes.
func sourceFor(c *Context, src *TableSource, where ast.ExprNode, order *ast.OrderByClause, limit *ast.Limit) (Plan, error) {
	var plan Plan = &TableScan{TableSource: *src}
	if where != nil {
		eb := c.builder(src.Schema(), "where clause")
		cond, err := eb.Build(where)
		if err != nil {
			return nil, err
		}
		// The rows are read for writing: lock what is read, including the
		// keys of point reads that find no row, so that a concurrent insert
		// of that key waits for this statement (as a gap lock would).
		path, rest := chooseAccessPath(c, src, cond, true)
		plan = path
		if rest != nil {
			plan = &Selection{base: base{schema: src.Schema()}, Child: path, Cond: rest}
		}
	}
	if order != nil {
		eb := c.builder(src.Schema(), "order clause")
		var items []SortItem
		for _, it := range order.Items {
			e, err := eb.Build(it.Expr)
			if err != nil {
				return nil, err
			}
			items = append(items, SortItem{Expr: e, Desc: it.Desc})
		}
		plan = &Sort{base: base{schema: src.Schema()}, Child: plan, Items: items}
	}
	if limit != nil {
		eb := &expression.Builder{Clause: "limit clause"}
		lim := &Limit{base: base{schema: src.Schema()}, Child: plan}
		var err error
		if lim.Count, err = eb.Build(limit.Count); err != nil {
			return nil, err
		}
		if limit.Offset != nil {
			if lim.Offset, err = eb.Build(limit.Offset); err != nil {
				return nil, err
			}
		}
		plan = lim
	}
	return plan, nil
}

// BuildUpdate plans a single-table UPDATE.
func BuildUpdate(c *Context, s *ast.UpdateStmt) (*Update, error) {
	src, err := singleTable(c, s.TableRefs)
	if err != nil {
		return nil, err
	}
	source, err := sourceFor(c, src, s.Where, s.Order, s.Limit)
	if err != nil {
		return nil, err
	}
	p := &Update{DB: src.DB, Table: src.Table, Source: source, Ignore: s.IgnoreErr}
	eb := c.builder(src.Schema(), "field list")
	for _, a := range s.List {
		col := src.Table.FindColumn(a.Column.Name.O)
		if col == nil {
			return nil, errno.New(errno.ErBadField, "Unknown column '%s' in 'field list'", a.Column.Name.O)
		}
		e, err := eb.Build(a.Expr)
		if err != nil {
			return nil, err
		}
		p.Set = append(p.Set, Assignment{Col: col.Offset, Expr: e})
	}
	return p, nil
}

// BuildDelete plans a single-table DELETE.
func BuildDelete(c *Context, s *ast.DeleteStmt) (*Delete, error) {
	if s.IsMultiTable {
		return nil, errno.New(errno.ErNotSupportedYet, "multi-table DELETE is not supported yet")
	}
	src, err := singleTable(c, s.TableRefs)
	if err != nil {
		return nil, err
	}
	source, err := sourceFor(c, src, s.Where, s.Order, s.Limit)
	if err != nil {
		return nil, err
	}
	return &Delete{DB: src.DB, Table: src.Table, Source: source, Ignore: s.IgnoreErr}, nil
}
