package executor

import (
	"fmt"

	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// Build returns the executor of a plan: one operator per plan node, built
// bottom up.
func Build(p planner.Plan) (Executor, error) {
	switch x := p.(type) {
	case *planner.PointGet:
		return &pointGetExec{p: x}, nil
	case *planner.BatchPointGet:
		return &batchPointGetExec{p: x}, nil
	case *planner.TableScan:
		return &tableScanExec{p: x}, nil
	case *planner.IndexScan:
		return &indexScanExec{p: x}, nil
	case *planner.Selection:
		c, err := Build(x.Child)
		return &selectionExec{child: c, cond: x.Cond}, err
	case *planner.Projection:
		c, err := Build(x.Child)
		return &projectionExec{child: c, exprs: x.Exprs, row: make([]types.Datum, len(x.Exprs))}, err
	case *planner.Aggregation:
		c, err := Build(x.Child)
		return &aggExec{child: c, p: x}, err
	case *planner.Sort:
		c, err := Build(x.Child)
		return &sortExec{child: c, items: x.Items}, err
	case *planner.Limit:
		c, err := Build(x.Child)
		return &limitExec{child: c, p: x}, err
	case *planner.Distinct:
		c, err := Build(x.Child)
		return &distinctExec{child: c}, err
	case *planner.MemTable:
		return &memTableExec{p: x}, nil
	case *planner.Dual:
		return &dualExec{none: x.NoRow}, nil
	case *planner.Trim:
		c, err := Build(x.Child)
		return &trimExec{child: c, n: x.N}, err
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
