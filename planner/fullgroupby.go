package planner

// ONLY_FULL_GROUP_BY (in MySQL 8's default sql_mode): in an aggregated
// query, every column the select list and ORDER BY read outside an
// aggregate must be grouped, belong to a table whose primary key or unique
// NOT NULL key is all grouped (MySQL's functional dependency on keys), or
// sit inside an expression that is itself a GROUP BY item. Otherwise the
// query is refused: 1055 with GROUP BY, 1140 without.
//
// The check reads the statement's syntax tree. It is lenient where MySQL
// looks deeper: columns inside subqueries and window functions, names it
// cannot resolve in the FROM clause (outer references, aliases), and
// equalities under OR or in outer joins' ON do not make columns dependent.

import (
	"fmt"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// fullGroupBy holds what a query groups by, to check its expressions.
type fullGroupBy struct {
	schema  *expression.Schema
	grouped map[int]bool    // source columns grouped or dependent on grouped keys
	exprs   map[string]bool // GROUP BY items that are not plain columns, as text
	byGroup bool            // the query has GROUP BY
}

func newFullGroupBy(sel *ast.SelectStmt, schema *expression.Schema, leaves []*fromLeaf, groupBy []expression.Expr, groupAST []ast.ExprNode) *fullGroupBy {
	f := &fullGroupBy{schema: schema, grouped: map[int]bool{}, exprs: map[string]bool{}, byGroup: sel.GroupBy != nil}
	for _, g := range groupBy {
		if c, ok := g.(*expression.Column); ok {
			f.grouped[c.Idx] = true
		}
	}
	for _, n := range groupAST {
		if _, ok := n.(*ast.ColumnNameExpr); !ok {
			f.exprs[groupKeyText(n)] = true
		}
	}
	// Equalities of WHERE and of inner joins' ON make columns dependent:
	// a column equal to a constant, or to a grouped column, is grouped.
	var conds []ast.ExprNode
	if sel.Where != nil {
		conds = astConjuncts(sel.Where, conds)
	}
	if sel.From != nil {
		conds = innerJoinConds(sel.From.TableRefs, conds)
	}
	var eqs [][2]int // column pairs; -1 stands for a constant
	for _, c := range conds {
		op, ok := c.(*ast.BinaryOperationExpr)
		if !ok || op.Op != opcode.EQ {
			continue
		}
		l, r := f.operand(op.L), f.operand(op.R)
		if l != -2 && r != -2 && (l >= 0 || r >= 0) {
			eqs = append(eqs, [2]int{l, r})
		}
	}
	for changed := true; changed; {
		changed = false
		mark := func(i int) {
			if i >= 0 && !f.grouped[i] {
				f.grouped[i], changed = true, true
			}
		}
		for _, e := range eqs {
			if e[0] < 0 || f.grouped[e[0]] {
				mark(e[1])
			}
			if e[1] < 0 || f.grouped[e[1]] {
				mark(e[0])
			}
		}
		for _, l := range leaves {
			if l.ts == nil || l.off+len(l.ts.Table.Columns) > len(schema.Cols) || !f.keyGrouped(l.ts.Table, l.off) {
				continue
			}
			for i := l.off; i < l.off+l.n; i++ {
				mark(i)
			}
		}
	}
	return f
}

// operand reads one side of an equality: a source column's position, -1
// for a constant, -2 for anything else.
func (f *fullGroupBy) operand(n ast.ExprNode) int {
	switch x := n.(type) {
	case *ast.ColumnNameExpr:
		if idx, err := f.schema.Find(x.Name.Schema.O, x.Name.Table.O, x.Name.Name.O, "where clause"); err == nil {
			return idx
		}
	case ast.ValueExpr:
		return -1
	}
	return -2
}

func astConjuncts(n ast.ExprNode, out []ast.ExprNode) []ast.ExprNode {
	if op, ok := n.(*ast.BinaryOperationExpr); ok && op.Op == opcode.LogicAnd {
		return astConjuncts(op.R, astConjuncts(op.L, out))
	}
	if p, ok := n.(*ast.ParenthesesExpr); ok {
		return astConjuncts(p.Expr, out)
	}
	return append(out, n)
}

// innerJoinConds adds the ON conditions of the inner joins of a FROM
// clause (an outer join's ON does not hold for its NULL-extended rows).
func innerJoinConds(n ast.ResultSetNode, out []ast.ExprNode) []ast.ExprNode {
	j, ok := n.(*ast.Join)
	if !ok || j.Tp != ast.CrossJoin {
		return out
	}
	out = innerJoinConds(j.Left, out)
	if j.Right != nil {
		out = innerJoinConds(j.Right, out)
	}
	if j.On != nil {
		out = astConjuncts(j.On.Expr, out)
	}
	return out
}

// keyGrouped reports whether all the columns of t's primary key, or of one
// of its unique keys over NOT NULL columns, are grouped; t's columns start
// at off in the source.
func (f *fullGroupBy) keyGrouped(t *catalog.TableInfo, off int) bool {
	for _, ix := range t.Indexes {
		if !ix.Unique || ix.State != catalog.StatePublic {
			continue
		}
		all := true
		for _, ic := range ix.Columns {
			col := t.Columns[ic.Offset]
			if ic.Length > 0 || (!ix.Primary && !col.Type.NotNull()) || !f.grouped[off+ic.Offset] {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// check returns the error for the first column of n that is neither
// grouped nor aggregated; clause and pos name n in the message.
func (f *fullGroupBy) check(n ast.ExprNode, clause string, pos int) error {
	v := &groupByVisitor{f: f}
	n.Accept(v)
	if v.bad == "" {
		return nil
	}
	if !f.byGroup {
		return errno.New(errno.ErMixOfGroupFuncAndFields, "In aggregated query without GROUP BY, expression #%d of %s contains nonaggregated column '%s'; this is incompatible with sql_mode=only_full_group_by", pos, clause, v.bad)
	}
	return errno.New(errno.ErWrongFieldWithGroup, "Expression #%d of %s is not in GROUP BY clause and contains nonaggregated column '%s' which is not functionally dependent on columns in GROUP BY clause; this is incompatible with sql_mode=only_full_group_by", pos, clause, v.bad)
}

type groupByVisitor struct {
	f   *fullGroupBy
	bad string // the first offending column, as db.table.column
}

func (v *groupByVisitor) Enter(n ast.Node) (ast.Node, bool) {
	if v.bad != "" {
		return n, true
	}
	switch x := n.(type) {
	case *ast.AggregateFuncExpr, *ast.WindowFuncExpr, *ast.SubqueryExpr, *ast.ExistsSubqueryExpr:
		return n, true
	case *ast.ColumnNameExpr:
		idx, err := v.f.schema.Find(x.Name.Schema.O, x.Name.Table.O, x.Name.Name.O, "field list")
		if err == nil && !v.f.grouped[idx] {
			c := v.f.schema.Cols[idx]
			v.bad = strings.TrimPrefix(fmt.Sprintf("%s.%s.%s", c.DB, c.Table, c.Name), ".")
		}
		return n, true
	case ast.ExprNode:
		if len(v.f.exprs) > 0 && v.f.exprs[groupKeyText(x)] {
			return n, true
		}
	}
	return n, false
}

func (v *groupByVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// groupKeyText is an expression's text, to match select-list expressions with
// GROUP BY items.
func groupKeyText(n ast.ExprNode) string {
	var sb strings.Builder
	if err := n.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err != nil {
		return fmt.Sprintf("%p", n)
	}
	return sb.String()
}
