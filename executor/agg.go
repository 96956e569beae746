package executor

import (
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
)

// aggExec is a hash aggregation. Without GROUP BY it returns one row even
// for empty input (COUNT is 0, the others NULL).
type aggExec struct {
	child    Executor
	p        *planner.Aggregation
	rowsExec // the rows, computed at Open
	mem      memAcc
}

type aggState struct {
	count int64
	sum   *apd.Decimal
	// isum is a decimal SUM or AVG while every value so far has been an
	// integer and their sum fits in an int64, and sum is nil: most sums
	// are of INT columns, and an apd addition allocates. The first other
	// value moves it into sum.
	isum     int64
	fsum     float64
	isFloat  bool
	val      types.Datum // min, max, first_row
	has      bool
	distinct map[string]struct{}
	bits     uint64
	// items are GROUP_CONCAT's values with their ORDER BY keys, joined
	// once the group is complete.
	items []concatItem
}

type concatItem struct {
	text []byte
	keys []types.Datum
}

func (e *aggExec) Open(ctx *Ctx) error {
	if err := e.child.Open(ctx); err != nil {
		return err
	}
	e.rows, e.pos = nil, 0
	e.mem.release()
	e.mem.t = ctx.Mem
	type group struct {
		keys   []types.Datum
		states []*aggState
	}
	groups := map[string]*group{}
	var order []*group
	var kbuf []byte
	newGroup := func(keys []types.Datum) *group {
		g := &group{keys: keys, states: make([]*aggState, len(e.p.Aggs))}
		for i, a := range e.p.Aggs {
			g.states[i] = &aggState{}
			if a.Distinct {
				g.states[i].distinct = map[string]struct{}{}
			}
		}
		order = append(order, g)
		return g
	}
	gvals := make([]types.Datum, len(e.p.GroupBy))
	// A group holds its key twice (map key, datums), its states and, in
	// the end, its output row.
	nAggs := int64(len(e.p.Aggs))
	groupSize := mapEntrySize + 2*sliceHeader + nAggs*(8+int64(unsafe.Sizeof(aggState{}))) +
		rowMem(nil) + datumSize*(int64(len(e.p.GroupBy))+nAggs)
	for {
		row, err := e.child.Next(ctx)
		if err != nil {
			return err
		}
		if row == nil {
			break
		}
		for i, g := range e.p.GroupBy {
			if gvals[i], err = g.Eval(ctx.Eval, row); err != nil {
				return err
			}
		}
		kbuf = rowKey(kbuf[:0], gvals)
		g := groups[string(kbuf)]
		if g == nil {
			g = newGroup(cloneRow(gvals))
			groups[string(kbuf)] = g
			if err := e.mem.add(groupSize + 2*int64(len(kbuf))); err != nil {
				return err
			}
		}
		for i, a := range e.p.Aggs {
			if err := update(ctx, a, g.states[i], row, &e.mem); err != nil {
				return err
			}
		}
	}
	if err := e.mem.flush(); err != nil {
		return err
	}
	if len(order) == 0 && len(e.p.GroupBy) == 0 {
		newGroup(nil)
	}
	maxConcat := groupConcatMaxLen(ctx)
	for _, g := range order {
		out := make([]types.Datum, 0, len(g.keys)+len(e.p.Aggs))
		out = append(out, g.keys...)
		for i, a := range e.p.Aggs {
			r := result(a, g.states[i])
			if a.Name == "group_concat" {
				r = groupConcat(ctx, a, g.states[i], maxConcat)
			}
			out = append(out, r)
		}
		e.rows = append(e.rows, out)
	}
	return nil
}

// update adds row to an aggregate's state, counting the memory a DISTINCT
// set or GROUP_CONCAT grows by in mem.
func update(ctx *Ctx, a *planner.AggFunc, st *aggState, row []types.Datum, mem *memAcc) error {
	if a.Star {
		st.count++
		return nil
	}
	// Arguments are read while the row is, not kept (values kept are
	// cloned), so one or two fit on the stack.
	var argBuf [2]types.Datum
	args := argBuf[:0]
	if len(a.Args) > len(argBuf) {
		args = make([]types.Datum, 0, len(a.Args))
	}
	args = args[:len(a.Args)]
	for i, x := range a.Args {
		v, err := x.Eval(ctx.Eval, row)
		if err != nil {
			return err
		}
		if v.IsNull() && a.Name != "first_row" {
			return nil
		}
		args[i] = v
	}
	if st.distinct != nil {
		k := string(rowKey(nil, args))
		if _, ok := st.distinct[k]; ok {
			return nil
		}
		st.distinct[k] = struct{}{}
		if err := mem.add(int64(len(k)) + mapEntrySize); err != nil {
			return err
		}
	}
	v := args[0]
	switch a.Name {
	case "count":
		st.count++
	case "sum", "avg":
		st.count++
		if v.Kind() == types.KindFloat || v.Kind() == types.KindString || st.isFloat {
			if !st.isFloat {
				st.isFloat = true
				if st.sum != nil || st.isum != 0 {
					st.fsum, _ = st.decimalSum().Float64()
				}
			}
			f, _ := types.ToFloat(v)
			st.fsum += f
			return nil
		}
		if v.Kind() == types.KindInt && st.sum == nil {
			if s, ok := addInt64(st.isum, v.Int()); ok {
				st.isum = s
				return nil
			}
		}
		d, _ := types.ToDecimal(v)
		if st.sum == nil {
			st.sum = apd.New(st.isum, 0)
			st.isum = 0
		}
		if _, err := types.DecimalContext().Add(st.sum, st.sum, d); err != nil {
			return errno.New(1690, "DECIMAL value is out of range in 'sum'")
		}
	case "min":
		if !st.has || minMaxCompare(v, st.val) < 0 {
			st.val, st.has = v.Clone(), true
		}
	case "max":
		if !st.has || minMaxCompare(v, st.val) > 0 {
			st.val, st.has = v.Clone(), true
		}
	case "first_row":
		if !st.has {
			st.val, st.has = v.Clone(), true
		}
	case "group_concat":
		it := concatItem{}
		for _, x := range args {
			it.text = append(it.text, types.ToText(x)...)
		}
		if len(a.Order) > 0 {
			it.keys = make([]types.Datum, len(a.Order))
			for i, o := range a.Order {
				k, err := o.Expr.Eval(ctx.Eval, row)
				if err != nil {
					return err
				}
				it.keys[i] = k.Clone()
			}
		}
		st.items = append(st.items, it)
		st.has = true
		return mem.add(int64(len(it.text)) + int64(len(a.Separator)) + rowMem(it.keys))
	case "bit_and", "bit_or", "bit_xor":
		u, _, _, _ := types.ToUint(v)
		if v.Kind() == types.KindInt {
			u = uint64(v.Int())
		}
		switch {
		case !st.has && a.Name == "bit_and":
			st.bits = u
		case a.Name == "bit_and":
			st.bits &= u
		case a.Name == "bit_or":
			st.bits |= u
		default:
			st.bits ^= u
		}
		st.has = true
	}
	return nil
}

// addInt64 is a+b, and false if that overflows an int64.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

// decimalSum is a decimal SUM's value.
func (st *aggState) decimalSum() *apd.Decimal {
	if st.sum == nil {
		return apd.New(st.isum, 0)
	}
	return st.sum
}

func result(a *planner.AggFunc, st *aggState) types.Datum {
	switch a.Name {
	case "count":
		return types.NewInt(st.count)
	case "sum":
		if st.count == 0 {
			return types.Null
		}
		if st.isFloat {
			return types.NewFloat(st.fsum)
		}
		return types.NewDecimal(st.decimalSum())
	case "avg":
		if st.count == 0 {
			return types.Null
		}
		if st.isFloat {
			return types.NewFloat(st.fsum / float64(st.count))
		}
		r, sum := new(apd.Decimal), st.decimalSum()
		dc := types.DecimalContext()
		dc.Quo(r, sum, apd.New(st.count, 0))
		scale := int32(4)
		if sum.Exponent < 0 {
			scale -= sum.Exponent
		}
		dc.Quantize(r, r, -scale)
		return types.NewDecimal(r)
	case "min", "max", "first_row":
		if !st.has {
			return types.Null
		}
		return st.val
	case "group_concat":
		// Built by the aggregation, which knows group_concat_max_len.
		return types.Null
	case "bit_and":
		if !st.has {
			return types.NewUint(^uint64(0))
		}
		return types.NewUint(st.bits)
	case "bit_or", "bit_xor":
		return types.NewUint(st.bits)
	}
	return types.Null
}

func (e *aggExec) Close() error {
	e.mem.release()
	return e.child.Close()
}

// groupConcatMaxLen is the session's group_concat_max_len: the most bytes
// a GROUP_CONCAT result keeps.
func groupConcatMaxLen(ctx *Ctx) int64 {
	if ctx.Eval != nil && ctx.Eval.Session != nil {
		if v, err := ctx.Eval.Session.SysVar("group_concat_max_len", false); err == nil {
			if n, _, _ := types.ToInt(v); n > 0 {
				return n
			}
		}
	}
	return 1024
}

// cutUTF8 cuts b to at most n bytes, at a character boundary.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return b
}

// groupConcat joins a group's GROUP_CONCAT values, in ORDER BY order, and
// cuts the result to maxLen bytes with warning 1260, which numbers the
// value that did not fit.
func groupConcat(ctx *Ctx, a *planner.AggFunc, st *aggState, maxLen int64) types.Datum {
	if !st.has {
		return types.Null
	}
	if len(a.Order) > 0 {
		slices.SortStableFunc(st.items, func(x, y concatItem) int {
			for i, o := range a.Order {
				if c := types.Compare(x.keys[i], y.keys[i]); c != 0 {
					if o.Desc {
						return -c
					}
					return c
				}
			}
			return 0
		})
	}
	var b []byte
	for i, it := range st.items {
		if i > 0 {
			b = append(b, a.Separator...)
		}
		b = append(b, it.text...)
		if int64(len(b)) > maxLen {
			ctx.Eval.Warn(errno.New(1260, "Row %d was cut by GROUP_CONCAT()", i+1))
			return types.NewBytes(cutUTF8(b, int(maxLen)))
		}
	}
	return types.NewBytes(b)
}

// minMaxCompare orders MIN and MAX arguments: as comparisons do, except
// that ENUM and SET values compare by their text (where ORDER BY sorts
// them by number), as in MySQL.
func minMaxCompare(a, b types.Datum) int {
	if a.IsEnumOrSet() && b.IsEnumOrSet() {
		return types.CompareStrings(a.Bytes(), b.Bytes(), max(a.Collation(), b.Collation()))
	}
	return types.Compare(a, b)
}
