package executor

import (
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// rowsExec returns rows computed at Open: the operators that compute
// all their rows first (aggregation, sort, set operations, batch point
// get, virtual tables) embed it for their Next.
type rowsExec struct {
	rows [][]types.Datum
	pos  int
}

func (e *rowsExec) Close() error { e.rows = nil; return nil }
func (e *rowsExec) Next(*Ctx) ([]types.Datum, error) {
	if e.pos >= len(e.rows) {
		return nil, nil
	}
	e.pos++
	return e.rows[e.pos-1], nil
}

// setOpExec computes a UNION, EXCEPT or INTERSECT at Open. Rows are
// equal when their values are (NULLs equal each other), as DISTINCT
// compares them.
type setOpExec struct {
	rowsExec
	p           *planner.SetOp
	left, right Executor
}

func (e *setOpExec) Open(ctx *Ctx) error {
	e.rows, e.pos = nil, 0
	l, err := Drain(ctx, e.left)
	if err != nil {
		return err
	}
	r, err := Drain(ctx, e.right)
	if err != nil {
		return err
	}
	var buf []byte
	key := func(row []types.Datum) string {
		buf = rowKey(buf[:0], row)
		return string(buf)
	}
	switch e.p.Op {
	case ast.UnionAll:
		e.rows = append(l, r...)
	case ast.Union:
		seen := map[string]bool{}
		for _, row := range append(l, r...) {
			if k := key(row); !seen[k] {
				seen[k] = true
				e.rows = append(e.rows, row)
			}
		}
	default:
		counts := map[string]int{}
		for _, row := range r {
			counts[key(row)]++
		}
		seen := map[string]bool{}
		for _, row := range l {
			k := key(row)
			switch e.p.Op {
			case ast.Except:
				if counts[k] == 0 && !seen[k] {
					e.rows = append(e.rows, row)
				}
				seen[k] = true
			case ast.ExceptAll:
				if counts[k] > 0 {
					counts[k]--
				} else {
					e.rows = append(e.rows, row)
				}
			case ast.Intersect:
				if counts[k] > 0 && !seen[k] {
					e.rows = append(e.rows, row)
				}
				seen[k] = true
			case ast.IntersectAll:
				if counts[k] > 0 {
					counts[k]--
					e.rows = append(e.rows, row)
				}
			}
		}
	}
	return nil
}

// workTableExec reads the rows the running round of a recursive CTE
// reads.
type workTableExec struct {
	rowsExec
	id int
}

func (e *workTableExec) Open(ctx *Ctx) error {
	e.rows, e.pos = ctx.work[e.id], 0
	return nil
}

// recursiveCTEExec runs a recursive CTE at Open.
type recursiveCTEExec struct {
	rowsExec
	p     *planner.RecursiveCTE
	seed  Executor
	parts []Executor
}

func (e *recursiveCTEExec) Open(ctx *Ctx) error {
	e.rows, e.pos = nil, 0
	seed, err := Drain(ctx, e.seed)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var buf []byte
	fresh := func(rows [][]types.Datum) [][]types.Datum {
		if !e.p.Distinct {
			return rows
		}
		var out [][]types.Datum
		for _, r := range rows {
			buf = rowKey(buf[:0], r)
			if !seen[string(buf)] {
				seen[string(buf)] = true
				out = append(out, r)
			}
		}
		return out
	}
	work := fresh(seed)
	e.rows = append(e.rows, work...)
	if ctx.work == nil {
		ctx.work = map[int][][]types.Datum{}
	}
	old := ctx.work[e.p.ID]
	defer func() { ctx.work[e.p.ID] = old }()
	limit := maxRecursion(ctx)
	for round := 1; len(work) > 0; round++ {
		if uint64(round) > limit {
			return errno.New(3636, "Recursive query aborted after %d iterations. Try increasing @@cte_max_recursion_depth to a larger value.", round)
		}
		if err := ctx.Context.Err(); err != nil {
			return err
		}
		ctx.work[e.p.ID] = work
		var next [][]types.Datum
		for _, p := range e.parts {
			rows, err := Drain(ctx, p)
			if err != nil {
				return err
			}
			next = append(next, fresh(rows)...)
		}
		e.rows = append(e.rows, next...)
		work = next
	}
	return nil
}

// maxRecursion is the session's cte_max_recursion_depth: how many rounds
// that add rows a recursive CTE may run.
func maxRecursion(ctx *Ctx) uint64 {
	if ctx.Eval != nil && ctx.Eval.Session != nil {
		if v, err := ctx.Eval.Session.SysVar("cte_max_recursion_depth", false); err == nil {
			if n, neg, _, _ := types.ToUint(v); !neg {
				return n
			}
		}
	}
	return planner.MaxRecursion
}
