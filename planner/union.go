package planner

import (
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// This file plans set operations: UNION, EXCEPT and INTERSECT, each
// [ALL] or DISTINCT, with ORDER BY and LIMIT over the result. INTERSECT
// binds tighter than UNION and EXCEPT, which apply left to right. A
// DISTINCT operation removes duplicates from everything on its left too.

// SetOp combines the rows of Left and Right, which have the same number
// of columns.
type SetOp struct {
	base
	Op          ast.SetOprType
	Left, Right Plan
}

func (p *SetOp) Children() []Plan { return []Plan{p.Left, p.Right} }

// SetOpName is the operation's SQL name, for EXPLAIN.
func SetOpName(op ast.SetOprType) string { return op.String() }

func buildSetOpr(c *Context, x *ast.SetOprStmt) (*Query, error) {
	if x.With != nil {
		var err error
		if c, err = c.withCTEs(x.With); err != nil {
			return nil, err
		}
	}
	list := *x.SelectList
	if x.OrderBy != nil || x.Limit != nil {
		if list.OrderBy != nil || list.Limit != nil {
			inner := list
			list = ast.SetOprSelectList{Selects: []ast.Node{&inner}}
		}
		list.OrderBy, list.Limit = x.OrderBy, x.Limit
	}
	return buildSetOprList(c, &list)
}

func buildSetOprList(c *Context, list *ast.SetOprSelectList) (*Query, error) {
	if list.With != nil {
		var err error
		if c, err = c.withCTEs(list.With); err != nil {
			return nil, err
		}
	}
	var queries []*Query
	var ops []*ast.SetOprType
	for _, n := range list.Selects {
		var q *Query
		var err error
		var op *ast.SetOprType
		switch s := n.(type) {
		case *ast.SelectStmt:
			op = s.AfterSetOperator
			q, err = BuildSelect(c, s)
		case *ast.SetOprSelectList:
			op = s.AfterSetOperator
			q, err = buildSetOprList(c, s)
		default:
			err = errno.New(errno.ErNotSupportedYet, "this set operation is not supported yet")
		}
		if err != nil {
			return nil, err
		}
		if len(queries) > 0 && len(q.Fields) != len(queries[0].Fields) {
			return nil, errno.New(1222, "The used SELECT statements have a different number of columns")
		}
		queries, ops = append(queries, q), append(ops, op)
	}
	if len(queries) == 0 {
		return nil, errno.New(errno.ErNotSupportedYet, "empty set operation")
	}
	fields := append([]ResultField(nil), queries[0].Fields...)
	for i := range fields {
		fields[i] = ResultField{Name: fields[i].Name, Type: fields[i].Type}
		for _, q := range queries[1:] {
			fields[i].Type = unifyFieldTypes(fields[i].Type, q.Fields[i].Type)
		}
	}
	schema := &expression.Schema{}
	for _, f := range fields {
		schema.Cols = append(schema.Cols, expression.SchemaCol{Name: f.Name, Tp: f.Type})
	}
	// INTERSECT first, then UNION and EXCEPT left to right.
	var terms []Plan
	var termOps []ast.SetOprType
	cur := queries[0].Plan
	for i := 1; i < len(queries); i++ {
		op := ast.Union
		if ops[i] != nil {
			op = *ops[i]
		}
		if op == ast.Intersect || op == ast.IntersectAll {
			cur = &SetOp{base: base{schema: schema}, Op: op, Left: cur, Right: queries[i].Plan}
			continue
		}
		terms, termOps = append(terms, cur), append(termOps, op)
		cur = queries[i].Plan
	}
	terms = append(terms, cur)
	plan := terms[0]
	for i, op := range termOps {
		plan = &SetOp{base: base{schema: schema}, Op: op, Left: plan, Right: terms[i+1]}
	}
	if len(queries) == 1 {
		plan = &Trim{base: base{schema: schema}, Child: plan, N: len(fields)}
	}
	if list.OrderBy != nil {
		var items []SortItem
		for _, it := range list.OrderBy.Items {
			var e expression.Expr
			if pe, ok := it.Expr.(*ast.PositionExpr); ok {
				if pe.N < 1 || pe.N > len(fields) {
					return nil, errno.New(errno.ErBadField, "Unknown column '%d' in 'order clause'", pe.N)
				}
				e = &expression.Column{Idx: pe.N - 1, Tp: fields[pe.N-1].Type, Name: fields[pe.N-1].Name}
			} else {
				var err error
				if e, err = c.builder(schema, "order clause").Build(it.Expr); err != nil {
					return nil, err
				}
			}
			items = append(items, SortItem{Expr: e, Desc: it.Desc})
		}
		plan = &Sort{base: base{schema: schema}, Child: plan, Items: items}
	}
	if list.Limit != nil {
		lim := &Limit{base: base{schema: schema}, Child: plan}
		eb := &expression.Builder{Clause: "limit clause"}
		var err error
		if lim.Count, err = eb.Build(list.Limit.Count); err != nil {
			return nil, err
		}
		if list.Limit.Offset != nil {
			if lim.Offset, err = eb.Build(list.Limit.Offset); err != nil {
				return nil, err
			}
		}
		plan = lim
	}
	return &Query{Plan: plan, Fields: fields}, nil
}

// unifyFieldTypes is the type of a column that holds values of a and b:
// a string if either is, else a double, a decimal, or an integer.
func unifyFieldTypes(a, b types.FieldType) types.FieldType {
	switch {
	case a.Tp == mysql.TypeNull:
		return b
	case b.Tp == mysql.TypeNull:
		return a
	case a.Tp == b.Tp:
		a.Flen, a.Decimal = max(a.Flen, b.Flen), max(a.Decimal, b.Decimal)
		if !b.Unsigned() {
			a.Flag &^= mysql.UnsignedFlag
		}
		a.Flag &^= mysql.NotNullFlag
		return a
	case a.IsString() || b.IsString():
		return types.FieldType{Tp: mysql.TypeVarString, Flen: max(a.Flen, b.Flen, 1), Charset: "utf8mb4"}
	case a.Tp == mysql.TypeDouble || b.Tp == mysql.TypeDouble || a.Tp == mysql.TypeFloat || b.Tp == mysql.TypeFloat:
		return types.FieldType{Tp: mysql.TypeDouble, Flen: 22, Decimal: 31, Flag: mysql.BinaryFlag}
	case a.Tp == mysql.TypeNewDecimal || b.Tp == mysql.TypeNewDecimal:
		return types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 65, Decimal: max(a.Decimal, b.Decimal), Flag: mysql.BinaryFlag}
	case a.IsInteger() && b.IsInteger():
		return types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.BinaryFlag}
	}
	return types.FieldType{Tp: mysql.TypeVarString, Flen: max(a.Flen, b.Flen, 1), Charset: "utf8mb4"}
}
