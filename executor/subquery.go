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
	sets  map[*expression.Subquery]*rowSet
	maps  map[*expression.Subquery]map[string]types.Datum
}

// rowSet is the rows of an uncorrelated IN subquery as hash keys; rows
// with a NULL are only counted, since they equal nothing.
type rowSet struct {
	keys    map[string]struct{}
	sawNull bool
}

// BindSubqueries makes ctx able to run subqueries: it sets ctx.Eval.Subq.
// Call it once per statement execution, after setting ctx's reader.
func BindSubqueries(ctx *Ctx) {
	// The runner's maps are made at first use: most statements have no
	// subquery.
	ctx.Eval.Subq = &subqueryRunner{ctx: ctx}
}

func (r *subqueryRunner) Contains(ec *expression.Ctx, s *expression.Subquery, left []types.Datum) (bool, bool, error) {
	set := r.sets[s]
	if set == nil {
		rows, err := r.Rows(ec, s, nil, 0)
		if err != nil {
			return false, false, err
		}
		set = &rowSet{keys: make(map[string]struct{}, len(rows))}
	rows:
		for _, row := range rows {
			for _, v := range row {
				if v.IsNull() {
					set.sawNull = true
					continue rows
				}
			}
			set.keys[string(rowKey(nil, row))] = struct{}{}
		}
		if r.sets == nil {
			r.sets = map[*expression.Subquery]*rowSet{}
		}
		r.sets[s] = set
	}
	_, found := set.keys[string(rowKey(nil, left))]
	return found, set.sawNull, nil
}

func (r *subqueryRunner) Lookup(ec *expression.Ctx, s *expression.Subquery, key []types.Datum) (types.Datum, bool, error) {
	m := r.maps[s]
	if m == nil {
		rows, err := r.Rows(ec, s, nil, 0)
		if err != nil {
			return types.Null, false, err
		}
		m = make(map[string]types.Datum, len(rows))
		n := s.Cols - 1
	rows:
		for _, row := range rows {
			for _, v := range row[:n] {
				if v.IsNull() {
					// Equals no key.
					continue rows
				}
			}
			m[string(rowKey(nil, row[:n]))] = row[n]
		}
		if r.maps == nil {
			r.maps = map[*expression.Subquery]map[string]types.Datum{}
		}
		r.maps[s] = m
	}
	v, found := m[string(rowKey(nil, key))]
	return v, found, nil
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
		if r.cache == nil {
			r.cache = map[*expression.Subquery][][]types.Datum{}
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
		if r.execs == nil {
			r.execs = map[*expression.Subquery]Executor{}
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
