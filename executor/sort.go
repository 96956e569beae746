package executor

import (
	"slices"

	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// sortExec reads all its child's rows at Open and returns them in ORDER
// BY order, counting the memory they hold against the statement's quota.
type sortExec struct {
	child    Executor
	items    []planner.SortItem
	rowsExec // the rows, computed at Open
	mem      memAcc
}

// sortRowOverhead is what sorting adds to each buffered row: its index
// and its place in the sorted slice.
const sortRowOverhead = 8 + 24

func (e *sortExec) Open(ctx *Ctx) error {
	if err := e.child.Open(ctx); err != nil {
		return err
	}
	e.rows, e.pos = nil, 0
	e.mem.release()
	e.mem.t = ctx.Mem
	// Sort keys that are columns of the row are compared in place; others
	// are evaluated once per row.
	cols := make([]int, len(e.items))
	computed := false
	for i, it := range e.items {
		if c, ok := it.Expr.(*expression.Column); ok {
			cols[i] = c.Idx
		} else {
			cols[i], computed = -1, true
		}
	}
	var keys [][]types.Datum
	// Rows own their values (scans copy out of the store's buffers), so a
	// shallow copy keeps them past the child's next row. The copies are
	// cut from slabs, not allocated one by one.
	var slab []types.Datum
	for {
		row, err := e.child.Next(ctx)
		if err != nil {
			return err
		}
		if row == nil {
			break
		}
		if cap(slab)-len(slab) < len(row) {
			slab = make([]types.Datum, 0, max(sortSlabRows*len(row), 1))
		}
		n := len(slab)
		slab = append(slab, row...)
		r := slab[n:len(slab):len(slab)]
		e.rows = append(e.rows, r)
		size := rowMem(r) + sortRowOverhead
		if computed {
			k := make([]types.Datum, len(e.items))
			for i, it := range e.items {
				if cols[i] < 0 {
					if k[i], err = it.Expr.Eval(ctx.Eval, r); err != nil {
						return err
					}
				}
			}
			keys = append(keys, k)
			size += rowMem(k)
		}
		if err := e.mem.add(size); err != nil {
			return err
		}
	}
	if err := e.mem.flush(); err != nil {
		return err
	}
	key := func(row, i int) *types.Datum {
		if cols[i] >= 0 {
			return &e.rows[row][cols[i]]
		}
		return &keys[row][i]
	}
	// When the first key is a string of one collation in every row, its
	// abbreviated key (types.SortKeyPrefix) settles most comparisons.
	var prefix []uint64
	desc0 := false
	if len(e.items) > 0 {
		prefix = firstKeyPrefixes(len(e.rows), func(row int) *types.Datum { return key(row, 0) })
		desc0 = e.items[0].Desc
	}
	idx := make([]int, len(e.rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if prefix != nil {
			if pa, pb := prefix[a], prefix[b]; pa != pb {
				if (pa < pb) != desc0 {
					return -1
				}
				return 1
			}
		}
		for i, it := range e.items {
			if c := types.Compare(*key(a, i), *key(b, i)); c != 0 {
				if it.Desc {
					return -c
				}
				return c
			}
		}
		return 0
	})
	sorted := make([][]types.Datum, len(idx))
	for i, j := range idx {
		sorted[i] = e.rows[j]
	}
	e.rows = sorted
	// Sorting itself does not stop for KILL QUERY; a cancelled statement
	// stops here rather than return rows.
	return ctx.Context.Err()
}

// sortSlabRows is how many rows' values one slab of a sort holds.
const sortSlabRows = 64

// firstKeyPrefixes returns the abbreviated keys of the first sort key of
// n rows, or nil when they are not all strings of one collation (the
// order of NULLs, numbers and mixed collations is Compare's alone).
func firstKeyPrefixes(n int, key func(row int) *types.Datum) []uint64 {
	if n < 2 {
		return nil
	}
	c := key(0).Collation()
	for row := range n {
		if d := key(row); d.Kind() != types.KindString || d.Collation() != c {
			return nil
		}
	}
	switch c {
	case types.CollationGeneralCI, types.CollationBin, types.CollationNoPadBin, types.CollationBinary:
	default:
		return nil
	}
	p := make([]uint64, n)
	for row := range p {
		p[row] = types.SortKeyPrefix(key(row).Bytes(), c)
	}
	return p
}

func (e *sortExec) Close() error {
	e.mem.release()
	return e.child.Close()
}

func cloneRow(row []types.Datum) []types.Datum {
	out := make([]types.Datum, len(row))
	for i, d := range row {
		out[i] = d.Clone()
	}
	return out
}
