package planner

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// This file plans one leaf of a FROM clause: a table with the conjuncts
// pushed down to it (from.go), or a derived table, view or CTE with them
// as a filter. A table's access path is chosen in access_path.go; its
// estimated rows, which order the joins (join.go), come from here.

// planLeaf plans a table with the conjuncts on it, and extra conditions
// already compiled over its own columns.
func (fb *fromBuilder) planLeaf(l *fromLeaf, conds []*conj, extra []expression.Expr) (JoinSide, error) {
	side := JoinSide{Pos: make([]int, l.n), est: fb.estimate(l, conds)}
	for i := range side.Pos {
		side.Pos[i] = l.off + i
	}
	var es []expression.Expr
	for _, cj := range conds {
		e, err := fb.c.builder(l.schema, cj.clause).Build(cj.node)
		if err != nil {
			return side, err
		}
		es = append(es, e)
	}
	es = append(es, extra...)
	cond := expression.And(es...)
	if l.ts == nil {
		side.Plan = l.plan
		if cond != nil {
			side.Plan = &Selection{base: base{schema: l.schema}, Child: l.plan, Cond: cond}
		}
		return side, nil
	}
	// The access path (access_path.go): a point get, a batch point get,
	// an index or table range scan, or a full scan, and what of cond it
	// leaves to check.
	path, rest := chooseAccessPath(fb.c, l.ts, cond, fb.lock)
	side.Plan = path
	if rest != nil {
		side.Plan = &Selection{base: base{schema: l.schema, est: min(side.est, EstRows(path))}, Child: path, Cond: rest}
	}
	return side, nil
}

// estimate guesses how many rows a leaf returns under conds: from the
// statistics of an analyzed table (estimate.go), else by rules of thumb.
func (fb *fromBuilder) estimate(l *fromLeaf, conds []*conj) float64 {
	est := l.est
	if l.ts != nil && hasStats(fb.c, l.ts.Table) {
		var es []expression.Expr
		for _, cj := range conds {
			e, err := fb.c.builder(l.schema, cj.clause).Build(cj.node)
			if err != nil {
				est *= pseudoSelect
				continue
			}
			es = append(es, e)
		}
		return max(est*condSelectivity(fb.c, l.ts.Table, expression.And(es...)), 1)
	}
	for _, cj := range conds {
		if cj.eqL != nil && (cj.eqLLeaves.empty() || cj.eqRLeaves.empty()) {
			col := cj.eqL
			if cj.eqLLeaves.empty() {
				col = cj.eqR
			}
			if cn, ok := col.(*ast.ColumnNameExpr); ok && l.ts != nil && uniqueColumn(l.ts, cn.Name.Name.O) {
				return 1
			}
			est *= 0.1
			continue
		}
		est *= 0.3
	}
	return max(est, 1)
}

// uniqueColumn reports whether name is the primary key or a one-column
// unique index of the table.
func uniqueColumn(ts *TableSource, name string) bool {
	for _, ix := range ts.Table.Indexes {
		if ix.Unique && ix.State == catalog.StatePublic && len(ix.Columns) == 1 && strings.EqualFold(ts.Table.Columns[ix.Columns[0].Offset].Name, name) {
			return true
		}
	}
	if hc := ts.Table.HandleColumn(); hc != nil && strings.EqualFold(hc.Name, name) {
		return true
	}
	return false
}
