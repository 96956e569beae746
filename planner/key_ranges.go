package planner

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
)

// This file builds the ranges of a composite key (an index, or a clustered
// primary key) from a whole condition, as TiDB's ranger does: equalities
// and IN lists on a prefix of the key's columns, then a range (or union of
// ranges) on the next column; and, for an OR whose every branch is such a
// condition (a row-constructor IN list is one: an OR of ANDs of
// equalities), the union of the branches' ranges.
//
// Conditions are not dropped for the ranges: the rows a scan returns are
// still checked against the whole condition (a Selection above it), so a
// range may hold more than the condition selects, never less.

// KeyRange is a set of keys of an index: its first len(Eq) columns each
// take one of the values listed for them (the cross product), and the
// next column lies in the union Last (intersected with Last[0].And), or
// anywhere when Last is nil. The values are computed when the plan runs.
type KeyRange struct {
	Eq   [][]expression.Expr
	Last []Range
}

// columns reports how many of the key's columns the range constrains.
func (kr *KeyRange) columns() int {
	if kr.Last != nil {
		return len(kr.Eq) + 1
	}
	return len(kr.Eq)
}

// keyPath is a candidate set of ranges of one key.
type keyPath struct {
	ranges []KeyRange
	// eqCols is the fewest leading columns any range fixes to points,
	// ranged whether some range bounds the next column too: how
	// selective the ranges are, where estimates cannot tell.
	eqCols int
	ranged bool
}

func (p keyPath) better(q keyPath) bool {
	if p.eqCols != q.eqCols {
		return p.eqCols > q.eqCols
	}
	return p.ranged && !q.ranged
}

// buildKeyPath returns the ranges that cond's conjuncts put on the key
// whose columns are cols (offsets in the table), or ok=false when they
// constrain not even its first column. The conjunctive ranges compete
// with each OR conjunct's union (the other conjuncts added to each of its
// branches); the one that fixes the most leading columns wins.
func buildKeyPath(cols []int, cond expression.Expr) (keyPath, bool) {
	conjs := conjuncts(cond)
	best, ok := cnfKeyPath(cols, columnRanges(cond))
	for i, conj := range conjs {
		branches := disjuncts(conj)
		if len(branches) < 2 {
			continue
		}
		if _, _, _, single := rangesOf(conj); single {
			// An OR on one column is one of the conjunctive ranges.
			continue
		}
		others := append(append([]expression.Expr(nil), conjs[:i]...), conjs[i+1:]...)
		var union keyPath
		for j, br := range branches {
			bp, bok := cnfKeyPath(cols, columnRanges(expression.And(append(append([]expression.Expr(nil), others...), br)...)))
			if !bok {
				union.ranges = nil
				break
			}
			union.ranges = append(union.ranges, bp.ranges...)
			if j == 0 || bp.eqCols < union.eqCols {
				union.eqCols = bp.eqCols
			}
			if j == 0 {
				union.ranged = bp.ranged
			}
			union.ranged = union.ranged && bp.ranged
		}
		if union.ranges != nil && (!ok || union.better(best)) {
			best, ok = union, true
		}
	}
	return best, ok
}

// cnfKeyPath is the range of the key that the per-column ranges byCol
// make: points on each leading column that has them, then the ranges of
// the next column.
func cnfKeyPath(cols []int, byCol map[int]*colRanges) (keyPath, bool) {
	var kr KeyRange
	for _, off := range cols {
		cr := byCol[off]
		if cr == nil {
			break
		}
		if cr.points != nil {
			kr.Eq = append(kr.Eq, cr.points)
			continue
		}
		kr.Last = intersectPlan(cr.unions)
		break
	}
	if kr.columns() == 0 {
		return keyPath{}, false
	}
	return keyPath{ranges: []KeyRange{kr}, eqCols: len(kr.Eq), ranged: kr.Last != nil}, true
}

// disjuncts flattens a tree of ORs.
func disjuncts(e expression.Expr) []expression.Expr {
	var out []expression.Expr
	stack := []expression.Expr{e}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f, ok := x.(*expression.Func); ok && f.Name == "or" && f.Lazy != nil && len(f.Args) == 2 {
			stack = append(stack, f.Args[1], f.Args[0])
			continue
		}
		out = append(out, x)
	}
	return out
}

// keyColumns returns the offsets of an index's columns, or nil if the
// index cannot be ranged over (a column with a prefix length).
func keyColumns(ix *catalog.IndexInfo) []int {
	cols := make([]int, len(ix.Columns))
	for i, c := range ix.Columns {
		if c.Length > 0 {
			return nil
		}
		cols[i] = c.Offset
	}
	return cols
}

// keyPathRows estimates the rows the ranges of a key select: for each
// range, the table's rows times the selectivity of each column's values,
// taken as independent.
func keyPathRows(c *Context, t *catalog.TableInfo, cols []int, p keyPath) float64 {
	rows := tableRows(c, t)
	total := 0.0
	for _, kr := range p.ranges {
		est := rows
		for i, pts := range kr.Eq {
			rs := make([]Range, len(pts))
			for j, v := range pts {
				rs[j] = Range{Low: v, High: v}
			}
			est *= rangeRows(c, t, t.Columns[cols[i]], [][]Range{rs}) / rows
		}
		if kr.Last != nil {
			unions := [][]Range{kr.Last}
			if len(kr.Last) > 0 && kr.Last[0].And != nil {
				unions = append([][]Range{stripAnd(kr.Last)}, kr.Last[0].And...)
			}
			est *= rangeRows(c, t, t.Columns[cols[len(kr.Eq)]], unions) / rows
		}
		total += est
	}
	return min(total, rows)
}

func stripAnd(rs []Range) []Range {
	out := append([]Range(nil), rs...)
	for i := range out {
		out[i].And = nil
	}
	return out
}
