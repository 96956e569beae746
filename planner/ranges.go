package planner

import "github.com/basalt-db/basalt/expression"

// This file turns conditions into ranges of a column's values, for the
// access paths (access_path.go) and the row estimates (estimate.go). A
// condition is split into conjuncts; a conjunct that constrains one column
// to constant values (=, IN, BETWEEN, <, <=, >, >=, and ORs of those on the
// same column) becomes a union of ranges of that column, whose bounds are
// expressions computed when the plan runs. Several such conjuncts on one
// column intersect.

func conjuncts(e expression.Expr) []expression.Expr {
	if f, ok := e.(*expression.Func); ok && f.Name == "and" && f.Lazy != nil && len(f.Args) == 2 {
		return append(conjuncts(f.Args[0]), conjuncts(f.Args[1])...)
	}
	return []expression.Expr{e}
}

// isConst reports an expression that reads no column.
func isConst(e expression.Expr) bool {
	switch x := e.(type) {
	case *expression.Column:
		return false
	case *expression.Constant, *expression.Param, *expression.Corr:
		return true
	case *expression.Subquery:
		// An uncorrelated scalar subquery is one value for the statement.
		return x.Kind == expression.SubScalar && len(x.Params) == 0 && !x.Keyed
	case *expression.Func:
		if x.Lazy != nil && x.Name != "and" && x.Name != "or" {
			return false
		}
		if x.Name == "collate" {
			// A COLLATE clause decides the comparison's collation,
			// which the index of the column may not have.
			return false
		}
		for _, a := range x.Args {
			if !isConst(a) {
				return false
			}
		}
		return len(x.Args) > 0 || x.Name == "-"
	}
	return false
}

// rangesOf returns the ranges e puts on a column (its index in the
// schema), or ok=false if e is not such a condition.
func rangesOf(e expression.Expr) (col int, rs []Range, points []expression.Expr, ok bool) {
	switch x := e.(type) {
	case *expression.In:
		c, isCol := x.Expr.(*expression.Column)
		if !isCol || x.Not {
			return 0, nil, nil, false
		}
		for _, v := range x.List {
			if !isConst(v) {
				return 0, nil, nil, false
			}
			rs = append(rs, Range{Low: v, High: v})
		}
		return c.Idx, rs, x.List, true
	case *expression.Func:
		if x.Name == "or" && x.Lazy != nil {
			return orRanges(x)
		}
		if x.Name == "and" && x.Lazy != nil {
			// BETWEEN: a >= lo AND a <= hi on one column.
			lc, lr, _, lok := rangesOf(x.Args[0])
			rc, rr, _, rok := rangesOf(x.Args[1])
			if lok && rok && lc == rc && len(lr) == 1 && len(rr) == 1 && lr[0].High == nil && rr[0].Low == nil {
				return lc, []Range{{Low: lr[0].Low, LowExcl: lr[0].LowExcl, High: rr[0].High, HighExcl: rr[0].HighExcl}}, nil, true
			}
			return 0, nil, nil, false
		}
		if len(x.Args) != 2 {
			return 0, nil, nil, false
		}
		op := x.Name
		c, isCol := x.Args[0].(*expression.Column)
		v := x.Args[1]
		if !isCol {
			c, isCol = x.Args[1].(*expression.Column)
			v = x.Args[0]
			op = flip(op)
		}
		if !isCol || !isConst(v) {
			return 0, nil, nil, false
		}
		switch op {
		case "=":
			return c.Idx, []Range{{Low: v, High: v}}, []expression.Expr{v}, true
		case "<":
			return c.Idx, []Range{{High: v, HighExcl: true}}, nil, true
		case "<=":
			return c.Idx, []Range{{High: v}}, nil, true
		case ">":
			return c.Idx, []Range{{Low: v, LowExcl: true}}, nil, true
		case ">=":
			return c.Idx, []Range{{Low: v}}, nil, true
		}
	}
	return 0, nil, nil, false
}

// orRanges is rangesOf for a tree of ORs: the union of its operands'
// ranges, in order, if every operand restricts the same column; and their
// points if every operand is made of points. The tree is walked with a
// stack and the results gathered once, so that a chain of n ORs — a
// statement may hold tens of thousands — costs O(n), not O(n^2).
func orRanges(or *expression.Func) (col int, rs []Range, points []expression.Expr, ok bool) {
	allPoints := true
	first := true
	stack := []expression.Expr{or}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f, isOr := e.(*expression.Func); isOr && f.Name == "or" && f.Lazy != nil {
			stack = append(stack, f.Args[1], f.Args[0]) // left first
			continue
		}
		c, r, p, ok := rangesOf(e)
		if !ok || (!first && c != col) {
			return 0, nil, nil, false
		}
		col, first = c, false
		rs = append(rs, r...)
		if p == nil {
			allPoints = false
		}
		if allPoints {
			points = append(points, p...)
		}
	}
	if !allPoints {
		points = nil
	}
	return col, rs, points, true
}

func flip(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}

// intersectPlan records several unions to intersect at run time. With one
// union it is that union; with more, the executor intersects the first
// with the rest (Range.And holds them).
func intersectPlan(unions [][]Range) []Range {
	if len(unions) == 1 {
		return unions[0]
	}
	first := append([]Range(nil), unions[0]...)
	for i := range first {
		first[i].And = unions[1:]
	}
	return first
}
