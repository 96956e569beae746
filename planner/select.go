package planner

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// SourceSchema is the schema of a table source's rows: its columns, then
// the hidden handle.
func SourceSchema(db string, t *catalog.TableInfo, alias string) *expression.Schema {
	name := t.Name
	if alias != "" {
		name = alias
	}
	s := &expression.Schema{Cols: make([]expression.SchemaCol, 0, len(t.Columns)+1)}
	for _, c := range t.Columns {
		s.Cols = append(s.Cols, expression.SchemaCol{DB: db, Table: name, Name: c.Name, Tp: c.Type})
	}
	s.Cols = append(s.Cols, expression.SchemaCol{DB: db, Table: name, Name: "_tidb_rowid", Hidden: true,
		Tp: types.FieldType{Tp: mysql.TypeLonglong, Flen: 20, Flag: mysql.BinaryFlag}})
	return s
}

// BuildSelect plans a SELECT.
func BuildSelect(c *Context, sel *ast.SelectStmt) (*Query, error) {
	if sel.With != nil {
		var err error
		if c, err = c.withCTEs(sel.With); err != nil {
			return nil, err
		}
	}
	lock := sel.LockInfo != nil && sel.LockInfo.LockType != ast.SelectLockNone
	src, star, leaves, err := c.buildFromLeaves(sel, lock)
	if err != nil {
		return nil, err
	}

	fields, err := expandFields(sel.Fields.Fields, src.Schema(), star)
	if err != nil {
		return nil, err
	}

	// Aggregation.
	needAgg := sel.GroupBy != nil || hasAgg(fields) || (sel.Having != nil && hasAggExpr(sel.Having.Expr))
	var agg *aggBuilder
	post := src // what select-list expressions are built over
	if needAgg {
		agg = &aggBuilder{c: c, src: src}
		if sel.GroupBy != nil {
			for _, item := range sel.GroupBy.Items {
				if err := agg.addGroupBy(item.Expr, fields); err != nil {
					return nil, err
				}
			}
		}
	}

	build := func(n ast.ExprNode, clause string) (expression.Expr, error) {
		if agg != nil {
			return agg.build(n, clause)
		}
		return c.builder(post.Schema(), clause).Build(n)
	}

	var fgb *fullGroupBy
	if agg != nil && c.OnlyFullGroupBy {
		fgb = newFullGroupBy(sel, src.Schema(), leaves, agg.groupBy, agg.groupAST)
		for i, f := range fields {
			if err := fgb.check(f.expr, "SELECT list", i+1); err != nil {
				return nil, err
			}
		}
	}

	var exprs []expression.Expr
	var out []ResultField
	for _, f := range fields {
		e, err := build(f.expr, "field list")
		if err != nil {
			return nil, err
		}
		exprs = append(exprs, e)
		out = append(out, f.result(e))
	}

	var having expression.Expr
	if sel.Having != nil {
		hb := func(n ast.ExprNode) (expression.Expr, error) {
			if agg == nil {
				agg = &aggBuilder{c: c, src: src}
			}
			return agg.buildWithAliases(n, "having clause", fields, exprs)
		}
		if having, err = hb(sel.Having.Expr); err != nil {
			return nil, err
		}
	}

	// ORDER BY items: a select-list alias or position, or an expression
	// over the source, kept as a hidden trailing column.
	var sortItems []SortItem
	nVisible := len(exprs)
	if sel.OrderBy != nil {
		for i, item := range sel.OrderBy.Items {
			idx, err := resolveOrderItem(item.Expr, fields, nVisible)
			if err != nil {
				return nil, err
			}
			if idx < 0 && fgb != nil {
				if err := fgb.check(item.Expr, "ORDER BY clause", i+1); err != nil {
					return nil, err
				}
			}
			if idx < 0 {
				if sel.Distinct {
					return nil, errno.New(3065, "Expression of ORDER BY clause is not in SELECT list, references column which is not in SELECT list; this is incompatible with DISTINCT")
				}
				e, err := build(item.Expr, "order clause")
				if err != nil {
					return nil, err
				}
				exprs = append(exprs, e)
				idx = len(exprs) - 1
			}
			sortItems = append(sortItems, SortItem{Expr: &expression.Column{Idx: idx, Tp: exprs[idx].Type()}, Desc: item.Desc})
		}
	}

	var plan Plan = post
	if agg != nil {
		plan = agg.plan()
	}
	if having != nil {
		plan = &Selection{base: base{schema: plan.Schema()}, Child: plan, Cond: having}
	}
	projSchema := &expression.Schema{}
	for i, e := range exprs {
		name := ""
		if i < len(out) {
			name = out[i].Name
		}
		projSchema.Cols = append(projSchema.Cols, expression.SchemaCol{Name: name, Tp: e.Type()})
	}
	plan = &Projection{base: base{schema: projSchema}, Child: plan, Exprs: exprs}
	if sel.Distinct {
		plan = &Distinct{base: base{schema: projSchema}, Child: plan}
	}
	var orderedScan Plan
	if len(sortItems) > 0 && agg == nil && having == nil && !sel.Distinct {
		orderedScan, _ = sortByScan(post, exprs, sortItems)
	}
	if len(sortItems) > 0 && orderedScan == nil {
		plan = &Sort{base: base{schema: projSchema}, Child: plan, Items: sortItems}
	}
	if sel.Limit != nil {
		lim := &Limit{base: base{schema: projSchema}, Child: plan}
		eb := &expression.Builder{Clause: "limit clause"}
		if lim.Count, err = eb.Build(sel.Limit.Count); err != nil {
			return nil, err
		}
		if sel.Limit.Offset != nil {
			if lim.Offset, err = eb.Build(sel.Limit.Offset); err != nil {
				return nil, err
			}
		}
		plan = lim
		if ix, ok := orderedScan.(*IndexScan); ok && lim.Offset == nil {
			ix.Limit = lim.Count
		}
	}
	if len(exprs) > nVisible {
		plan = &Trim{base: base{schema: &expression.Schema{Cols: projSchema.Cols[:nVisible]}}, Child: plan, N: nVisible}
	}
	return &Query{Plan: plan, Fields: out}, nil
}

// field is one select-list item after * expansion.
type field struct {
	expr  ast.ExprNode
	alias string
	text  string
	col   *expression.SchemaCol // for plain column references
}

func (f *field) result(e expression.Expr) ResultField {
	r := ResultField{Name: f.text, Type: e.Type()}
	switch x := e.(type) {
	case *expression.Constant:
		r.Type = literalResultType(x)
	case *expression.Param:
		if x.Tp == nil {
			r.Param = x.Order + 1
		}
	}
	if notNull(e) || isCount(f.expr) {
		r.Type.Flag |= mysql.NotNullFlag
	}
	if f.col != nil {
		r.Name, r.OrgName, r.Table, r.DB = f.col.Name, f.col.Name, f.col.Table, f.col.DB
		r.OrgTable = f.col.Table
	}
	if f.alias != "" {
		r.Name = f.alias
	}
	return r
}

// expandFields expands the wildcards of a select list: * to the columns
// star lists, t.* to the visible columns of t.
func expandFields(fs []*ast.SelectField, schema *expression.Schema, star []int) ([]*field, error) {
	var out []*field
	for _, f := range fs {
		if f.WildCard != nil {
			tbl := f.WildCard.Table.O
			n := 0
			positions := star
			if tbl != "" {
				positions = nil
				for i, c := range schema.Cols {
					if !c.Hidden && strings.EqualFold(tbl, c.Table) && (f.WildCard.Schema.O == "" || strings.EqualFold(f.WildCard.Schema.O, c.DB)) {
						positions = append(positions, i)
					}
				}
			}
			if tbl == "" && len(schema.Cols) == 0 {
				return nil, errno.New(1096, "No tables used")
			}
			for _, i := range positions {
				c := schema.Cols[i]
				col := schema.Cols[i]
				out = append(out, &field{
					expr: &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(c.Table), Name: ast.NewCIStr(c.Name)}},
					text: c.Name, col: &col,
				})
				n++
			}
			if tbl != "" && n == 0 {
				return nil, errno.New(errno.ErBadTable, "Unknown table '%s'", tbl)
			}
			if n == 0 {
				return nil, errno.New(errno.ErNoTablesUsed, "No tables used") // SELECT * without FROM
			}
			continue
		}
		fd := &field{expr: f.Expr, alias: f.AsName.O, text: exprText(f)}
		if cn, ok := f.Expr.(*ast.ColumnNameExpr); ok {
			if i, err := schema.Find(cn.Name.Schema.O, cn.Name.Table.O, cn.Name.Name.O, "field list"); err == nil {
				col := schema.Cols[i]
				fd.col = &col
			}
		}
		out = append(out, fd)
	}
	return out, nil
}

// exprText is the select-list text MySQL names an unaliased column by.
func exprText(f *ast.SelectField) string {
	if t := strings.TrimSpace(f.Text()); t != "" {
		return t
	}
	if cn, ok := f.Expr.(*ast.ColumnNameExpr); ok {
		return cn.Name.Name.O
	}
	var sb strings.Builder
	if err := f.Expr.Restore(format.NewRestoreCtx(format.RestoreStringSingleQuotes|format.RestoreKeyWordUppercase, &sb)); err != nil {
		return "?"
	}
	return sb.String()
}

func resolveOrderItem(n ast.ExprNode, fields []*field, nVisible int) (int, error) {
	switch x := n.(type) {
	case *ast.PositionExpr:
		if x.N < 1 || x.N > nVisible {
			return -1, errno.New(errno.ErBadField, "Unknown column '%d' in 'order clause'", x.N)
		}
		return x.N - 1, nil
	case *ast.ColumnNameExpr:
		if x.Name.Table.O != "" {
			return -1, nil
		}
		for i, f := range fields {
			if f.alias != "" && strings.EqualFold(f.alias, x.Name.Name.O) {
				return i, nil
			}
		}
		for i, f := range fields {
			if f.alias == "" && f.col != nil && strings.EqualFold(f.col.Name, x.Name.Name.O) {
				return i, nil
			}
		}
	}
	return -1, nil
}

func hasAgg(fields []*field) bool {
	for _, f := range fields {
		if hasAggExpr(f.expr) {
			return true
		}
	}
	return false
}

type aggFinder struct{ found bool }

func (v *aggFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.AggregateFuncExpr:
		v.found = true
		return n, true
	case *ast.SubqueryExpr:
		return n, true
	}
	return n, false
}
func (v *aggFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func hasAggExpr(n ast.ExprNode) bool {
	if n == nil {
		return false
	}
	v := &aggFinder{}
	n.Accept(v)
	return v.found
}
