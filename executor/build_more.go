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
	}
	return nil, fmt.Errorf("executor: no executor for %T", p)
}
