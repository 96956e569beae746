package executor

import "github.com/basalt-db/basalt/types"

// dualExec is a FROM-less SELECT's one empty row, or no row when the
// planner proved the result empty.
type dualExec struct {
	none, done bool
}

func (e *dualExec) Open(*Ctx) error { e.done = e.none; return nil }
func (e *dualExec) Close() error    { return nil }
func (e *dualExec) Next(*Ctx) ([]types.Datum, error) {
	if e.done {
		return nil, nil
	}
	e.done = true
	return []types.Datum{}, nil
}
