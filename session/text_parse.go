package session

import (
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

// textParses is a session's templates, keyed by shape.
type textParses struct {
	shape []byte
	lits  []parserdriver.Literal
	// pending is set when shape and lits are those of the statement
	// being parsed, whose template does not exist yet.
	pending bool
	m       map[string]*textTemplate
}

type textTemplate struct {
	t    *parserdriver.Template
	mode mysql.SQLMode // the parser's sql mode
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
	p.pending = false
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
	p.m[string(p.shape)] = &textTemplate{t: t, mode: s.parserSQLMode}
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
