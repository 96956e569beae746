package expression

// ColumnsUsed calls fn with the index of each column of the row that e
// reads (a column read twice is reported twice). It returns false if e
// holds an expression it does not know, which may read any column.
func ColumnsUsed(e Expr, fn func(idx int)) bool {
	switch x := e.(type) {
	case nil:
		return true
	case *Column:
		fn(x.Idx)
		return true
	case *Constant, *Param, *Corr:
		return true
	case *Func:
		return columnsUsed(x.Args, fn) && columnsUsed(x.reads, fn)
	case *In:
		return ColumnsUsed(x.Expr, fn) && columnsUsed(x.List, fn)
	case *Subquery:
		// The nested plan reads the row through Params only.
		return columnsUsed(x.Params, fn) && columnsUsed(x.Left, fn)
	}
	return false
}

func columnsUsed(es []Expr, fn func(idx int)) bool {
	for _, e := range es {
		if !ColumnsUsed(e, fn) {
			return false
		}
	}
	return true
}

// HasSubquery reports whether evaluating e may run a nested plan (a
// subquery): an expression it does not know counts as one.
func HasSubquery(e Expr) bool {
	switch x := e.(type) {
	case nil, *Column, *Constant, *Param, *Corr:
		return false
	case *Func:
		return anySubquery(x.Args) || anySubquery(x.reads)
	case *In:
		return HasSubquery(x.Expr) || anySubquery(x.List)
	}
	return true
}

func anySubquery(es []Expr) bool {
	for _, e := range es {
		if HasSubquery(e) {
			return true
		}
	}
	return false
}
