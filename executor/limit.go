package executor

import (
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// limitExec skips OFFSET rows of its child and passes on at most COUNT.
type limitExec struct {
	child         Executor
	p             *planner.Limit
	offset, count int64
	seen          int64
}

func limitValue(ctx *Ctx, x expression.Expr) (int64, error) {
	if x == nil {
		return 0, nil
	}
	v, err := x.Eval(ctx.Eval, nil)
	if err != nil {
		return 0, err
	}
	if v.IsNull() || (v.Kind() != types.KindInt && v.Kind() != types.KindUint) {
		if v.Kind() == types.KindString {
			if n, over, tr := types.ToInt(v); !over && !tr && n >= 0 {
				return n, nil
			}
		}
		return 0, errno.New(errno.ErWrongArguments, "Incorrect arguments to LIMIT")
	}
	if v.Kind() == types.KindUint {
		return int64(min(v.Uint(), 1<<62)), nil
	}
	if v.Int() < 0 {
		return 0, errno.New(errno.ErWrongArguments, "Incorrect arguments to LIMIT")
	}
	return v.Int(), nil
}

func (e *limitExec) Open(ctx *Ctx) error {
	var err error
	if e.count, err = limitValue(ctx, e.p.Count); err != nil {
		return err
	}
	if e.offset, err = limitValue(ctx, e.p.Offset); err != nil {
		return err
	}
	e.seen = 0
	return e.child.Open(ctx)
}

func (e *limitExec) Close() error { return e.child.Close() }
func (e *limitExec) Next(ctx *Ctx) ([]types.Datum, error) {
	for {
		if e.seen >= e.offset+e.count {
			return nil, nil
		}
		row, err := e.child.Next(ctx)
		if row == nil || err != nil {
			return nil, err
		}
		e.seen++
		if e.seen > e.offset {
			return row, nil
		}
	}
}
