package planner

import "github.com/basalt-db/basalt/expression"

// This file lets a scan's key order serve ORDER BY, so that the query
// needs no Sort and an ORDER BY ... LIMIT reads only the rows it returns:
// an index or clustered primary key whose ranges fix its leading columns
// to one value each returns its rows ordered by the columns that follow
// (backwards for DESC); an integer handle's scan returns them by the
// handle. Ties may come in any order, as after a sort.

// keyOrder returns the columns (offsets) whose order scan p returns its
// rows in, and which of them its ranges fix to one value; nil if it
// promises no order.
func keyOrder(p Plan) (cols []int, fixed map[int]bool) {
	var krs []KeyRange
	switch x := p.(type) {
	case *TableScan:
		t := x.Table
		if hc := t.HandleColumn(); hc != nil {
			if hc.Type.Unsigned() {
				// Keys order handles as signed integers.
				return nil, nil
			}
			return []int{hc.Offset}, nil
		}
		if !t.CommonHandle {
			return nil, nil
		}
		cols, krs = keyColumns(t.PrimaryKey()), x.KeyRanges
	case *IndexScan:
		cols, krs = keyColumns(x.Index), x.Ranges
		if cols != nil && !x.Index.Unique {
			// Entries of equal values follow in handle order.
			if hc := x.Table.HandleColumn(); hc != nil && !hc.Type.Unsigned() {
				cols = append(cols, hc.Offset)
			} else if x.Table.CommonHandle {
				cols = append(cols, keyColumns(x.Table.PrimaryKey())...)
			}
		}
	default:
		return nil, nil
	}
	if cols == nil {
		return nil, nil
	}
	fixed = map[int]bool{}
	if len(krs) == 1 {
		for i, pts := range krs[0].Eq {
			if len(pts) == 1 {
				fixed[cols[i]] = true
			}
		}
	}
	return cols, fixed
}

// sortByScan reports whether the rows of src (a table's access path, or
// a Selection over it) already come in the order of items, whose
// expressions are positions of exprs, the projection over src; if so it
// sets the scan's direction and returns the scan.
func sortByScan(src Plan, exprs []expression.Expr, items []SortItem) (Plan, bool) {
	scan := src
	if s, ok := scan.(*Selection); ok {
		scan = s.Child
	}
	cols, fixed := keyOrder(scan)
	if cols == nil {
		return nil, false
	}
	desc, dirSet := false, false
	pos := 0
	for _, it := range items {
		c, ok := it.Expr.(*expression.Column)
		if !ok || c.Idx >= len(exprs) {
			return nil, false
		}
		col, ok := exprs[c.Idx].(*expression.Column)
		if !ok {
			return nil, false
		}
		if fixed[col.Idx] {
			continue
		}
		if dirSet && it.Desc != desc {
			return nil, false
		}
		desc, dirSet = it.Desc, true
		for pos < len(cols) && cols[pos] != col.Idx && fixed[cols[pos]] {
			pos++
		}
		if pos == len(cols) || cols[pos] != col.Idx {
			return nil, false
		}
		pos++
	}
	switch x := scan.(type) {
	case *TableScan:
		x.Desc = desc
	case *IndexScan:
		x.Desc = desc
	}
	return scan, true
}
