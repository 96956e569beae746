package executor

import "github.com/basalt-db/basalt/types"

// trimExec keeps the first columns of each row of its child, dropping the
// ones added only to sort or filter by.
type trimExec struct {
	child Executor
	n     int
}

func (e *trimExec) Open(ctx *Ctx) error { return e.child.Open(ctx) }
func (e *trimExec) Close() error        { return e.child.Close() }
func (e *trimExec) Next(ctx *Ctx) ([]types.Datum, error) {
	row, err := e.child.Next(ctx)
	if row == nil || err != nil {
		return nil, err
	}
	return row[:e.n], nil
}
