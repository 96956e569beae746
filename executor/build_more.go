package executor

import (
	"fmt"

	"github.com/basalt-db/basalt/planner"
)

// buildMore builds the executors of the plans of joins, set operations
// and common table expressions.
func buildMore(p planner.Plan) (Executor, error) {
	switch x := p.(type) {
	case *planner.Join:
		o, err := Build(x.Outer.Plan)
		if err != nil {
			return nil, err
		}
		i, err := Build(x.Inner.Plan)
		if err != nil {
			return nil, err
		}
		return newJoinExec(x, o, i), nil
	case *planner.SetOp:
		l, err := Build(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := Build(x.Right)
		if err != nil {
			return nil, err
		}
		return &setOpExec{p: x, left: l, right: r}, nil
	case *planner.WorkTable:
		return &workTableExec{id: x.ID}, nil
	case *planner.RecursiveCTE:
		s, err := Build(x.Seed)
		if err != nil {
			return nil, err
		}
		e := &recursiveCTEExec{p: x, seed: s}
		for _, part := range x.Parts {
			pe, err := Build(part)
			if err != nil {
				return nil, err
			}
			e.parts = append(e.parts, pe)
		}
		return e, nil
	}
	return nil, fmt.Errorf("executor: no executor for %T", p)
}
