package planner

import (
	"math"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
)

// This file chooses how one table is read for the conjuncts on it (its
// access path). The conjuncts become ranges of columns (ranges.go); the
// first of these that applies is the path:
//
//  1. The integer primary key (the row handle): a point get for one value,
//     a batch point get for a list of values, else a range scan of the
//     table.
//  2. A unique index (no prefix columns), in the table's index order: a
//     point get when every column is fixed to one value; for a one-column
//     index fixed to a list of values, a batch point get.
//  3. The key whose ranges (key_ranges.go: points on leading columns,
//     then a range; or a union of those for an OR) select the fewest rows
//     (estimate.go; without statistics a unique index counts half; on a
//     tie, the ranges that fix more leading columns, then the clustered
//     primary key): a range scan of a clustered primary key that is not
//     an integer (CommonHandle) reads the rows themselves, an index is
//     read with a table lookup per entry, unless, with statistics, a read
//     that does not lock would look up so large a part of the table that
//     a full scan is cheaper.
//  4. A full table scan.
//
// Only public indexes are read, and only those the table's index hints
// allow (index_hints.go).

// chooseAccessPath returns the plan that reads src for cond (nil: no
// condition), and what is left of cond to check on the rows it returns
// (nil for nothing). Ranges of a signed integer primary key hold exactly
// the rows their conditions select (executor.intBounds), so those
// conditions are dropped; every other condition stays. lock: the rows are
// read for writing (SELECT ... FOR UPDATE, UPDATE, DELETE).
func chooseAccessPath(c *Context, src *TableSource, cond expression.Expr, lock bool) (Plan, expression.Expr) {
	if cond == nil {
		return withEst(&TableScan{TableSource: *src, Lock: lock}, tableRows(c, src.Table)), nil
	}
	p := accessPath(c, src, cond, lock)
	hc := src.Table.HandleColumn()
	exact := false
	switch x := p.(type) {
	case *PointGet:
		exact = x.Index == nil
	case *BatchPointGet:
		exact = x.Index == nil
	case *TableScan:
		exact = x.Ranges != nil
	}
	if !exact || hc == nil || hc.Type.Unsigned() {
		return p, cond
	}
	var rest []expression.Expr
	for _, conj := range conjuncts(cond) {
		if col, _, _, ok := rangesOf(conj); ok && col == hc.Offset {
			continue
		}
		rest = append(rest, conj)
	}
	return p, expression.And(rest...)
}

// accessPath picks the path for cond, in the order of the file comment.
func accessPath(c *Context, src *TableSource, cond expression.Expr, lock bool) Plan {
	byCol := columnRanges(cond)
	if p := handlePath(c, src, byCol, lock); p != nil {
		return p
	}
	if p := uniqueKeyPath(src, byCol, lock); p != nil {
		return p
	}
	return rangeOrFullScan(c, src, cond, lock)
}

// colRanges are the range unions the conjuncts put on one column.
type colRanges struct {
	unions [][]Range
	// points says some conjunct is a union of single values only.
	points []expression.Expr
}

// columnRanges collects the ranges the conjuncts of cond put on each
// column (by offset). Conjuncts that are not ranges are left out.
func columnRanges(cond expression.Expr) map[int]*colRanges {
	byCol := map[int]*colRanges{}
	for _, conj := range conjuncts(cond) {
		col, rs, pts, ok := rangesOf(conj)
		if !ok {
			continue
		}
		cr := byCol[col]
		if cr == nil {
			cr = &colRanges{}
			byCol[col] = cr
		}
		cr.unions = append(cr.unions, rs)
		if pts != nil && cr.points == nil {
			cr.points = pts
		}
	}
	return byCol
}

// handlePath reads by the integer primary key, if the conditions restrict
// it: a point get, a batch point get or a range scan. Else nil.
func handlePath(c *Context, src *TableSource, byCol map[int]*colRanges, lock bool) Plan {
	t := src.Table
	hc := t.HandleColumn()
	if hc == nil || !src.hints.allowsHandle(t) {
		return nil
	}
	cr := byCol[hc.Offset]
	if cr == nil {
		return nil
	}
	if cr.points != nil {
		if len(cr.points) == 1 {
			return &PointGet{TableSource: *src, Handle: cr.points[0], Lock: lock}
		}
		return &BatchPointGet{TableSource: *src, Handles: cr.points, Lock: lock}
	}
	return withEst(&TableScan{TableSource: *src, Ranges: intersectPlan(cr.unions), Lock: lock},
		rangeRows(c, t, hc, cr.unions))
}

// uniqueKeyPath reads by the first unique index the conditions fix: a
// point get when each of its columns equals one value, a batch point get
// when its one column is in a list. Else nil.
func uniqueKeyPath(src *TableSource, byCol map[int]*colRanges, lock bool) Plan {
	t := src.Table
	for _, ix := range t.Indexes {
		if ix.State != catalog.StatePublic || !ix.Unique || hasPrefixLen(ix) || !src.hints.allows(ix) {
			continue
		}
		var key []expression.Expr
		for _, ic := range ix.Columns {
			cr := byCol[ic.Offset]
			if cr == nil || cr.points == nil || len(cr.points) != 1 {
				key = nil
				break
			}
			key = append(key, cr.points[0])
		}
		if key != nil {
			return &PointGet{TableSource: *src, Index: ix, Key: key, Lock: lock}
		}
		if len(ix.Columns) == 1 && !(ix.Primary && t.CommonHandle) {
			if cr := byCol[ix.Columns[0].Offset]; cr != nil && cr.points != nil {
				return &BatchPointGet{TableSource: *src, Index: ix, Handles: cr.points, Lock: lock}
			}
		}
	}
	return nil
}

// rangeOrFullScan reads the key whose ranges select the fewest rows, or
// the whole table when no key applies or, with statistics, a read that
// does not lock would look up a large part of the table through an index.
func rangeOrFullScan(c *Context, src *TableSource, cond expression.Expr, lock bool) Plan {
	t := src.Table
	var best *catalog.IndexInfo
	var bestPath keyPath
	bestEst := math.Inf(1)
	for _, ix := range t.Indexes {
		if ix.State != catalog.StatePublic || !src.hints.allows(ix) {
			continue
		}
		cols := keyColumns(ix)
		if cols == nil {
			continue
		}
		path, ok := buildKeyPath(cols, cond)
		if !ok {
			continue
		}
		clustered := ix.Primary && t.CommonHandle
		est := keyPathRows(c, t, cols, path)
		if ix.Unique && !clustered && !hasStats(c, t) {
			est /= 2
		}
		if best == nil || est < bestEst*(1-1e-9) ||
			(est <= bestEst*(1+1e-9) && (path.better(bestPath) || (!bestPath.better(path) && clustered))) {
			best, bestPath, bestEst = ix, path, est
		}
	}
	rows := tableRows(c, t)
	bestEst = max(bestEst, 1)
	if best != nil && best.Primary && t.CommonHandle {
		return withEst(&TableScan{TableSource: *src, KeyRanges: bestPath.ranges, Lock: lock}, bestEst)
	}
	// With statistics, a read (not a locking one, which would lock every
	// row it scans) that would look up a large part of the table scans it
	// instead.
	forced := src.hints != nil && src.hints.force
	if best != nil && (forced || !(hasStats(c, t) && !lock && bestEst*lookupCostRate > rows)) {
		return withEst(&IndexScan{TableSource: *src, Index: best, Ranges: bestPath.ranges, Lock: lock}, bestEst)
	}
	return withEst(&TableScan{TableSource: *src, Lock: lock}, rows)
}

func hasStats(c *Context, t *catalog.TableInfo) bool {
	if c.Stats == nil {
		return false
	}
	st := c.Stats(t.ID)
	return st != nil && st.Columns != nil
}

func hasPrefixLen(ix *catalog.IndexInfo) bool {
	for _, c := range ix.Columns {
		if c.Length > 0 {
			return true
		}
	}
	return false
}
