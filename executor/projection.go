package executor

import (
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
)

// projectionExec evaluates the select list over each row of its child.
type projectionExec struct {
	child Executor
	exprs []expression.Expr
	row   []types.Datum
}

func (e *projectionExec) Open(ctx *Ctx) error { return e.child.Open(ctx) }
func (e *projectionExec) Close() error        { return e.child.Close() }
func (e *projectionExec) Next(ctx *Ctx) ([]types.Datum, error) {
	in, err := e.child.Next(ctx)
	if in == nil || err != nil {
		return nil, err
	}
	for i, x := range e.exprs {
		if e.row[i], err = x.Eval(ctx.Eval, in); err != nil {
			return nil, err
		}
	}
	return e.row, nil
}
