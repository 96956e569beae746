package trigger

import (
	"fmt"
	"strings"
)

// Create is CREATE [DEFINER = user] TRIGGER [IF NOT EXISTS] [db.]name
// {BEFORE|AFTER} {INSERT|UPDATE|DELETE} ON [db.]table FOR EACH ROW
// [{FOLLOWS|PRECEDES} other] body.
type Create struct {
	Definer     string // as written, "" when absent
	IfNotExists bool
	Schema      string // the trigger's database, "" for the current one
	Name        string
	Timing      string // "BEFORE" or "AFTER"
	Event       string // "INSERT", "UPDATE" or "DELETE"
	TableSchema string
	Table       string
	Order       string // "FOLLOWS", "PRECEDES" or ""
	Other       string // the trigger Order refers to
	// Body is the action as written; Stmts its statements' texts: the
	// single statement, or those between BEGIN and END (none for an
	// empty BEGIN END).
	Body  string
	Stmts []string
}

// Drop is DROP TRIGGER [IF EXISTS] [db.]name.
type Drop struct {
	IfExists     bool
	Schema, Name string
}

// ShowCreate is SHOW CREATE TRIGGER [db.]name.
type ShowCreate struct {
	Schema, Name string
}

// SyntaxError is a statement this package cannot read; the session
// reports it as MySQL's 1064.
type SyntaxError struct {
	Near string // the text from the offending token on
	Line int
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s' at line %d", e.Near, e.Line)
}

// Parse reads one trigger statement (a Piece with Trigger set) and
// returns a *Create, *Drop or *ShowCreate.
func Parse(sql string) (any, error) {
	p := &parser{sql: sql, toks: lex(sql)}
	if n := len(p.toks); n > 0 && p.toks[n-1].isSym(';') {
		p.toks = p.toks[:n-1]
	}
	var st any
	switch {
	case p.accept("DROP"):
		st = p.drop()
	case p.accept("CHECKSUM"):
		st = p.checksum()
	case p.accept("SHOW"):
		p.expect("CREATE")
		p.expect("TRIGGER")
		s := &ShowCreate{}
		s.Schema, s.Name = p.qualified()
		st = s
	default:
		st = p.create()
	}
	if p.err == nil && p.i < len(p.toks) {
		p.fail()
	}
	if p.err != nil {
		return nil, p.err
	}
	return st, nil
}

// parser reads tokens left to right; the first error sticks and every
// later step is a no-op.
type parser struct {
	sql  string
	toks []token
	i    int
	err  error
}

func (p *parser) peek() token {
	if p.err != nil || p.i >= len(p.toks) {
		return token{kind: symbol, val: "\x00", pos: len(p.sql), end: len(p.sql)}
	}
	return p.toks[p.i]
}

func (p *parser) fail() {
	if p.err != nil {
		return
	}
	pos := len(p.sql)
	if p.i < len(p.toks) {
		pos = p.toks[p.i].pos
	}
	p.err = &SyntaxError{Near: p.sql[pos:], Line: 1 + strings.Count(p.sql[:pos], "\n")}
}

// accept consumes the word w if it is next.
func (p *parser) accept(w string) bool {
	if p.peek().is(w) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(w string) {
	if !p.accept(w) {
		p.fail()
	}
}

// oneOf consumes one of words and returns it in upper case.
func (p *parser) oneOf(words ...string) string {
	for _, w := range words {
		if p.accept(w) {
			return w
		}
	}
	p.fail()
	return ""
}

// name reads an identifier: a word or a `quoted` one.
func (p *parser) name() string {
	t := p.peek()
	if t.kind != word && t.kind != ident {
		p.fail()
		return ""
	}
	p.i++
	return t.val
}

// qualified reads [db.]name.
func (p *parser) qualified() (schema, name string) {
	name = p.name()
	if p.peek().isSym('.') {
		p.i++
		return name, p.name()
	}
	return "", name
}

func (p *parser) drop() *Drop {
	p.expect("TRIGGER")
	d := &Drop{}
	if p.accept("IF") {
		p.expect("EXISTS")
		d.IfExists = true
	}
	d.Schema, d.Name = p.qualified()
	return d
}

func (p *parser) create() *Create {
	c := &Create{}
	p.expect("CREATE")
	if p.accept("DEFINER") {
		c.Definer = p.definer()
	}
	p.expect("TRIGGER")
	if p.accept("IF") {
		p.expect("NOT")
		p.expect("EXISTS")
		c.IfNotExists = true
	}
	c.Schema, c.Name = p.qualified()
	c.Timing = p.oneOf("BEFORE", "AFTER")
	c.Event = p.oneOf("INSERT", "UPDATE", "DELETE")
	p.expect("ON")
	c.TableSchema, c.Table = p.qualified()
	p.expect("FOR")
	p.expect("EACH")
	p.expect("ROW")
	if p.peek().is("FOLLOWS") || p.peek().is("PRECEDES") {
		c.Order = p.oneOf("FOLLOWS", "PRECEDES")
		c.Other = p.name()
	}
	c.Body, c.Stmts = p.body()
	return c
}

// definer reads "= user": CURRENT_USER [()] or user[@host], each part a
// word, identifier or string. It returns the text as written.
func (p *parser) definer() string {
	if !p.peek().isSym('=') {
		p.fail()
		return ""
	}
	p.i++
	start := p.peek().pos
	if p.accept("CURRENT_USER") {
		if p.peek().isSym('(') {
			p.i++
			if !p.peek().isSym(')') {
				p.fail()
			}
			p.i++
		}
	} else {
		p.part()
		if p.peek().isSym('@') {
			p.i++
			p.part()
		}
	}
	if p.err != nil {
		return ""
	}
	return p.sql[start:p.toks[p.i-1].end]
}

// part reads one part of an account name.
func (p *parser) part() {
	if t := p.peek(); t.kind == symbol {
		p.fail()
		return
	}
	p.i++
}

// body reads the rest of the statement as the trigger's action and
// returns its text and its statements' texts.
func (p *parser) body() (string, []string) {
	if p.err != nil {
		return "", nil
	}
	rest := p.toks[p.i:]
	if len(rest) == 0 {
		p.fail()
		return "", nil
	}
	p.i = len(p.toks)
	text := p.sql[rest[0].pos:rest[len(rest)-1].end]
	if !rest[0].is("BEGIN") {
		return text, []string{text}
	}
	last := len(rest) - 1
	if last == 0 || !rest[last].is("END") {
		p.i = len(p.toks)
		p.err = nil
		p.fail()
		return "", nil
	}
	// The statements between BEGIN and END each end with a ';' outside
	// any nested block.
	var stmts []string
	depth, start := 0, 1
	for i := 1; i < last; i++ {
		t := rest[i]
		switch {
		case t.isSym(';') && depth == 0:
			if i > start {
				stmts = append(stmts, p.sql[rest[start].pos:rest[i-1].end])
			}
			start = i + 1
		case t.is("BEGIN"), t.is("CASE"), opensCompound(rest, i):
			depth++
		case t.is("END"):
			depth--
			if i+1 < last && rest[i+1].kind == word && compoundEnd[strings.ToUpper(rest[i+1].val)] {
				i++
			}
		}
	}
	if start < last {
		// MySQL requires the ';' after the last statement of a block.
		p.i = len(p.toks) - 1
		p.err = nil
		p.fail()
		return "", nil
	}
	return text, stmts
}

// BodyStatements returns the texts of the statements of a trigger body
// (Create.Body, as stored).
func BodyStatements(body string) ([]string, error) {
	p := &parser{sql: body, toks: lex(body)}
	_, stmts := p.body()
	return stmts, p.err
}

// IsCompound reports whether a body statement is a compound statement or
// a declaration (BEGIN, IF, CASE, LOOP, WHILE, REPEAT, DECLARE, a label),
// which Basalt's triggers do not run.
func IsCompound(stmt string) bool {
	t := lex(stmt)
	if len(t) == 0 {
		return false
	}
	if len(t) > 1 && t[1].isSym(':') {
		return true // label: BEGIN / LOOP / ...
	}
	for _, w := range []string{"BEGIN", "IF", "CASE", "LOOP", "WHILE", "REPEAT", "DECLARE", "LEAVE", "ITERATE", "RETURN", "SIGNAL", "RESIGNAL"} {
		if t[0].is(w) {
			return true
		}
	}
	return false
}

// Checksum is CHECKSUM TABLE[S] [db.]t [, [db.]t ...] [QUICK | EXTENDED].
type Checksum struct {
	Tables []TableName
}

// TableName is a [db.]name; Schema is "" for the current database.
type TableName struct {
	Schema, Name string
}

func (p *parser) checksum() *Checksum {
	p.oneOf("TABLE", "TABLES")
	c := &Checksum{}
	for {
		var t TableName
		t.Schema, t.Name = p.qualified()
		c.Tables = append(c.Tables, t)
		if !p.peek().isSym(',') {
			break
		}
		p.i++
	}
	if !p.accept("QUICK") {
		p.accept("EXTENDED")
	}
	return c
}
