package planner

import (
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// This file plans subqueries used as values: scalar subqueries, EXISTS,
// IN and the quantified comparisons (ANY, SOME, ALL). Each becomes an
// expression.Subquery holding the subquery's plan. A column the subquery
// cannot resolve is looked up in the query around it (through the builder
// of the expression the subquery stands in); each such outer reference is
// compiled in the outer query as a parameter of the subquery and read
// inside through an expression.Corr of the subquery's frame. The executor
// runs an uncorrelated subquery once per statement and a correlated one
// once per outer row.

// scope is the outer query of a subquery being planned.
type scope struct {
	b      *expression.Builder // the builder of the expression the subquery stands in
	id     int                 // the subquery's frame
	params []expression.Expr   // outer expressions the subquery reads
}

func (sc *scope) resolve(cn *ast.ColumnName) (expression.Expr, bool, error) {
	e, err := sc.b.ResolveColumn(cn)
	if err != nil {
		if ee, ok := err.(*errno.Error); ok && ee.Code == errno.ErBadField {
			return nil, false, nil
		}
		return nil, false, err
	}
	sc.params = append(sc.params, e)
	return &expression.Corr{ID: sc.id, Slot: len(sc.params) - 1, Tp: e.Type(), Name: cn.Name.O}, true, nil
}

// nextID allocates a frame ID, unique within the statement.
func (c *Context) nextID() int {
	if c.ids == nil {
		c.ids = new(int)
	}
	id := *c.ids
	*c.ids++
	return id
}

// builder returns an expression builder over schema that can compile
// subqueries and, inside a subquery, references to the outer query.
func (c *Context) builder(schema *expression.Schema, clause string) *expression.Builder {
	b := &expression.Builder{Schema: schema, Clause: clause}
	c.hook(b)
	return b
}

func (c *Context) hook(b *expression.Builder) {
	b.Subquery = c.buildSubquery
	if c.outer != nil {
		b.Outer = c.outer.resolve
	}
}

func compareOpName(op opcode.Op) (string, bool) {
	switch op {
	case opcode.EQ:
		return "=", true
	case opcode.NE:
		return "!=", true
	case opcode.LT:
		return "<", true
	case opcode.LE:
		return "<=", true
	case opcode.GT:
		return ">", true
	case opcode.GE:
		return ">=", true
	}
	return "", false
}

// buildSubquery compiles a subquery expression n standing in an
// expression that b builds.
func (c *Context) buildSubquery(b *expression.Builder, n ast.ExprNode) (expression.Expr, error) {
	sq := &expression.Subquery{Kind: expression.SubScalar}
	var query ast.ExprNode
	var left ast.ExprNode
	var leftCols []expression.Expr // the columns of a row subquery on the left
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		query = x
		if x.Exists {
			sq.Kind = expression.SubExists
		}
	case *ast.ExistsSubqueryExpr:
		sq.Kind, sq.Not, query = expression.SubExists, x.Not, x.Sel
	case *ast.PatternInExpr:
		sq.Kind, sq.Not, query, left = expression.SubIn, x.Not, x.Sel, x.Expr
	case *ast.CompareSubqueryExpr:
		op, ok := compareOpName(x.Op)
		if !ok {
			return nil, errno.New(errno.ErNotSupportedYet, "operator %s with a subquery is not supported", x.Op)
		}
		sq.Kind, sq.Op, query, left = expression.SubAny, op, x.R, x.L
		if x.All {
			sq.Kind = expression.SubAll
		}
	case *ast.BinaryOperationExpr:
		// row op (subquery), from expression's row comparisons.
		op, ok := compareOpName(x.Op)
		if x.Op == opcode.NullEQ {
			op, ok = "<=>", true
		}
		if !ok {
			return nil, errno.New(errno.ErNotSupportedYet, "operator %s with a subquery is not supported", x.Op)
		}
		sq.Kind, sq.Op, query, left = expression.SubRow, op, x.R, x.L
		if ls, ok := stripParens(x.L).(*ast.SubqueryExpr); ok && !ls.Exists {
			// (SELECT a, b ...) op (SELECT x, y ...).
			var err error
			if leftCols, err = c.rowSubqueryColumns(b, ls); err != nil {
				return nil, err
			}
		}
	default:
		return nil, errno.New(errno.ErNotSupportedYet, "expression %T is not supported yet", n)
	}
	se, ok := stripParens(query).(*ast.SubqueryExpr)
	if !ok {
		return nil, errno.New(errno.ErNotSupportedYet, "this subquery form is not supported yet")
	}
	sc := &scope{b: b, id: c.nextID()}
	child := *c
	child.outer = sc
	q, err := BuildQuery(&child, se.Query)
	if err != nil {
		return nil, err
	}
	if sel, ok := se.Query.(*ast.SelectStmt); ok && sq.Kind == expression.SubScalar && len(sc.params) > 0 && !readsByFrame(q.Plan, sc.id) {
		// No key serves the outer row's values: rather than read the
		// inner side whole for each outer row, read it once.
		keyed, err := c.decorrelate(b, sel)
		if err != nil {
			return nil, err
		}
		if keyed != nil {
			return keyed, nil
		}
	}
	sq.ID, sq.Plan, sq.Cols, sq.Params = sc.id, q.Plan, len(q.Fields), sc.params
	if leftCols != nil {
		if len(leftCols) != sq.Cols {
			return nil, errno.New(1241, "Operand should contain %d column(s)", len(leftCols))
		}
		sq.Left = leftCols
		return sq, nil
	}
	switch sq.Kind {
	case expression.SubScalar:
		if sq.Cols != 1 {
			return nil, errno.New(1241, "Operand should contain 1 column(s)")
		}
		sq.Tp = q.Fields[0].Type
	case expression.SubIn, expression.SubAny, expression.SubAll, expression.SubRow:
		lefts := rowOperands(left)
		if len(lefts) != sq.Cols {
			return nil, errno.New(1241, "Operand should contain %d column(s)", len(lefts))
		}
		// A row compared with ANY or ALL is only = ANY (IN) or <> ALL
		// (NOT IN); MySQL refuses the others with 1241.
		if len(lefts) > 1 && (sq.Kind == expression.SubAny && sq.Op != "=" || sq.Kind == expression.SubAll && sq.Op != "!=") {
			return nil, errno.New(1241, "Operand should contain 1 column(s)")
		}
		sq.Hashable = sq.Kind == expression.SubIn && len(sq.Params) == 0
		for i, l := range lefts {
			if n := len(rowOperands(l)); n > 1 {
				// A row facing a column of the subquery.
				return nil, errno.New(1241, "Operand should contain %d column(s)", n)
			}
			e, err := b.Build(l)
			if err != nil {
				return nil, err
			}
			sq.Left = append(sq.Left, e)
			lc, rc := expression.KeyClass(e.Type()), expression.KeyClass(q.Fields[i].Type)
			if lc == "" || lc != rc {
				sq.Hashable = false
			}
		}
		if sq.Kind == expression.SubRow && len(sq.Params) == 0 && (sq.Op == "=" || sq.Op == "<=>") {
			return rowEquality(sq, q), nil
		}
	}
	return sq, nil
}

// rowEquality compiles (a, b) = (SELECT x, y ...), uncorrelated, as a =
// x' AND b = y', where x' and y' are the columns of the subquery's one row
// (rowSubqueryColumns): the same answer (row equality is the AND of its
// pairs, and <=> of its null-safe pairs), but each column is a constant of
// the statement, so that index ranges can use the equalities.
func rowEquality(sq *expression.Subquery, q *Query) expression.Expr {
	conds := make([]expression.Expr, len(sq.Left))
	for i, l := range sq.Left {
		col := &expression.Subquery{Kind: expression.SubScalar, ID: sq.ID, Plan: sq.Plan, Cols: sq.Cols,
			Tp: q.Fields[i].Type, Col: i}
		conds[i] = expression.NewCompare(sq.Op, l, col)
	}
	return expression.And(conds...)
}

// rowSubqueryColumns compiles a row subquery as one scalar subquery per
// column (Subquery.Col): each is its column of the one row, NULL if there
// is no row, error 1242 if there are more. The columns run the plan each;
// an uncorrelated one runs once per statement.
func (c *Context) rowSubqueryColumns(b *expression.Builder, se *ast.SubqueryExpr) ([]expression.Expr, error) {
	sc := &scope{b: b, id: c.nextID()}
	child := *c
	child.outer = sc
	q, err := BuildQuery(&child, se.Query)
	if err != nil {
		return nil, err
	}
	cols := make([]expression.Expr, len(q.Fields))
	for i, f := range q.Fields {
		cols[i] = &expression.Subquery{Kind: expression.SubScalar, ID: sc.id, Plan: q.Plan, Cols: len(q.Fields),
			Params: sc.params, Tp: f.Type, Col: i}
	}
	return cols, nil
}

func stripParens(n ast.ExprNode) ast.ExprNode {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			return n
		}
		n = p.Expr
	}
}

// rowOperands returns the values of a row constructor (under any
// parentheses), or n alone.
func rowOperands(n ast.ExprNode) []ast.ExprNode {
	n = stripParens(n)
	if r, ok := n.(*ast.RowExpr); ok {
		return r.Values
	}
	return []ast.ExprNode{n}
}
