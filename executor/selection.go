package executor

import (
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
)

// selectionExec passes on the rows of its child for which the condition
// is true (WHERE, HAVING).
type selectionExec struct {
	child Executor
	cond  expression.Expr
}

func (e *selectionExec) Open(ctx *Ctx) error { return e.child.Open(ctx) }
func (e *selectionExec) Close() error        { return e.child.Close() }
func (e *selectionExec) Next(ctx *Ctx) ([]types.Datum, error) {
	for {
		row, err := e.child.Next(ctx)
		if row == nil || err != nil {
			return nil, err
		}
		ok, err := expression.EvalBool(ctx.Eval, e.cond, row)
		if err != nil {
			return nil, err
		}
		if ok {
			return row, nil
		}
	}
}
