package parserdriver

import (
	"strconv"
	"strings"

	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Template is a parsed INSERT or REPLACE ... VALUES whose marked literals
// (Shape) can be set to those of another statement of the same shape, so
// that the statement need not be parsed: the parser builds the same tree
// for two statements of one shape, with the literals' values in the same
// nodes (see Shape).
//
// Binding writes into the tree, so a Template serves one statement at a
// time and its tree is only good until the next Bind: the owner (a
// session) must run a bound statement to its end before binding again,
// and keep no part of the tree past that.
type Template struct {
	stmt ast.StmtNode
	vals []*ValueExpr // the node of each marked literal, in the order of the marks
}

// maxIntDigits is the longest integer literal a Template takes: every
// run of 18 digits is an int64, which the parser makes of it too.
const maxIntDigits = 18

// NewTemplate returns a Template of st, which the parser made of sql
// alone; lits are the literals Shape marked in sql. It reports false when
// st is not a plain INSERT or REPLACE ... VALUES (or SET) with sql as its
// text, or when its literal nodes cannot be matched one to one with lits:
// the tree must hold exactly one literal node per mark, in the marks'
// order, each with the value its mark's text gives, and no two marks may
// hold equal values (so that the match cannot be one of two).
func NewTemplate(sql string, lits []Literal, st ast.StmtNode) (*Template, bool) {
	ins, ok := st.(*ast.InsertStmt)
	if !ok || ins.Select != nil || ins.TableHints != nil || len(lits) == 0 || st.Text() != sql {
		return nil, false
	}
	v := &valueCollector{}
	st.Accept(v)
	if v.other || len(v.vals) != len(lits) {
		return nil, false
	}
	seen := make(map[string]bool, len(lits))
	for i, l := range lits {
		d, ok := literalDatum(sql, l)
		ve := v.vals[i]
		key := d.String()
		if l.String {
			key = "'" + key
		}
		if !ok || ve.IsBinaryLiteral || ve.Datum.Kind() != d.Kind() || !sameValue(ve.Datum, d) || seen[key] {
			return nil, false
		}
		seen[key] = true
	}
	return &Template{stmt: st, vals: v.vals}, true
}

// Bind sets the template's literals to those of sql, whose shape must be
// the template's and lits the literals Shape marked in it, sets the
// statement's text to sql, and returns the statement. It reports false,
// and changes nothing, when a literal is not one the template takes (an
// integer of more than 18 digits).
func (t *Template) Bind(sql string, lits []Literal) (ast.StmtNode, bool) {
	if len(lits) != len(t.vals) {
		return nil, false
	}
	for _, l := range lits {
		if !l.String && l.End-l.Start > maxIntDigits {
			return nil, false
		}
	}
	for i, l := range lits {
		d, _ := literalDatum(sql, l)
		t.vals[i].SetDatum(d)
	}
	t.stmt.SetText(nil, sql)
	return t.stmt, true
}

// Stmt is the template's statement, the tree Bind returns.
func (t *Template) Stmt() ast.StmtNode { return t.stmt }

// Values are the template's literal nodes, in the order of the marks:
// after Bind each holds the bound statement's literal. A caller that built
// something of the tree (a plan) finds in them the new values.
func (t *Template) Values() []*ValueExpr { return t.vals }

// literalDatum is the value of the literal l of sql, as the parser makes
// it: an integer of up to 18 digits as an int64, a string as its text
// with each doubled quote made one.
func literalDatum(sql string, l Literal) (types.Datum, bool) {
	text := sql[l.Start:l.End]
	if l.String {
		s := text[1 : len(text)-1]
		if strings.Contains(s, "''") {
			s = strings.ReplaceAll(s, "''", "'")
		}
		return types.NewString(s), true
	}
	if len(text) > maxIntDigits {
		return types.Datum{}, false
	}
	n, err := strconv.ParseInt(text, 10, 64)
	return types.NewInt(n), err == nil
}

func sameValue(a, b types.Datum) bool {
	if a.Kind() == types.KindString {
		return a.Str() == b.Str()
	}
	return a.Int() == b.Int()
}

// valueCollector gathers a tree's literal nodes in the order it visits
// them; other is set by a parameter marker or a literal of a kind a
// Template does not bind.
type valueCollector struct {
	vals  []*ValueExpr
	other bool
}

func (v *valueCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ParamMarkerExpr:
		v.other = true
	case *ValueExpr:
		if k := x.Datum.Kind(); k == types.KindString || k == types.KindInt {
			v.vals = append(v.vals, x)
		} else {
			v.other = true
		}
	}
	return n, false
}

func (v *valueCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }
