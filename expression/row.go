package expression

import (
	"github.com/basalt-db/basalt/errno"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// This file compiles row constructors, (a, b, ...), where MySQL accepts
// them: compared with =, <=>, <> (!=), <, <=, >, >= with another row of as
// many columns, and on the left of IN with a list of such rows. A row is
// never a value of its own: it compiles into the comparisons of its
// columns, as TiDB's expression rewriter does, so that the planner sees
// ordinary conditions on columns (a row IN list is an OR of ANDs of
// equalities, which it reads as points of a composite key).
//
// NULLs follow MySQL's Arg_comparator::compare_row:
//   - (a,b) = (x,y) is a=x AND b=y: false if some pair differs, else NULL
//     if some pair is NULL, else true; <> is its negation, a<>x OR b<>y.
//   - (a,b) < (x,y) is lexicographic: a<x OR (a=x AND b<y). The first
//     pair that is not equal decides; a NULL pair before it makes the
//     result NULL (in the OR-AND form the NULL equality carries to every
//     later term, so the result is NULL whatever follows).
//
// A row's columns may be rows themselves, ((a,b),c), as in MySQL.

// rowArity returns the number of columns of a row constructor, or 0 for
// anything else.
func rowArity(n ast.ExprNode) int {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		n = p.Expr
	}
	if r, ok := n.(*ast.RowExpr); ok {
		return len(r.Values)
	}
	return 0
}

func rowValues(n ast.ExprNode) []ast.ExprNode {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		n = p.Expr
	}
	if r, ok := n.(*ast.RowExpr); ok {
		return r.Values
	}
	return []ast.ExprNode{n}
}

// operandCols is MySQL's 1241 for an operand that should have n columns.
func operandCols(n int) error {
	return errno.New(errno.ErOperandColumns, "Operand should contain %d column(s)", n)
}

// checkArity fails as MySQL does when r does not have the columns of l
// (a scalar has one): the error names l's count.
func checkArity(l, r ast.ExprNode) error {
	ln, rn := max(rowArity(l), 1), max(rowArity(r), 1)
	if ln != rn {
		return operandCols(ln)
	}
	return nil
}

// rowCompare compiles l op r where either side may be a row. A subquery
// facing a row is a row subquery: Builder.Subquery compiles row op
// (subquery) as one expression (a Subquery of kind SubRow), which checks
// the subquery's column count and runs it once per evaluation.
func (b *Builder) rowCompare(op string, l, r ast.ExprNode) (Expr, error) {
	if rowArity(l) > 0 && isSubquery(r) || isSubquery(l) && rowArity(r) > 0 {
		if b.Subquery == nil {
			return nil, errno.New(errno.ErNotSupportedYet, "subqueries are not supported here")
		}
		if isSubquery(l) {
			l, r, op = r, l, flipCompare[op]
		}
		return b.Subquery(b, &ast.BinaryOperationExpr{Op: opOf[op], L: l, R: r})
	}
	if err := checkArity(l, r); err != nil {
		return nil, err
	}
	if rowArity(l) == 0 {
		return b.Build(&ast.BinaryOperationExpr{Op: opOf[op], L: l, R: r})
	}
	ls, rs := rowValues(l), rowValues(r)
	pair := func(i int, op string) (Expr, error) { return b.rowCompare(op, ls[i], rs[i]) }
	switch op {
	case "=", "<=>", "!=":
		var out Expr
		for i := range ls {
			e, err := pair(i, op)
			if err != nil {
				return nil, err
			}
			switch {
			case out == nil:
				out = e
			case op == "!=":
				out = newOr(out, e)
			default:
				out = newAnd(out, e)
			}
		}
		return out, nil
	}
	// Lexicographic, built from the last column back: the last pair
	// compares with op itself, each earlier pair with its strict form,
	// falling through to the rest when equal.
	strict := map[string]string{"<": "<", "<=": "<", ">": ">", ">=": ">"}[op]
	out, err := pair(len(ls)-1, op)
	if err != nil {
		return nil, err
	}
	for i := len(ls) - 2; i >= 0; i-- {
		lt, err := pair(i, strict)
		if err != nil {
			return nil, err
		}
		eq, err := pair(i, "=")
		if err != nil {
			return nil, err
		}
		out = newOr(lt, newAnd(eq, out))
	}
	return out, nil
}

// flipCompare is the operator of r op l for each l op r.
var flipCompare = map[string]string{"=": "=", "!=": "!=", "<=>": "<=>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

var opOf = map[string]opcode.Op{"=": opcode.EQ, "!=": opcode.NE, "<": opcode.LT, "<=": opcode.LE,
	">": opcode.GT, ">=": opcode.GE, "<=>": opcode.NullEQ}

func isSubquery(n ast.ExprNode) bool {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		n = p.Expr
	}
	_, ok := n.(*ast.SubqueryExpr)
	return ok
}

// rowIn compiles (a, b) [NOT] IN ((x, y), ...): the OR of the rows'
// equalities, which has IN's NULL rules (false if every row differs in
// some column, else NULL if a comparison was NULL).
func (b *Builder) rowIn(x *ast.PatternInExpr) (Expr, error) {
	var out Expr
	for _, v := range x.List {
		e, err := b.rowCompare("=", x.Expr, v)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = e
		} else {
			out = newOr(out, e)
		}
	}
	if x.Not {
		out = newNot(out)
	}
	return out, nil
}
