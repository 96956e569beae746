package session

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// A text INSERT (COM_QUERY) is parsed once per shape: sysbench's
// oltp_insert sends every row as its own INSERT ... VALUES text, which
// the parser took a fifth of the statement's CPU to read. The session
// keeps the tree of the first statement of each shape (the text with its
// plain string and integer literals marked, parserdriver.Shape) as a
// parserdriver.Template, and a later statement of that shape and sql
// mode gets the same tree with its own literals set in it. (The current
// database does not matter: the parser leaves a table's database empty
// when the statement does, and the planner reads it.) Statements run one at a time in a session and none keeps its tree
// past its end, which is what a Template asks of its owner.
//
// A template also keeps what the statements of its shape share, found
// for the first of them:
//   - its plan (textPlan), when every marked literal is an item of a
//     VALUES row of its own: a later statement sets the plan's constants
//     of those items to its literals (expression.ConstantOf of the bound
//     nodes, as planning them would) and runs it, as TiDB's
//     non-prepared plan cache does. The plan is kept for the schema
//     version, current database, sql_mode and bindings it was built
//     under, and built again when one differs; a statement whose
//     planning fails keeps none, so errors come from planning as before.
//     It is not a plan from the plan cache to the client:
//     @@last_plan_from_cache, the metrics and the statement summary say
//     what they say of a statement planned anew.
//   - its digest (the digest normalizer decides from the shape alone,
//     see stmtsummary.DigestCache);
//   - whether it has an AS OF clause (readAsOf), and its nesting, which
//     only the shape decides: a statement of a known shape is not
//     checked again (checkNesting).

// textParses is a session's templates, keyed by shape.
type textParses struct {
	shape []byte
	lits  []parserdriver.Literal
	// pending is set when shape and lits are those of the statement
	// being parsed, whose template does not exist yet.
	pending bool
	m       map[string]*textTemplate
	// hit is the template the running COM_QUERY's statement came from
	// (or was made into), nil if none; its statement is hit.t's tree.
	hit *textTemplate
}

type textTemplate struct {
	t    *parserdriver.Template
	mode mysql.SQLMode // the parser's sql mode
	// asOf: a table of the statement says AS OF (readAsOf looks).
	asOf bool
	// plan is the statement's plan, nil until one is kept (or when none
	// can be); digest its digest, nil until first recorded.
	plan   *textPlan
	digest *digestOf
}

// textPlan is a template's plan and what it was built under.
type textPlan struct {
	dml *dmlPlan
	// consts[i] is the plan's constant of the template's i-th literal.
	consts  []*expression.Constant
	version int64 // the schema's
	db      string
	mode    expression.SQLMode
	binds   uint64 // the session's bindsVersion
}

// textParseMax bounds the templates a session keeps (it forgets them all
// when full) and textParseMaxLen the statements it makes them of.
const (
	textParseMax    = 64
	textParseMaxLen = 4096
)

// parseTemplate returns the statement sql holds, from a template of its
// shape, or false: sql must then be parsed, and rememberParse told.
func (s *Session) parseTemplate(sql string) (ast.StmtNode, bool) {
	p := &s.textParses
	p.pending, p.hit = false, nil
	if len(sql) > textParseMaxLen || !insertKeyword(sql) || !parserdriver.PrintableASCII(sql) {
		return nil, false
	}
	var ok bool
	p.shape, p.lits, ok = parserdriver.Shape(p.shape[:0], p.lits[:0], sql)
	if !ok {
		return nil, false
	}
	if t := p.m[string(p.shape)]; t != nil && t.mode == s.parserSQLMode {
		if st, ok := t.t.Bind(sql, p.lits); ok {
			s.d.textParseHits.Add(1)
			if t.plan != nil {
				vals := t.t.Values()
				for i, c := range t.plan.consts {
					*c = expression.ConstantOf(vals[i])
				}
			}
			p.hit = t
			return st, true
		}
		return nil, false
	}
	p.pending = true
	return nil, false
}

// rememberParse keeps a template of stmts, the parser's statements of
// sql, when parseTemplate looked for one for sql and there was none.
func (s *Session) rememberParse(sql string, stmts []ast.StmtNode) {
	p := &s.textParses
	if !p.pending || len(stmts) != 1 {
		return
	}
	p.pending = false
	t, ok := parserdriver.NewTemplate(sql, p.lits, stmts[0])
	if !ok {
		return
	}
	if p.m == nil || len(p.m) >= textParseMax {
		p.m = make(map[string]*textTemplate)
	}
	var asOf asOfClauses
	stmts[0].Accept(&asOf)
	p.hit = &textTemplate{t: t, mode: s.parserSQLMode, asOf: len(asOf) > 0}
	p.m[string(p.shape)] = p.hit
}

// textTemplateOf returns the template st came from, or nil when st is
// not the running COM_QUERY's statement from a template.
func (s *Session) textTemplateOf(st ast.StmtNode) *textTemplate {
	if t := s.textParses.hit; t != nil && t.t.Stmt() == st {
		return t
	}
	return nil
}

// usablePlan returns t's plan if it was built under what planning st
// would read now: schema is, the current database, sql_mode and
// bindings.
func (t *textTemplate) usablePlan(s *Session, is *catalog.InfoSchema) *dmlPlan {
	if t == nil {
		return nil
	}
	tp := t.plan
	if tp == nil || tp.version != is.Version || tp.db != s.db || tp.mode != s.sqlMode() || tp.binds != s.bindsVersion() {
		return nil
	}
	return tp.dml
}

// keepPlan keeps p, just planned for t's statement under schema is, as
// t's plan, if each of t's literals is an item of a VALUES row of its
// own whose constant in p it can set, and every other item is DEFAULT.
// Anything else (an expression over a literal, a function, ON DUPLICATE
// KEY UPDATE) keeps no plan: those statements are planned each time.
func (t *textTemplate) keepPlan(s *Session, is *catalog.InfoSchema, p *dmlPlan) {
	t.plan = nil
	ins, ok := t.t.Stmt().(*ast.InsertStmt)
	if !ok || p.insert == nil || p.insert.Select != nil || len(ins.OnDuplicate) > 0 || s.binds.used ||
		len(p.insert.Rows) != len(ins.Lists) {
		return
	}
	vals := t.t.Values()
	index := make(map[*parserdriver.ValueExpr]int, len(vals))
	for i, v := range vals {
		index[v] = i
	}
	consts := make([]*expression.Constant, len(vals))
	for r, list := range ins.Lists {
		if len(p.insert.Rows[r]) != len(list) {
			return
		}
		for c, item := range list {
			if _, ok := item.(*ast.DefaultExpr); ok {
				continue
			}
			v, ok := item.(*parserdriver.ValueExpr)
			if !ok {
				return
			}
			i, ok := index[v]
			if !ok || consts[i] != nil {
				return
			}
			if consts[i], ok = p.insert.Rows[r][c].(*expression.Constant); !ok {
				return
			}
		}
	}
	for _, c := range consts {
		if c == nil {
			return
		}
	}
	t.plan = &textPlan{dml: p, consts: consts, version: is.Version, db: s.db, mode: s.sqlMode(), binds: s.bindsVersion()}
}

// insertKeyword reports whether sql begins with INSERT or REPLACE, in
// any case.
func insertKeyword(sql string) bool {
	i := 0
	for i < len(sql) && (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n' || sql[i] == '\r') {
		i++
	}
	for _, w := range []string{"insert", "replace"} {
		if len(sql)-i >= len(w) {
			match := true
			for j := 0; j < len(w); j++ {
				if sql[i+j]|0x20 != w[j] {
					match = false
					break
				}
			}
			if match {
				return true
			}
		}
	}
	return false
}
