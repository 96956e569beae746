package executor

import (
	"fmt"

	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// subqueryRunner runs the subqueries of one statement execution: an
// uncorrelated subquery once (its rows are kept for the statement), a
// correlated one each time it is evaluated, with its frame bound. Each
// subquery's executor is built once and opened for each run; a subquery
// never runs inside itself, so one executor per subquery suffices.
type subqueryRunner struct {
	ctx   *Ctx
	cache map[*expression.Subquery][][]types.Datum
	execs map[*expression.Subquery]Executor
}

// BindSubqueries makes ctx able to run subqueries: it sets ctx.Eval.Subq.
// Call it once per statement execution, after setting ctx's reader.
func BindSubqueries(ctx *Ctx) {
	ctx.Eval.Subq = &subqueryRunner{ctx: ctx, cache: map[*expression.Subquery][][]types.Datum{},
		execs: map[*expression.Subquery]Executor{}}
}

func (r *subqueryRunner) Rows(ec *expression.Ctx, s *expression.Subquery, params []types.Datum, limit int) ([][]types.Datum, error) {
	if len(s.Params) == 0 {
		if rows, ok := r.cache[s]; ok {
			return rows, nil
		}
		rows, err := r.run(s, 0)
		if err != nil {
			return nil, err
		}
		r.cache[s] = rows
		return rows, nil
	}
	old := ec.BindFrame(s.ID, params)
	defer ec.RestoreFrame(s.ID, old)
	return r.run(s, limit)
}

func (r *subqueryRunner) run(s *expression.Subquery, limit int) ([][]types.Datum, error) {
	ex := r.execs[s]
	if ex == nil {
		p, ok := s.Plan.(planner.Plan)
		if !ok {
			return nil, fmt.Errorf("executor: subquery without a plan")
		}
		var err error
		if ex, err = Build(p); err != nil {
			return nil, err
		}
		r.execs[s] = ex
	}
	if err := ex.Open(r.ctx); err != nil {
		ex.Close()
		return nil, err
	}
	defer ex.Close()
	var rows [][]types.Datum
	for limit <= 0 || len(rows) < limit {
		row, err := ex.Next(r.ctx)
		if err != nil {
			return nil, err
		}
		if row == nil {
			break
		}
		rows = append(rows, append([]types.Datum(nil), row[:s.Cols]...))
	}
	return rows, nil
}
