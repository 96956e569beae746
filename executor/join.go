package executor

import (
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// joinExec runs a planner.Join. Its rows have the join layout of the FROM
// clause (see planner/join.go): it places each outer row, then each of its
// inner matches, into one row buffer, which it returns. For a left outer
// join, an outer row with no match that passes Other is returned once with
// the inner positions NULL.
//
// A hash or nested loop join reads its inner side once, at Open; an index
// join runs its inner plan once per outer row, with the plan's frame bound
// to the outer keys' values.
type joinExec struct {
	p            *planner.Join
	outer, inner Executor

	out     []types.Datum
	scratch []types.Datum
	rows    [][]types.Datum  // the inner rows (hash and nested loop joins)
	table   map[string][]int // hash join: key → inner rows
	kbuf    []byte
	keys    []types.Datum
	mem     memAcc // the inner rows and the hash table

	// the current outer row's candidates
	active  bool
	cands   [][]types.Datum
	idx     []int // hash join: indexes into rows
	pos     int
	matched bool
}

func newJoinExec(p *planner.Join, outer, inner Executor) *joinExec {
	w := len(p.Schema().Cols)
	return &joinExec{p: p, outer: outer, inner: inner, out: make([]types.Datum, w), scratch: make([]types.Datum, w)}
}

// place copies a child's row into dst at the child's positions.
func place(side *planner.JoinSide, row, dst []types.Datum) {
	if side.Global {
		for _, p := range side.Pos {
			dst[p] = row[p]
		}
		return
	}
	for i, p := range side.Pos {
		dst[p] = row[i]
	}
}

// evalKeys evaluates keys over row into e.keys; ok is false if one is NULL
// (an equality with NULL matches nothing).
func (e *joinExec) evalKeys(ctx *Ctx, keys []expression.Expr, row []types.Datum) (bool, error) {
	e.keys = e.keys[:0]
	for _, k := range keys {
		v, err := k.Eval(ctx.Eval, row)
		if err != nil {
			return false, err
		}
		if v.IsNull() {
			return false, nil
		}
		e.keys = append(e.keys, v)
	}
	return true, nil
}

func (e *joinExec) Open(ctx *Ctx) error {
	e.active, e.rows, e.table = false, nil, nil
	e.mem.release()
	e.mem.t = ctx.Mem
	for i := range e.out {
		e.out[i] = types.Null
	}
	if err := e.outer.Open(ctx); err != nil {
		return err
	}
	if e.p.Method == planner.IndexJoin {
		return nil
	}
	if err := e.inner.Open(ctx); err != nil {
		return err
	}
	defer e.inner.Close()
	if e.p.Method == planner.HashJoin {
		e.table = map[string][]int{}
	}
	for {
		row, err := e.inner.Next(ctx)
		if err != nil {
			return err
		}
		if row == nil {
			return e.mem.flush()
		}
		size := rowMem(row)
		if e.table != nil {
			place(&e.p.Inner, row, e.scratch)
			ok, err := e.evalKeys(ctx, e.p.InnerKeys, e.scratch)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			e.kbuf = rowKey(e.kbuf[:0], e.keys)
			e.table[string(e.kbuf)] = append(e.table[string(e.kbuf)], len(e.rows))
			size += int64(len(e.kbuf)) + mapEntrySize + 8
		}
		e.rows = append(e.rows, append([]types.Datum(nil), row...))
		if err := e.mem.add(size); err != nil {
			return err
		}
	}
}

// candidates finds the inner rows to pair with the outer row in e.out.
func (e *joinExec) candidates(ctx *Ctx) error {
	e.cands, e.idx, e.pos, e.matched = nil, nil, 0, false
	switch e.p.Method {
	case planner.NestedLoopJoin:
		e.cands = e.rows
	case planner.HashJoin:
		ok, err := e.evalKeys(ctx, e.p.OuterKeys, e.out)
		if err != nil || !ok {
			return err
		}
		e.kbuf = rowKey(e.kbuf[:0], e.keys)
		e.idx = e.table[string(e.kbuf)]
	case planner.IndexJoin:
		ok, err := e.evalKeys(ctx, e.p.OuterKeys, e.out)
		if err != nil || !ok {
			return err
		}
		frame := append([]types.Datum(nil), e.keys...)
		old := ctx.Eval.BindFrame(e.p.Frame, frame)
		defer ctx.Eval.RestoreFrame(e.p.Frame, old)
		if err := e.inner.Open(ctx); err != nil {
			e.inner.Close()
			return err
		}
		defer e.inner.Close()
		for {
			row, err := e.inner.Next(ctx)
			if err != nil {
				return err
			}
			if row == nil {
				return nil
			}
			e.cands = append(e.cands, append([]types.Datum(nil), row...))
		}
	}
	return nil
}

func (e *joinExec) Next(ctx *Ctx) ([]types.Datum, error) {
	for {
		if e.active {
			for {
				var row []types.Datum
				if e.idx != nil {
					if e.pos >= len(e.idx) {
						break
					}
					row = e.rows[e.idx[e.pos]]
				} else {
					if e.pos >= len(e.cands) {
						break
					}
					row = e.cands[e.pos]
				}
				e.pos++
				place(&e.p.Inner, row, e.out)
				if e.p.Other != nil {
					ok, err := expression.EvalBool(ctx.Eval, e.p.Other, e.out)
					if err != nil {
						return nil, err
					}
					if !ok {
						continue
					}
				}
				e.matched = true
				return e.out, nil
			}
			e.active = false
			if !e.matched && e.p.Type == planner.LeftOuterJoin {
				for _, p := range e.p.Inner.Pos {
					e.out[p] = types.Null
				}
				return e.out, nil
			}
		}
		row, err := e.outer.Next(ctx)
		if row == nil || err != nil {
			return nil, err
		}
		if err := ctx.Context.Err(); err != nil {
			return nil, err
		}
		place(&e.p.Outer, row, e.out)
		if err := e.candidates(ctx); err != nil {
			return nil, err
		}
		e.active = true
	}
}

func (e *joinExec) Close() error {
	e.rows, e.table, e.cands = nil, nil, nil
	e.mem.release()
	err := e.outer.Close()
	if ierr := e.inner.Close(); err == nil {
		err = ierr
	}
	return err
}
