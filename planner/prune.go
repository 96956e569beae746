package planner

import (
	"sort"

	"github.com/basalt-db/basalt/expression"
)

// This file records, in each table source of a query's plan, which of
// the table's columns the plan reads (TableSource.Cols), so that the
// executor decodes only those: a point select of one column of a wide
// row decodes one column.
//
// The pass walks the plan from the root, whose every output column is
// read, carrying the set of its child's columns each operator reads:
// a projection or aggregation reads the columns of its expressions; a
// selection, sort or limit reads what its parent reads and the columns of
// its own expressions; a trim what its parent reads. Any other operator
// (joins, DISTINCT, set operations, recursive CTEs) reads all of its
// children's columns. A table source seen twice (a plan shared by two
// parents, or a query planned inside another) reads the union.

// colSet is a set of column positions; nil is every column.
type colSet map[int]struct{}

// allCols is the set of every column.
var allCols colSet

// addExprs adds to s the columns es read; it returns allCols if an
// expression may read any column.
func (s colSet) addExprs(es ...expression.Expr) colSet {
	if s == nil {
		return nil
	}
	for _, e := range es {
		if !expression.ColumnsUsed(e, func(i int) { s[i] = struct{}{} }) {
			return allCols
		}
	}
	return s
}

// pruneColumns records the columns plan p reads of its table sources.
// read is the set of p's output columns its consumer reads.
func pruneColumns(p Plan, read colSet) {
	switch x := p.(type) {
	case *PointGet:
		x.TableSource.readCols(read)
	case *BatchPointGet:
		x.TableSource.readCols(read)
	case *TableScan:
		x.TableSource.readCols(read)
	case *IndexScan:
		x.TableSource.readCols(read)
	case *Projection:
		pruneColumns(x.Child, colSet{}.addExprs(x.Exprs...))
	case *Aggregation:
		s := colSet{}.addExprs(x.GroupBy...)
		for _, a := range x.Aggs {
			s = s.addExprs(a.Args...)
			for _, o := range a.Order {
				s = s.addExprs(o.Expr)
			}
		}
		pruneColumns(x.Child, s)
	case *Selection:
		pruneColumns(x.Child, read.clone().addExprs(x.Cond))
	case *Sort:
		s := read.clone()
		for _, it := range x.Items {
			s = s.addExprs(it.Expr)
		}
		pruneColumns(x.Child, s)
	case *Limit:
		pruneColumns(x.Child, read.clone().addExprs(x.Offset, x.Count))
	case *Trim:
		pruneColumns(x.Child, read)
	default:
		for _, c := range p.Children() {
			pruneColumns(c, allCols)
		}
	}
}

func (s colSet) clone() colSet {
	if s == nil {
		return nil
	}
	out := make(colSet, len(s))
	for i := range s {
		out[i] = struct{}{}
	}
	return out
}

// readCols adds the table columns among the source's output columns read
// to Cols (the handle, which follows them, is always there).
func (t *TableSource) readCols(read colSet) {
	if t.colsAll || read == nil {
		t.Cols, t.colsAll = nil, true
		return
	}
	have := make(map[int]bool, len(t.Cols)+len(read))
	for _, c := range t.Cols {
		have[c] = true
	}
	for i := range read {
		if i < len(t.Table.Columns) {
			have[i] = true
		}
	}
	cols := make([]int, 0, len(have))
	for c := range have {
		cols = append(cols, c)
	}
	sort.Ints(cols)
	t.Cols = cols
}
