package planner

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// This file plans common table expressions (WITH). A reference to a
// non-recursive CTE is planned as a derived table of its query. A
// recursive CTE is a union of seed queries, which do not name it, and
// recursive queries, which read the rows the previous round added
// (a WorkTable); RecursiveCTE runs the rounds until one adds nothing.

// cteScope is one CTE visible to a query, and the scopes around it.
type cteScope struct {
	parent *cteScope
	def    *cteDef
}

type cteDef struct {
	name      string
	query     ast.ResultSetNode
	cols      []string
	recursive bool
	ctx       *Context // where the CTE's query is planned
	work      *WorkTable
}

// WorkTable reads the rows a recursive CTE's previous round added.
type WorkTable struct {
	base
	ID int
}

func (p *WorkTable) Children() []Plan { return nil }

// RecursiveCTE runs Seed, then Parts over the rows the previous round
// added (WorkTable ID) until a round adds none. Distinct drops rows seen
// before.
type RecursiveCTE struct {
	base
	Seed     Plan
	Parts    []Plan
	ID       int
	Distinct bool
}

func (p *RecursiveCTE) Children() []Plan { return append([]Plan{p.Seed}, p.Parts...) }

// MaxRecursion is cte_max_recursion_depth's default.
const MaxRecursion = 1000

func (c *Context) withCTEs(w *ast.WithClause) (*Context, error) {
	if c.ids == nil {
		c.ids = new(int)
	}
	child := *c
	seen := map[string]bool{}
	for _, cte := range w.CTEs {
		key := strings.ToLower(cte.Name.O)
		if seen[key] {
			return nil, errno.New(1066, "Not unique table/alias: '%s'", cte.Name.O)
		}
		seen[key] = true
		def := &cteDef{name: cte.Name.O, query: cte.Query.Query}
		for _, n := range cte.ColNameList {
			def.cols = append(def.cols, n.O)
		}
		if w.IsRecursive && refersTo(def.query, def.name) {
			def.recursive = true
			child.ctes = &cteScope{parent: child.ctes, def: def}
			ctx := child
			def.ctx = &ctx
			continue
		}
		ctx := child
		def.ctx = &ctx
		child.ctes = &cteScope{parent: child.ctes, def: def}
	}
	return &child, nil
}

// refersTo reports whether n names table name (unqualified).
func refersTo(n ast.Node, name string) bool {
	v := &tableNameFinder{name: name}
	n.Accept(v)
	return v.found
}

type tableNameFinder struct {
	name  string
	found bool
}

func (v *tableNameFinder) Enter(n ast.Node) (ast.Node, bool) {
	if tn, ok := n.(*ast.TableName); ok && tn.Schema.O == "" && strings.EqualFold(tn.Name.O, v.name) {
		v.found = true
	}
	return n, v.found
}
func (v *tableNameFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func (c *Context) cte(tn *ast.TableName) *cteDef {
	if tn.Schema.O != "" {
		return nil
	}
	for s := c.ctes; s != nil; s = s.parent {
		if strings.EqualFold(s.def.name, tn.Name.O) {
			return s.def
		}
	}
	return nil
}

// cteSchema names a CTE's columns: its column list, else its query's.
func cteSchema(d *cteDef, fields []ResultField, name string) (*expression.Schema, error) {
	if d.cols != nil && len(d.cols) != len(fields) {
		return nil, errno.New(1353, "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts")
	}
	s := &expression.Schema{}
	for i, f := range fields {
		n := f.Name
		if d.cols != nil {
			n = d.cols[i]
		}
		s.Cols = append(s.Cols, expression.SchemaCol{Table: name, Name: n, Tp: f.Type})
	}
	return s, nil
}

func (c *Context) buildCTERef(d *cteDef, alias string) (Plan, *expression.Schema, error) {
	name := d.name
	if alias != "" {
		name = alias
	}
	if d.work != nil {
		s := &expression.Schema{}
		for _, col := range d.work.schema.Cols {
			col.Table = name
			s.Cols = append(s.Cols, col)
		}
		return &WorkTable{base: base{schema: s}, ID: d.work.ID}, s, nil
	}
	if !d.recursive {
		q, err := buildQuery(d.ctx, d.query)
		if err != nil {
			return nil, nil, err
		}
		s, err := cteSchema(d, q.Fields, name)
		if err != nil {
			return nil, nil, err
		}
		return &Trim{base: base{schema: s}, Child: q.Plan, N: len(q.Fields)}, s, nil
	}
	return c.buildRecursive(d, name)
}

func (c *Context) buildRecursive(d *cteDef, name string) (Plan, *expression.Schema, error) {
	so, ok := d.query.(*ast.SetOprStmt)
	if !ok || so.OrderBy != nil || so.Limit != nil {
		return nil, nil, errno.New(errno.ErNotSupportedYet, "recursive common table expression '%s' must be a UNION of a seed and recursive queries", d.name)
	}
	var seed, rec []ast.Node
	distinct := false
	for _, n := range so.SelectList.Selects {
		if refersTo(n, d.name) {
			rec = append(rec, n)
			var op *ast.SetOprType
			switch s := n.(type) {
			case *ast.SelectStmt:
				op = s.AfterSetOperator
			case *ast.SetOprSelectList:
				op = s.AfterSetOperator
			}
			if op != nil && *op == ast.Union {
				distinct = true
			}
			continue
		}
		if len(rec) > 0 {
			return nil, nil, errno.New(errno.ErNotSupportedYet, "recursive common table expression '%s': seed queries must come first", d.name)
		}
		seed = append(seed, n)
	}
	if len(seed) == 0 {
		return nil, nil, errno.New(3573, "Recursive Common Table Expression '%s' should have one or more non-recursive query blocks followed by one or more recursive ones", d.name)
	}
	seedQ, err := buildSetOprList(d.ctx, &ast.SetOprSelectList{Selects: seed})
	if err != nil {
		return nil, nil, err
	}
	s, err := cteSchema(d, seedQ.Fields, name)
	if err != nil {
		return nil, nil, err
	}
	p := &RecursiveCTE{base: base{schema: s}, Seed: seedQ.Plan, ID: d.ctx.nextID(), Distinct: distinct}
	d.work = &WorkTable{base: base{schema: s}, ID: p.ID}
	defer func() { d.work = nil }()
	for _, n := range rec {
		q, err := buildSetOprList(d.ctx, &ast.SetOprSelectList{Selects: []ast.Node{n}})
		if err != nil {
			return nil, nil, err
		}
		if len(q.Fields) != len(s.Cols) {
			return nil, nil, errno.New(1222, "The used SELECT statements have a different number of columns")
		}
		p.Parts = append(p.Parts, q.Plan)
	}
	return p, s, nil
}

// buildView plans a reference to a view: its stored query, planned in
// the view's database, as a derived table named by alias or the view.
func (c *Context) buildView(db string, t *catalog.TableInfo, alias string) (Plan, *expression.Schema, error) {
	if c.Parse == nil {
		return nil, nil, errno.New(errno.ErNotSupportedYet, "views are not supported here")
	}
	if c.viewDepth >= 32 {
		return nil, nil, errno.New(1462, "`%s`.`%s` contains view recursion", db, t.Name)
	}
	st, err := c.Parse(t.View.Select)
	if err != nil {
		return nil, nil, errno.New(1356, "View '%s.%s' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them", db, t.Name)
	}
	rs, ok := st.(ast.ResultSetNode)
	if !ok {
		return nil, nil, errno.New(1356, "View '%s.%s' is not a query", db, t.Name)
	}
	if c.ids == nil {
		c.ids = new(int)
	}
	vc := &Context{IS: c.IS, DB: db, Stats: c.Stats, Parse: c.Parse, ids: c.ids, viewDepth: c.viewDepth + 1}
	q, err := buildQuery(vc, rs)
	if err != nil {
		return nil, nil, err
	}
	if len(q.Fields) != len(t.View.Cols) {
		return nil, nil, errno.New(1356, "View '%s.%s' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them", db, t.Name)
	}
	name := t.Name
	if alias != "" {
		name = alias
	}
	s := &expression.Schema{}
	for i, f := range q.Fields {
		s.Cols = append(s.Cols, expression.SchemaCol{DB: db, Table: name, Name: t.View.Cols[i], Tp: f.Type})
	}
	return &Trim{base: base{schema: s}, Child: q.Plan, N: len(q.Fields)}, s, nil
}
