package planner

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// This file decorrelates a scalar aggregate subquery whose only links to
// the outer query are equalities, as TiDB's decorrelation (an Apply turned
// into an outer join on a grouped aggregate) does:
//
//	(SELECT SUM(h_amount) FROM history
//	 WHERE h_c_w_id = 1 AND h_c_d_id = c.c_d_id AND h_c_id = c.c_id)
//
// is planned as the uncorrelated
//
//	SELECT h_c_d_id, h_c_id, SUM(h_amount) FROM history
//	WHERE h_c_w_id = 1 GROUP BY h_c_d_id, h_c_id
//
// run once per statement into a hash table, which each outer row probes
// with its (c.c_d_id, c.c_id): the group's aggregate, or the aggregate of
// no rows (COUNT 0, the others NULL) when there is none. Without this, a
// subquery whose inner side has no index on its links scans that side
// once per outer row (go-tpc's consistency check 3.3.2.10: 30,000
// customers times 30,000 history rows).
//
// It is done only where the correlated plan reads no key by the outer
// row's values (readsByFrame): a subquery that reads an index by them
// costs a lookup per outer row, which beats aggregating the whole inner
// side when the outer rows are few. Only the simplest shape is taken, so that the rewrite means the same
// thing: one aggregate (COUNT, SUM, AVG, MIN or MAX) over base tables,
// no GROUP BY, HAVING, ORDER BY, LIMIT or DISTINCT; every conjunct of
// WHERE either reads inner columns only or is inner = outer (columns of
// the outer queries only), the two sides hashing alike (KeyClass), so
// that the hash lookup finds exactly the rows = would pair.

// decorrelate returns the keyed subquery for query, or nil when the
// query does not have the shape above. b is the builder of the outer
// expression the subquery stands in.
func (c *Context) decorrelate(b *expression.Builder, query *ast.SelectStmt) (*expression.Subquery, error) {
	if query.With != nil || query.GroupBy != nil || query.Having != nil || query.OrderBy != nil ||
		query.Limit != nil || query.Distinct || query.LockInfo != nil || query.From == nil ||
		query.Where == nil || len(query.Fields.Fields) != 1 || len(query.WindowSpecs) > 0 {
		return nil, nil
	}
	agg, ok := query.Fields.Fields[0].Expr.(*ast.AggregateFuncExpr)
	if !ok || query.Fields.Fields[0].WildCard != nil {
		return nil, nil
	}
	fn := strings.ToLower(agg.F)
	switch fn {
	case ast.AggFuncCount, ast.AggFuncSum, ast.AggFuncAvg, ast.AggFuncMax, ast.AggFuncMin:
	default:
		return nil, nil
	}
	inner, ok := c.innerColumns(query.From.TableRefs)
	if !ok {
		return nil, nil
	}
	for _, a := range agg.Args {
		if k := links(a, inner); k != refInner && k != refNone {
			return nil, nil
		}
	}
	var rest []ast.ExprNode
	var innerKeys, outerKeys []ast.ExprNode
	for _, conj := range splitAnd(query.Where) {
		switch links(conj, inner) {
		case refInner:
			rest = append(rest, conj)
			continue
		case refNone:
			// A constant or subquery condition: keep the shape simple.
			return nil, nil
		}
		eq, ok := conj.(*ast.BinaryOperationExpr)
		if !ok || eq.Op != opcode.EQ {
			return nil, nil
		}
		l, r := links(eq.L, inner), links(eq.R, inner)
		switch {
		case l == refInner && r == refOuter:
			innerKeys, outerKeys = append(innerKeys, eq.L), append(outerKeys, eq.R)
		case l == refOuter && r == refInner:
			innerKeys, outerKeys = append(innerKeys, eq.R), append(outerKeys, eq.L)
		default:
			return nil, nil
		}
	}
	if len(innerKeys) == 0 {
		return nil, nil
	}

	grouped := &ast.SelectStmt{
		SelectStmtOpts: query.SelectStmtOpts,
		Kind:           ast.SelectStmtKindSelect,
		From:           query.From,
		Fields:         &ast.FieldList{},
		GroupBy:        &ast.GroupByClause{},
	}
	for _, k := range innerKeys {
		grouped.Fields.Fields = append(grouped.Fields.Fields, &ast.SelectField{Expr: k})
		grouped.GroupBy.Items = append(grouped.GroupBy.Items, &ast.ByItem{Expr: k})
	}
	grouped.Fields.Fields = append(grouped.Fields.Fields, &ast.SelectField{Expr: agg})
	if len(rest) > 0 {
		grouped.Where = joinAnd(rest)
	}
	// Planned as an uncorrelated query: an outer reference left in it
	// would be a bug of links, caught here.
	sc := &scope{b: b, id: c.nextID()}
	child := *c
	child.outer = sc
	child.OnlyFullGroupBy = false
	q, err := BuildQuery(&child, grouped)
	if err != nil || len(sc.params) > 0 {
		return nil, nil
	}
	sq := &expression.Subquery{Kind: expression.SubScalar, ID: sc.id, Plan: q.Plan, Cols: len(q.Fields),
		Tp: q.Fields[len(innerKeys)].Type, Keyed: true}
	for i, k := range outerKeys {
		e, err := b.Build(k)
		if err != nil {
			return nil, err
		}
		lc, rc := expression.KeyClass(e.Type()), expression.KeyClass(q.Fields[i].Type)
		if lc == "" || lc != rc {
			return nil, nil
		}
		sq.Left = append(sq.Left, e)
	}
	sq.Empty = types.Null
	if fn == ast.AggFuncCount {
		sq.Empty = types.NewInt(0)
	}
	return sq, nil
}

// innerTable is a table of a subquery's FROM clause: the names it is
// reached by and its columns.
type innerTable struct {
	name string
	cols map[string]bool
}

// innerColumns lists the tables of a FROM clause made of base tables and
// joins of them (no derived tables, views or CTEs: ok=false).
func (c *Context) innerColumns(n ast.ResultSetNode) ([]innerTable, bool) {
	switch x := n.(type) {
	case *ast.Join:
		l, ok := c.innerColumns(x.Left)
		if !ok {
			return nil, false
		}
		if x.Right == nil {
			return l, true
		}
		if x.Using != nil || x.NaturalJoin {
			return nil, false
		}
		r, ok := c.innerColumns(x.Right)
		return append(l, r...), ok
	case *ast.TableSource:
		tn, ok := x.Source.(*ast.TableName)
		if !ok || c.cte(tn) != nil || c.memTable(tn) != nil {
			return nil, false
		}
		_, t, err := c.TableRef(tn)
		if err != nil || t.View != nil {
			return nil, false
		}
		it := innerTable{name: tn.Name.L, cols: map[string]bool{}}
		if x.AsName.L != "" {
			it.name = x.AsName.L
		}
		for _, col := range t.Columns {
			if col.State == catalog.StatePublic {
				it.cols[strings.ToLower(col.Name)] = true
			}
		}
		return []innerTable{it}, true
	}
	return nil, false
}

// refKind says which columns an expression reads.
type refKind int

const (
	refNone  refKind = iota // no column
	refInner                // the subquery's own columns only
	refOuter                // outer columns only
	refMixed                // both, or something refs cannot judge
)

func (k refKind) add(o refKind) refKind {
	switch {
	case k == refNone:
		return o
	case o == refNone || o == k:
		return k
	}
	return refMixed
}

// links classifies the columns n reads against the subquery's tables.
// Subqueries, variables and aggregates nested in n make it refMixed.
func links(n ast.ExprNode, inner []innerTable) refKind {
	v := &linkVisitor{inner: inner}
	n.Accept(v)
	return v.kind
}

type linkVisitor struct {
	inner []innerTable
	kind  refKind
}

func (v *linkVisitor) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.AggregateFuncExpr, *ast.VariableExpr, *ast.WindowFuncExpr, *ast.DefaultExpr:
		v.kind = refMixed
		return n, true
	case *ast.ColumnNameExpr:
		v.kind = v.kind.add(v.column(x.Name))
		return n, true
	}
	return n, false
}

func (v *linkVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func (v *linkVisitor) column(cn *ast.ColumnName) refKind {
	if cn.Schema.L != "" {
		return refMixed
	}
	for _, t := range v.inner {
		if (cn.Table.L == "" || cn.Table.L == t.name) && t.cols[cn.Name.L] {
			return refInner
		}
	}
	if cn.Table.L != "" {
		for _, t := range v.inner {
			if cn.Table.L == t.name {
				// An inner table without the column: an error the
				// ordinary planning reports.
				return refMixed
			}
		}
	}
	return refOuter
}

func splitAnd(n ast.ExprNode) []ast.ExprNode {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		n = p.Expr
	}
	if b, ok := n.(*ast.BinaryOperationExpr); ok && b.Op == opcode.LogicAnd {
		return append(splitAnd(b.L), splitAnd(b.R)...)
	}
	return []ast.ExprNode{n}
}

func joinAnd(ns []ast.ExprNode) ast.ExprNode {
	out := ns[0]
	for _, n := range ns[1:] {
		out = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: out, R: n}
	}
	return out
}

// readsByFrame reports whether some table read of p (a point get, batch
// point get or range scan) takes its keys or ranges from frame id's
// values, the outer row of the subquery p plans.
func readsByFrame(p Plan, id int) bool {
	isFrame := func(e expression.Expr) bool {
		found := false
		walkExpr(e, func(x expression.Expr) {
			if c, ok := x.(*expression.Corr); ok && c.ID == id {
				found = true
			}
		})
		return found
	}
	ranges := func(rs []Range) bool {
		for _, r := range rs {
			if (r.Low != nil && isFrame(r.Low)) || (r.High != nil && isFrame(r.High)) {
				return true
			}
			for _, u := range r.And {
				for _, ur := range u {
					if (ur.Low != nil && isFrame(ur.Low)) || (ur.High != nil && isFrame(ur.High)) {
						return true
					}
				}
			}
		}
		return false
	}
	keyRanges := func(krs []KeyRange) bool {
		for _, kr := range krs {
			for _, pts := range kr.Eq {
				for _, v := range pts {
					if isFrame(v) {
						return true
					}
				}
			}
			if ranges(kr.Last) {
				return true
			}
		}
		return false
	}
	switch x := p.(type) {
	case *PointGet:
		if x.Handle != nil && isFrame(x.Handle) {
			return true
		}
		for _, k := range x.Key {
			if isFrame(k) {
				return true
			}
		}
	case *BatchPointGet:
		for _, h := range x.Handles {
			if isFrame(h) {
				return true
			}
		}
	case *TableScan:
		if ranges(x.Ranges) || keyRanges(x.KeyRanges) {
			return true
		}
	case *IndexScan:
		if keyRanges(x.Ranges) {
			return true
		}
	}
	for _, ch := range p.Children() {
		if readsByFrame(ch, id) {
			return true
		}
	}
	return false
}

// walkExpr calls fn on e and the expressions in it.
func walkExpr(e expression.Expr, fn func(expression.Expr)) {
	fn(e)
	switch x := e.(type) {
	case *expression.Func:
		for _, a := range x.Args {
			walkExpr(a, fn)
		}
	case *expression.In:
		walkExpr(x.Expr, fn)
		for _, a := range x.List {
			walkExpr(a, fn)
		}
	case *expression.Subquery:
		for _, a := range x.Params {
			walkExpr(a, fn)
		}
		for _, a := range x.Left {
			walkExpr(a, fn)
		}
	}
}
