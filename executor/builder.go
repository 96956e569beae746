package executor

import (
	"fmt"

	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// Build returns the executor of a plan: one operator per plan node, built
// bottom up.
func Build(p planner.Plan) (Executor, error) { return builder{}.build(p) }

// BuildAnalyzed is Build with every operator counting what it does in
// stats (EXPLAIN ANALYZE, analyze.go); nil stats is Build.
func BuildAnalyzed(p planner.Plan, stats *RuntimeStats) (Executor, error) {
	return builder{stats: stats}.build(p)
}

// builder builds one plan's executors.
type builder struct {
	stats *RuntimeStats // nil: no counting
}

func (b builder) build(p planner.Plan) (Executor, error) {
	e, err := b.buildOp(p)
	if err != nil || b.stats == nil {
		return e, err
	}
	return &analyzedExec{Executor: e, st: b.stats.of(p)}, nil
}

func (b builder) buildOp(p planner.Plan) (Executor, error) {
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
		c, err := b.build(x.Child)
		return &selectionExec{child: c, cond: x.Cond}, err
	case *planner.Projection:
		c, err := b.build(x.Child)
		return &projectionExec{child: c, exprs: x.Exprs, row: make([]types.Datum, len(x.Exprs))}, err
	case *planner.Aggregation:
		c, err := b.build(x.Child)
		return &aggExec{child: c, p: x}, err
	case *planner.Sort:
		c, err := b.build(x.Child)
		return &sortExec{child: c, items: x.Items}, err
	case *planner.Limit:
		c, err := b.build(x.Child)
		return &limitExec{child: c, p: x}, err
	case *planner.Distinct:
		c, err := b.build(x.Child)
		return &distinctExec{child: c}, err
	case *planner.MemTable:
		return &memTableExec{p: x}, nil
	case *planner.Dual:
		return &dualExec{none: x.NoRow}, nil
	case *planner.Trim:
		c, err := b.build(x.Child)
		return &trimExec{child: c, n: x.N}, err
	case *planner.Join:
		o, err := b.build(x.Outer.Plan)
		if err != nil {
			return nil, err
		}
		i, err := b.build(x.Inner.Plan)
		if err != nil {
			return nil, err
		}
		return newJoinExec(x, o, i), nil
	case *planner.SetOp:
		l, err := b.build(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := b.build(x.Right)
		if err != nil {
			return nil, err
		}
		return &setOpExec{p: x, left: l, right: r}, nil
	case *planner.WorkTable:
		return &workTableExec{id: x.ID}, nil
	case *planner.RecursiveCTE:
		s, err := b.build(x.Seed)
		if err != nil {
			return nil, err
		}
		e := &recursiveCTEExec{p: x, seed: s}
		for _, part := range x.Parts {
			pe, err := b.build(part)
			if err != nil {
				return nil, err
			}
			e.parts = append(e.parts, pe)
		}
		return e, nil
	}
	return nil, fmt.Errorf("executor: no executor for %T", p)
}
