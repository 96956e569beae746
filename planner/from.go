package planner

import (
	"sort"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// This file turns a FROM clause into a tree of tables and joins, lays out
// the rows of the whole clause (see join.go), resolves USING and NATURAL
// joins, and splits WHERE and ON conditions into conjuncts annotated with
// the tables they read.

// fromLeaf is one table or derived table of a FROM clause.
type fromLeaf struct {
	ts     *TableSource // a stored table, or nil
	plan   Plan         // any other source
	schema *expression.Schema
	off, n int // its positions in the join layout
	est    float64
}

// fromNode is a node of a FROM clause: a leaf or a join.
type fromNode struct {
	leaf        *fromLeaf
	left, right *fromNode
	tp          ast.JoinType
	on          []ast.ExprNode // ON conditions, and USING's equalities
	leaves      lset
	star        []int // the columns * expands to
}

// conj is one conjunct of a WHERE or ON condition.
type conj struct {
	node   ast.ExprNode
	clause string
	leaves lset
	// pinned conjuncts (with subqueries) are checked only once every
	// table of the node they were written for is joined.
	pinned bool
	// eqL, eqR: the sides of an equality, with their tables.
	eqL, eqR             ast.ExprNode
	eqLLeaves, eqRLeaves lset
}

// lset is a set of leaves.
type lset []uint64

func (s lset) with(i int) lset {
	out := make(lset, max(len(s), i/64+1))
	copy(out, s)
	out[i/64] |= 1 << (i % 64)
	return out
}

func (s lset) union(t lset) lset {
	out := make(lset, max(len(s), len(t)))
	copy(out, s)
	for i, w := range t {
		out[i] |= w
	}
	return out
}

func (s lset) has(i int) bool { return i/64 < len(s) && s[i/64]&(1<<(i%64)) != 0 }

func (s lset) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// subsetOf reports whether every leaf of s is in t.
func (s lset) subsetOf(t lset) bool {
	for i, w := range s {
		var o uint64
		if i < len(t) {
			o = t[i]
		}
		if w&^o != 0 {
			return false
		}
	}
	return true
}

func (s lset) intersects(t lset) bool {
	for i := 0; i < len(s) && i < len(t); i++ {
		if s[i]&t[i] != 0 {
			return true
		}
	}
	return false
}

// fromBuilder plans one FROM clause.
type fromBuilder struct {
	c      *Context
	leaves []*fromLeaf
	schema *expression.Schema
	names  map[string]bool
	lock   bool
	// hints are the statement's optimizer hints (/*+ USE_INDEX(t, k) */).
	hints []*ast.TableOptimizerHint
}

// buildFrom plans the FROM and WHERE clauses of sel. It returns the plan,
// whose rows have the join layout (its schema), and the positions * expands
// to.
func (c *Context) buildFrom(sel *ast.SelectStmt, lock bool) (Plan, []int, error) {
	p, star, _, err := c.buildFromLeaves(sel, lock)
	return p, star, err
}

// buildFromLeaves is buildFrom that also returns the FROM clause's leaves
// (nil without a FROM clause), for multi-table UPDATE and DELETE.
func (c *Context) buildFromLeaves(sel *ast.SelectStmt, lock bool) (Plan, []int, []*fromLeaf, error) {
	p, star, fb, err := c.fromClause(sel, lock)
	if fb == nil {
		return p, star, nil, err
	}
	return p, star, fb.leaves, err
}

func (c *Context) fromClause(sel *ast.SelectStmt, lock bool) (Plan, []int, *fromBuilder, error) {
	if sel.From == nil {
		var src Plan = &Dual{base: base{schema: &expression.Schema{}}}
		if sel.Where != nil {
			cond, err := c.builder(src.Schema(), "where clause").Build(sel.Where)
			if err != nil {
				return nil, nil, nil, err
			}
			src = &Selection{base: base{schema: src.Schema()}, Child: src, Cond: cond}
		}
		return src, nil, nil, nil
	}
	fb := &fromBuilder{c: c, schema: &expression.Schema{}, names: map[string]bool{}, lock: lock, hints: sel.TableHints}
	root, err := fb.node(sel.From.TableRefs)
	if err != nil {
		return nil, nil, nil, err
	}
	var where []*conj
	if sel.Where != nil {
		where = fb.conjs(sel.Where, "where clause", root.leaves)
	}
	side, err := fb.plan(root, where)
	if err != nil {
		return nil, nil, nil, err
	}
	return side.Plan, root.star, fb, nil
}

// node turns a FROM clause item into a fromNode, adding its leaves.
func (fb *fromBuilder) node(n ast.ResultSetNode) (*fromNode, error) {
	switch x := n.(type) {
	case *ast.Join:
		if x.Right == nil {
			return fb.node(x.Left)
		}
		l, err := fb.node(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := fb.node(x.Right)
		if err != nil {
			return nil, err
		}
		j := &fromNode{left: l, right: r, tp: x.Tp, leaves: l.leaves.union(r.leaves)}
		if x.On != nil {
			j.on = append(j.on, x.On.Expr)
		}
		if x.NaturalJoin || len(x.Using) > 0 {
			if err := fb.using(j, x); err != nil {
				return nil, err
			}
		} else {
			j.star = append(append([]int(nil), l.star...), r.star...)
		}
		return j, nil
	case *ast.TableSource:
		return fb.tableSource(x)
	}
	return nil, errno.New(errno.ErNotSupportedYet, "this FROM clause is not supported yet")
}

func (fb *fromBuilder) tableSource(ts *ast.TableSource) (*fromNode, error) {
	c := fb.c
	alias := ts.AsName.O
	leaf := &fromLeaf{}
	var name string
	switch s := ts.Source.(type) {
	case *ast.TableName:
		name = s.Name.O
		if cte := c.cte(s); cte != nil {
			p, schema, err := c.buildCTERef(cte, alias)
			if err != nil {
				return nil, err
			}
			leaf.plan, leaf.schema = p, schema
			break
		}
		if mt := c.memTable(s); mt != nil {
			t := TableSource{base: base{schema: SourceSchema(InfoSchemaDB, mt, alias)}, DB: InfoSchemaDB, Table: mt, Alias: alias}
			leaf.plan, leaf.schema = &MemTable{TableSource: t}, t.schema
			break
		}
		db, t, err := c.TableRef(s)
		if err != nil {
			return nil, err
		}
		if t.View != nil {
			if leaf.plan, leaf.schema, err = c.buildView(db, t, alias); err != nil {
				return nil, err
			}
			break
		}
		hintName := alias
		if hintName == "" {
			hintName = s.Name.O
		}
		hints, err := tableIndexHints(t, hintName, s.IndexHints, fb.hints)
		if err != nil {
			return nil, err
		}
		leaf.ts = &TableSource{base: base{schema: SourceSchema(db, t, alias)}, DB: db, Table: t, Alias: alias, hints: hints}
		leaf.schema = leaf.ts.schema
		leaf.est = 1000
		if c.Stats != nil {
			if st := c.Stats(t.ID); st != nil {
				leaf.est = float64(max(st.RowCount, 1))
			}
		}
	case *ast.SelectStmt, *ast.SetOprStmt:
		if alias == "" {
			return nil, errno.New(errno.ErDerivedMustHaveAlias, "Every derived table must have its own alias")
		}
		sub, err := buildQuery(c, s)
		if err != nil {
			return nil, err
		}
		leaf.plan, leaf.schema = derived(sub, alias)
	case *ast.Join:
		return fb.node(s)
	default:
		return nil, errno.New(errno.ErNotSupportedYet, "this FROM clause is not supported yet")
	}
	if alias != "" {
		name = alias
	}
	if leaf.est == 0 {
		leaf.est = 1000
	}
	key := strings.ToLower(name)
	if fb.names[key] {
		return nil, errno.New(1066, "Not unique table/alias: '%s'", name)
	}
	fb.names[key] = true
	idx := len(fb.leaves)
	leaf.off, leaf.n = len(fb.schema.Cols), len(leaf.schema.Cols)
	fb.schema.Cols = append(fb.schema.Cols, leaf.schema.Cols...)
	fb.leaves = append(fb.leaves, leaf)
	nd := &fromNode{leaf: leaf, leaves: lset(nil).with(idx)}
	for i, col := range leaf.schema.Cols {
		if !col.Hidden {
			nd.star = append(nd.star, leaf.off+i)
		}
	}
	return nd, nil
}

// derived is the source of a derived table: the query's rows, named by
// alias.
func derived(sub *Query, alias string) (Plan, *expression.Schema) {
	schema := &expression.Schema{}
	for _, f := range sub.Fields {
		schema.Cols = append(schema.Cols, expression.SchemaCol{Table: alias, Name: f.Name, Tp: f.Type})
	}
	return &Trim{base: base{schema: schema}, Child: sub.Plan, N: len(sub.Fields)}, schema
}

// using adds a USING or NATURAL join's equalities to j.on and sets its *
// list: the common columns once (from the preserved side), then the other
// columns of the preserved side, then of the other side. The common
// columns of the other side are not reached by unqualified names.
func (fb *fromBuilder) using(j *fromNode, x *ast.Join) error {
	findIn := func(star []int, name string) (int, error) {
		found := -1
		for _, p := range star {
			if strings.EqualFold(fb.schema.Cols[p].Name, name) {
				if found >= 0 {
					return -1, errno.New(errno.ErNonUniq, "Column '%s' in from clause is ambiguous", name)
				}
				found = p
			}
		}
		return found, nil
	}
	var names []string
	if x.NaturalJoin {
		for _, p := range j.left.star {
			n := fb.schema.Cols[p].Name
			if r, _ := findIn(j.right.star, n); r >= 0 {
				names = append(names, n)
			}
		}
	} else {
		for _, u := range x.Using {
			names = append(names, u.Name.O)
		}
	}
	common := map[int]bool{}
	var first []int
	for _, n := range names {
		l, err := findIn(j.left.star, n)
		if err != nil {
			return err
		}
		r, err := findIn(j.right.star, n)
		if err != nil {
			return err
		}
		if l < 0 || r < 0 {
			return errno.New(errno.ErBadField, "Unknown column '%s' in 'from clause'", n)
		}
		common[l], common[r] = true, true
		keep, drop := l, r
		if x.Tp == ast.RightJoin {
			keep, drop = r, l
		}
		first = append(first, keep)
		fb.schema.Cols[drop].Merged = true
		j.on = append(j.on, &ast.BinaryOperationExpr{Op: opcode.EQ, L: fb.colRef(l), R: fb.colRef(r)})
	}
	j.star = first
	rest := append(append([]int(nil), j.left.star...), j.right.star...)
	if x.Tp == ast.RightJoin {
		rest = append(append([]int(nil), j.right.star...), j.left.star...)
	}
	for _, p := range rest {
		if !common[p] {
			j.star = append(j.star, p)
		}
	}
	return nil
}

// colRef is a qualified reference to position p of the join layout.
func (fb *fromBuilder) colRef(p int) ast.ExprNode {
	col := fb.schema.Cols[p]
	return &ast.ColumnNameExpr{Name: &ast.ColumnName{Schema: ast.NewCIStr(col.DB), Table: ast.NewCIStr(col.Table), Name: ast.NewCIStr(col.Name)}}
}

// leafOf returns the leaf a join layout position belongs to.
func (fb *fromBuilder) leafOf(p int) int {
	return sort.Search(len(fb.leaves), func(i int) bool { return fb.leaves[i].off+fb.leaves[i].n > p })
}

// conjs splits cond into conjuncts and finds the tables each reads. A
// conjunct with a subquery is pinned to all of scope.
func (fb *fromBuilder) conjs(cond ast.ExprNode, clause string, scope lset) []*conj {
	var out []*conj
	var split func(n ast.ExprNode)
	split = func(n ast.ExprNode) {
		switch x := n.(type) {
		case *ast.BinaryOperationExpr:
			if x.Op == opcode.LogicAnd {
				split(x.L)
				split(x.R)
				return
			}
		case *ast.ParenthesesExpr:
			split(x.Expr)
			return
		}
		cj := &conj{node: n, clause: clause}
		var sub bool
		cj.leaves, sub = fb.refs(n)
		if sub {
			cj.pinned, cj.leaves = true, scope
		}
		if b, ok := n.(*ast.BinaryOperationExpr); ok && b.Op == opcode.EQ && !sub {
			cj.eqL, cj.eqR = b.L, b.R
			cj.eqLLeaves, _ = fb.refs(b.L)
			cj.eqRLeaves, _ = fb.refs(b.R)
		}
		out = append(out, cj)
	}
	split(cond)
	return out
}

// refs returns the leaves n reads, and whether it has a subquery (or
// something else that must not move).
func (fb *fromBuilder) refs(n ast.ExprNode) (lset, bool) {
	v := &refVisitor{fb: fb}
	n.Accept(v)
	return v.set, v.sub
}

type refVisitor struct {
	fb  *fromBuilder
	set lset
	sub bool
}

func (v *refVisitor) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.ColumnNameExpr:
		if i, err := v.fb.schema.Find(x.Name.Schema.O, x.Name.Table.O, x.Name.Name.O, ""); err == nil {
			v.set = v.set.with(v.fb.leafOf(i))
		}
	case *ast.SubqueryExpr, *ast.AggregateFuncExpr, *ast.VariableExpr:
		v.sub = true
		return n, true
	case *ast.FuncCallExpr:
		switch strings.ToLower(x.FnName.L) {
		case "rand", "uuid", "sleep", "last_insert_id", "row_count", "found_rows":
			v.sub = true
		}
	}
	return n, false
}

func (v *refVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }
