package planner

import (
	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// This file plans the FROM clause of a SELECT together with its WHERE
// clause, once from.go has made it a tree: where each conjunct goes, the
// join order and the join operators. Each table, with the conjuncts pushed
// to it, is planned by planLeaf (leaf.go), which chooses its access path.
//
// Rows of a join have one layout for the whole FROM clause: the columns of
// every table in the order the tables are written, each table's columns
// followed by its row handle. A join operator places the rows of its two
// children into that layout; positions of tables not joined yet are unset.
// So every condition above a table is compiled once, against the whole
// layout, whatever the join order.
//
// Join order: outer joins keep the order they are written in (the
// preserved side drives, the other side is the inner side); the tables of
// a run of inner joins (INNER JOIN, CROSS JOIN, commas) are joined
// greedily, smallest estimated input first, preferring a table connected
// to those already joined by a condition. Each join picks an index lookup
// join when the inner side is a table whose access path can use the join
// keys, a hash join on equality keys otherwise, and a nested loop join
// when there are no equality keys.

// JoinType is the kind of a join operator.
type JoinType int

const (
	// InnerJoin returns the pairs that match.
	InnerJoin JoinType = iota
	// LeftOuterJoin returns too each outer row that matches no inner row,
	// with the inner columns NULL.
	LeftOuterJoin
)

// JoinMethod is how a join finds the inner rows of an outer row.
type JoinMethod int

const (
	// HashJoin reads the inner side once into a hash table on InnerKeys
	// and probes it with OuterKeys.
	HashJoin JoinMethod = iota
	// IndexJoin binds frame Frame to the OuterKeys' values of each outer
	// row and runs the inner plan, which reads them (expression.Corr) as
	// the keys of a point get or range scan.
	IndexJoin
	// NestedLoopJoin reads the inner side once and pairs every outer row
	// with every inner row.
	NestedLoopJoin
)

// JoinSide is a child of a join and where its columns go in the join's
// rows: child column i goes to position Pos[i]. With Global, the child's
// rows already have the join's layout and Pos lists the positions it
// fills.
type JoinSide struct {
	Plan   Plan
	Pos    []int
	Global bool
	est    float64 // estimated rows, for choosing the hash join's build side
}

// Join joins two children. Outer drives: for a left outer join it is the
// preserved side. OuterKeys, InnerKeys and Other are compiled over the
// join's rows; Other is checked on each pair (nil for none).
type Join struct {
	base
	Type                 JoinType
	Method               JoinMethod
	Outer, Inner         JoinSide
	OuterKeys, InnerKeys []expression.Expr
	Other                expression.Expr
	Frame                int
}

func (p *Join) Children() []Plan { return []Plan{p.Outer.Plan, p.Inner.Plan} }

// plan plans node n with the conjuncts conds, which read only its leaves.
func (fb *fromBuilder) plan(n *fromNode, conds []*conj) (JoinSide, error) {
	if n.leaf != nil {
		return fb.planLeaf(n.leaf, conds, nil)
	}
	if n.tp == ast.LeftJoin || n.tp == ast.RightJoin {
		return fb.planOuter(n, conds)
	}
	var members []*fromNode
	var on []*conj
	var flatten func(m *fromNode)
	flatten = func(m *fromNode) {
		if m.leaf == nil && m.tp != ast.LeftJoin && m.tp != ast.RightJoin {
			flatten(m.left)
			flatten(m.right)
			for _, o := range m.on {
				on = append(on, fb.conjs(o, "on clause", m.leaves)...)
			}
			return
		}
		members = append(members, m)
	}
	flatten(n)
	return fb.planGroup(members, append(on, conds...))
}

// planOuter plans a LEFT or RIGHT join. Conjuncts from above that read
// only the preserved side filter it; the others are checked above the
// join. ON conjuncts that read only the inner side filter it; the rest
// are join conditions.
func (fb *fromBuilder) planOuter(n *fromNode, conds []*conj) (JoinSide, error) {
	pres, inner := n.left, n.right
	if n.tp == ast.RightJoin {
		pres, inner = n.right, n.left
	}
	var presConds, above []*conj
	for _, cj := range conds {
		if !cj.pinned && cj.leaves.subsetOf(pres.leaves) {
			presConds = append(presConds, cj)
		} else {
			above = append(above, cj)
		}
	}
	var innerConds, joinConds []*conj
	for _, o := range n.on {
		for _, cj := range fb.conjs(o, "on clause", n.leaves) {
			if !cj.pinned && !cj.leaves.empty() && cj.leaves.subsetOf(inner.leaves) {
				innerConds = append(innerConds, cj)
			} else {
				joinConds = append(joinConds, cj)
			}
		}
	}
	outer, err := fb.plan(pres, presConds)
	if err != nil {
		return outer, err
	}
	side, err := fb.join(outer, pres.leaves, inner, innerConds, joinConds, LeftOuterJoin)
	if err != nil {
		return side, err
	}
	side.est = max(side.est, outer.est)
	return fb.filter(side, above)
}

// filter puts the conjuncts conds above side.
func (fb *fromBuilder) filter(side JoinSide, conds []*conj) (JoinSide, error) {
	if len(conds) == 0 {
		return side, nil
	}
	var es []expression.Expr
	for _, cj := range conds {
		e, err := fb.c.builder(fb.schema, cj.clause).Build(cj.node)
		if err != nil {
			return side, err
		}
		es = append(es, e)
	}
	side.Plan = &Selection{base: base{schema: side.Plan.Schema()}, Child: side.Plan, Cond: expression.And(es...)}
	return side, nil
}

// planGroup joins the members of a run of inner joins.
func (fb *fromBuilder) planGroup(members []*fromNode, conds []*conj) (JoinSide, error) {
	pushed := make([][]*conj, len(members))
	var pool []*conj
	for _, cj := range conds {
		placed := false
		if !cj.pinned && !cj.leaves.empty() {
			for i, m := range members {
				if cj.leaves.subsetOf(m.leaves) {
					pushed[i] = append(pushed[i], cj)
					placed = true
					break
				}
			}
		}
		if !placed {
			pool = append(pool, cj)
		}
	}
	if len(members) == 1 {
		side, err := fb.plan(members[0], pushed[0])
		if err != nil {
			return side, err
		}
		return fb.filter(side, pool)
	}
	// Plan the members that are not tables now, for their estimates.
	sides := make([]*JoinSide, len(members))
	est := make([]float64, len(members))
	for i, m := range members {
		if m.leaf != nil {
			est[i] = fb.estimate(m.leaf, pushed[i])
			continue
		}
		s, err := fb.plan(m, pushed[i])
		if err != nil {
			return s, err
		}
		sides[i] = &s
		est[i] = s.est
	}
	done := make([]bool, len(members))
	used := make([]bool, len(pool))
	var cur JoinSide
	var curLeaves lset
	for step := 0; step < len(members); step++ {
		best := -1
		bestConnected := false
		for i, m := range members {
			if done[i] {
				continue
			}
			connected := false
			if step > 0 {
				for k, cj := range pool {
					if !used[k] && !cj.pinned && cj.leaves.intersects(m.leaves) && cj.leaves.intersects(curLeaves) &&
						cj.leaves.subsetOf(curLeaves.union(m.leaves)) {
						connected = true
						break
					}
				}
			}
			if best < 0 || (connected && !bestConnected) || (connected == bestConnected && est[i] < est[best]) {
				best, bestConnected = i, connected
			}
		}
		done[best] = true
		m := members[best]
		if step == 0 {
			if sides[best] != nil {
				cur = *sides[best]
			} else {
				s, err := fb.plan(m, pushed[best])
				if err != nil {
					return s, err
				}
				cur = s
			}
			curLeaves = m.leaves
			continue
		}
		var stepConds []*conj
		all := curLeaves.union(m.leaves)
		for k, cj := range pool {
			if !used[k] && !cj.pinned && !cj.leaves.empty() && cj.leaves.subsetOf(all) {
				stepConds = append(stepConds, cj)
				used[k] = true
			}
		}
		var err error
		if sides[best] != nil {
			cur, err = fb.joinSides(cur, curLeaves, *sides[best], m.leaves, stepConds, InnerJoin)
		} else {
			cur, err = fb.join(cur, curLeaves, m, pushed[best], stepConds, InnerJoin)
		}
		if err != nil {
			return cur, err
		}
		curLeaves = all
	}
	var rest []*conj
	for k, cj := range pool {
		if !used[k] {
			rest = append(rest, cj)
		}
	}
	return fb.filter(cur, rest)
}

// positions lists the join layout positions of the leaves in s.
func (fb *fromBuilder) positions(s lset) []int {
	var out []int
	for i, l := range fb.leaves {
		if s.has(i) {
			for k := 0; k < l.n; k++ {
				out = append(out, l.off+k)
			}
		}
	}
	return out
}

// join joins outer (with the leaves outerLeaves) with node inner, whose own
// conjuncts are innerConds, on conds.
func (fb *fromBuilder) join(outer JoinSide, outerLeaves lset, inner *fromNode, innerConds, conds []*conj, tp JoinType) (JoinSide, error) {
	if inner.leaf != nil && inner.leaf.ts != nil {
		side, ok, err := fb.indexJoin(outer, outerLeaves, inner, innerConds, conds, tp)
		if err != nil || ok {
			return side, err
		}
	}
	in, err := fb.plan(inner, innerConds)
	if err != nil {
		return in, err
	}
	return fb.joinSides(outer, outerLeaves, in, inner.leaves, conds, tp)
}

// indexJoin plans an index lookup join if the inner table's access path
// can use equalities of conds as keys.
func (fb *fromBuilder) indexJoin(outer JoinSide, outerLeaves lset, inner *fromNode, innerConds, conds []*conj, tp JoinType) (JoinSide, bool, error) {
	l := inner.leaf
	frame := -1
	var keys, extra []expression.Expr
	var innerCol expression.Expr // the inner column of the first key
	var rest []*conj
	for _, cj := range conds {
		var outerSide ast.ExprNode
		var cn *ast.ColumnNameExpr
		if cj.eqL != nil {
			if c, ok := cj.eqR.(*ast.ColumnNameExpr); ok && cj.eqRLeaves.subsetOf(inner.leaves) && !cj.eqRLeaves.empty() && cj.eqLLeaves.subsetOf(outerLeaves) {
				outerSide, cn = cj.eqL, c
			} else if c, ok := cj.eqL.(*ast.ColumnNameExpr); ok && cj.eqLLeaves.subsetOf(inner.leaves) && !cj.eqLLeaves.empty() && cj.eqRLeaves.subsetOf(outerLeaves) {
				outerSide, cn = cj.eqR, c
			}
		}
		if cn == nil {
			rest = append(rest, cj)
			continue
		}
		col, err := fb.c.builder(l.schema, cj.clause).Build(cn)
		if err != nil {
			return JoinSide{}, false, err
		}
		if innerCol == nil {
			innerCol = col
		}
		key, err := fb.c.builder(fb.schema, cj.clause).Build(outerSide)
		if err != nil {
			return JoinSide{}, false, err
		}
		if err := expression.CheckCollationMix("=", col, key); err != nil {
			return JoinSide{}, false, err
		}
		if frame < 0 {
			frame = fb.c.nextID()
		}
		corr := &expression.Corr{ID: frame, Slot: len(keys), Tp: key.Type(), Name: expression.String(key)}
		keys = append(keys, key)
		extra = append(extra, expression.NewCompare("=", col, corr))
	}
	if len(keys) == 0 {
		return JoinSide{}, false, nil
	}
	in, err := fb.planLeaf(l, innerConds, extra)
	if err != nil {
		return in, false, err
	}
	if !usesCorr(in.Plan) {
		return JoinSide{}, false, nil
	}
	other, err := fb.buildAll(rest)
	if err != nil {
		return in, false, err
	}
	est := fb.joinRows(outer.est, in.est, keys, nil)
	if ndv := fb.leafNDV(l, innerCol); ndv > 0 {
		est = min(est, max(outer.est*in.est/ndv, 1))
	}
	j := &Join{base: base{schema: fb.schema, est: est}, Type: tp, Method: IndexJoin, Outer: outer, Inner: in,
		OuterKeys: keys, Other: other, Frame: frame}
	return JoinSide{Plan: j, Pos: fb.positions(outerLeaves.union(inner.leaves)), Global: true, est: est}, true, nil
}

// usesCorr reports whether a table's access path reads its keys from a
// frame (expression.Corr).
func usesCorr(p Plan) bool {
	isCorr := func(e expression.Expr) bool { _, ok := e.(*expression.Corr); return ok }
	rangesUse := func(rs []Range) bool {
		for _, r := range rs {
			if (r.Low != nil && isCorr(r.Low)) || (r.High != nil && isCorr(r.High)) {
				return true
			}
		}
		return false
	}
	switch x := p.(type) {
	case *Selection:
		return usesCorr(x.Child)
	case *PointGet:
		if x.Handle != nil && isCorr(x.Handle) {
			return true
		}
		for _, k := range x.Key {
			if isCorr(k) {
				return true
			}
		}
	case *BatchPointGet:
		for _, h := range x.Handles {
			if isCorr(h) {
				return true
			}
		}
	case *TableScan:
		return rangesUse(x.Ranges) || keyRangesUse(x.KeyRanges, isCorr, rangesUse)
	case *IndexScan:
		return keyRangesUse(x.Ranges, isCorr, rangesUse)
	}
	return false
}

func keyRangesUse(krs []KeyRange, isCorr func(expression.Expr) bool, rangesUse func([]Range) bool) bool {
	for _, kr := range krs {
		for _, pts := range kr.Eq {
			for _, v := range pts {
				if isCorr(v) {
					return true
				}
			}
		}
		if rangesUse(kr.Last) {
			return true
		}
	}
	return false
}

func (fb *fromBuilder) buildAll(conds []*conj) (expression.Expr, error) {
	var es []expression.Expr
	for _, cj := range conds {
		e, err := fb.c.builder(fb.schema, cj.clause).Build(cj.node)
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	return expression.And(es...), nil
}

// joinSides joins two planned sides: a hash join on the equalities
// between them whose two sides compare as hash keys do, else a nested
// loop join.
func (fb *fromBuilder) joinSides(outer JoinSide, outerLeaves lset, inner JoinSide, innerLeaves lset, conds []*conj, tp JoinType) (JoinSide, error) {
	j := &Join{base: base{schema: fb.schema}, Type: tp, Method: NestedLoopJoin, Outer: outer, Inner: inner}
	var rest []*conj
	for _, cj := range conds {
		if cj.eqL != nil && !cj.eqLLeaves.empty() && !cj.eqRLeaves.empty() {
			lo, ro := cj.eqLLeaves.subsetOf(outerLeaves), cj.eqRLeaves.subsetOf(outerLeaves)
			li, ri := cj.eqLLeaves.subsetOf(innerLeaves), cj.eqRLeaves.subsetOf(innerLeaves)
			var on, in ast.ExprNode
			switch {
			case lo && ri:
				on, in = cj.eqL, cj.eqR
			case ro && li:
				on, in = cj.eqR, cj.eqL
			}
			if on != nil {
				ok, err := fb.hashKeys(j, on, in, cj.clause)
				if err != nil {
					return JoinSide{}, err
				}
				if ok {
					continue
				}
			}
		}
		rest = append(rest, cj)
	}
	est := max(outer.est, inner.est)
	if len(j.OuterKeys) > 0 {
		est = fb.joinRows(outer.est, inner.est, j.OuterKeys, j.InnerKeys)
		j.Method = HashJoin
		// An inner join builds its hash table on the smaller side.
		if tp == InnerJoin && inner.est > outer.est {
			j.Outer, j.Inner = j.Inner, j.Outer
			j.OuterKeys, j.InnerKeys = j.InnerKeys, j.OuterKeys
		}
	} else {
		est = min(outer.est*inner.est, 1e12)
	}
	var err error
	if j.Other, err = fb.buildAll(rest); err != nil {
		return JoinSide{}, err
	}
	j.est = est
	return JoinSide{Plan: j, Pos: fb.positions(outerLeaves.union(innerLeaves)), Global: true, est: est}, nil
}

// joinRows estimates an equi-join's rows: |R|·|S| / max(NDV(R.a), NDV(S.b))
// over the first key pair, where analyzed tables give the NDVs; else the
// larger side, as before statistics.
func (fb *fromBuilder) joinRows(outer, inner float64, outerKeys, innerKeys []expression.Expr) float64 {
	ndv := 0.0
	for _, keys := range [][]expression.Expr{outerKeys, innerKeys} {
		if len(keys) > 0 {
			ndv = max(ndv, fb.keyNDV(keys[0]))
		}
	}
	if ndv == 0 || len(innerKeys) == 0 && len(outerKeys) == 0 {
		return max(outer, inner)
	}
	return max(outer*inner/ndv, 1)
}

// leafNDV is the number of distinct values of column e (over the leaf's
// own layout) of an analyzed table, or 0.
func (fb *fromBuilder) leafNDV(l *fromLeaf, e expression.Expr) float64 {
	col, ok := e.(*expression.Column)
	if !ok || l.ts == nil || col.Idx >= len(l.ts.Table.Columns) {
		return 0
	}
	if _, cs := columnStats(fb.c, l.ts.Table, l.ts.Table.Columns[col.Idx]); cs != nil {
		return float64(cs.NDV)
	}
	return 0
}

// keyNDV is the number of distinct values of the column a join key reads,
// from the statistics of its table, or 0.
func (fb *fromBuilder) keyNDV(e expression.Expr) float64 {
	col, ok := e.(*expression.Column)
	if !ok {
		return 0
	}
	for _, l := range fb.leaves {
		if l.ts == nil || col.Idx < l.off || col.Idx >= l.off+len(l.ts.Table.Columns) {
			continue
		}
		st, cs := columnStats(fb.c, l.ts.Table, l.ts.Table.Columns[col.Idx-l.off])
		if st == nil || cs == nil {
			return 0
		}
		return float64(cs.NDV)
	}
	return 0
}

func (fb *fromBuilder) hashKeys(j *Join, on, in ast.ExprNode, clause string) (bool, error) {
	b := fb.c.builder(fb.schema, clause)
	oe, err := b.Build(on)
	if err != nil {
		return false, err
	}
	ie, err := b.Build(in)
	if err != nil {
		return false, err
	}
	if err := expression.CheckCollationMix("=", oe, ie); err != nil {
		return false, err
	}
	oc, ic := expression.KeyClass(oe.Type()), expression.KeyClass(ie.Type())
	if oc == "" || oc != ic {
		return false, nil
	}
	j.OuterKeys, j.InnerKeys = append(j.OuterKeys, oe), append(j.InnerKeys, ie)
	return true, nil
}
