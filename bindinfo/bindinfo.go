// Package bindinfo is the pure part of SQL plan bindings, TiDB's: a
// binding ties a statement, by its normalized digest, to the hints of
// another statement that differs from it only in its hints (CREATE
// BINDING FOR <stmt> USING <hinted stmt>). This package normalizes
// statements for matching, checks that a hinted statement matches its
// origin, and moves the hinted statement's hints onto a statement that
// runs. Where bindings are kept (a session's, mysql.bind_info) is package
// session's.
//
// The hints a binding carries are those Basalt's planner honours: index
// hints after a table name (USE / FORCE / IGNORE INDEX) and the
// statements' optimizer hints (/*+ USE_INDEX(t, k) */ and the rest, which
// the planner reads or ignores as it would in the statement itself).
package bindinfo

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
)

// Bindable says whether a statement can have a binding: a query, an
// UPDATE, a DELETE, or an INSERT or REPLACE ... SELECT (TiDB's list).
func Bindable(st ast.StmtNode) bool {
	switch x := st.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt, *ast.UpdateStmt, *ast.DeleteStmt:
		return true
	case *ast.InsertStmt:
		return x.Select != nil
	}
	return false
}

// Normalize returns the normalized text of st for matching (TiDB's
// original_sql) and its digest (sql_digest): st written back with its
// tables qualified by db (the current database) and without its hints,
// then normalized by the parser's NormalizeDigestForBinding (literals
// become ?, an IN list becomes "...").
func Normalize(st ast.StmtNode, db string) (normalized, digest string) {
	h := extract(st)
	h.clear()
	text := Restore(st, db)
	h.apply()
	n, d := parser.NormalizeDigestForBinding(text)
	return n, d.String()
}

// Restore writes st back as SQL with its tables qualified by db, as TiDB
// writes a binding's bind_sql (RestoreWithDefaultDB).
func Restore(st ast.StmtNode, db string) string {
	var b strings.Builder
	ctx := format.NewRestoreCtx(format.RestoreStringSingleQuotes|format.RestoreSpacesAroundBinaryOperation|
		format.RestoreStringWithoutCharset|format.RestoreNameBackQuotes|format.RestoreKeyWordUppercase, &b)
	ctx.DefaultDB = db
	if err := st.Restore(ctx); err != nil {
		return ""
	}
	return b.String()
}

// Hints are the hints of a statement, in the order a walk of its tree
// meets them: each table name's index hints, each statement's optimizer
// hints. Two statements whose Normalize agree have the same tree apart
// from their hints, so the hints of one fit the other place by place.
type Hints struct {
	tables [][]*ast.IndexHint
	stmts  [][]*ast.TableOptimizerHint
}

// HintsOf returns the hints of st (a binding's hinted statement).
func HintsOf(st ast.StmtNode) Hints {
	h := extract(st)
	out := Hints{tables: make([][]*ast.IndexHint, len(h.tables)), stmts: make([][]*ast.TableOptimizerHint, len(h.stmts))}
	for i, t := range h.tables {
		out.tables[i] = t.IndexHints
	}
	for i, p := range h.stmts {
		out.stmts[i] = *p
	}
	return out
}

// Apply puts h in place of st's own hints, and returns what puts st's
// back (st may be a prepared statement's tree, executed again). st must
// normalize as the statement h came from; if its shape differs anyway,
// Apply changes nothing and returns ok false.
func (h Hints) Apply(st ast.StmtNode) (undo func(), ok bool) {
	w := extract(st)
	if len(w.tables) != len(h.tables) || len(w.stmts) != len(h.stmts) {
		return func() {}, false
	}
	for i, t := range w.tables {
		t.IndexHints = h.tables[i]
	}
	for i, p := range w.stmts {
		*p = h.stmts[i]
	}
	return w.apply, true
}

// walk is the hints a walk of a statement met, with where they were.
type walk struct {
	tables   []*ast.TableName
	tableWas [][]*ast.IndexHint
	stmts    []*[]*ast.TableOptimizerHint
	stmtWas  [][]*ast.TableOptimizerHint
}

func extract(st ast.StmtNode) *walk {
	w := &walk{}
	st.Accept(w)
	return w
}

func (w *walk) Enter(n ast.Node) (ast.Node, bool) {
	var hints *[]*ast.TableOptimizerHint
	switch x := n.(type) {
	case *ast.TableName:
		w.tables = append(w.tables, x)
		w.tableWas = append(w.tableWas, x.IndexHints)
	case *ast.SelectStmt:
		hints = &x.TableHints
	case *ast.UpdateStmt:
		hints = &x.TableHints
	case *ast.DeleteStmt:
		hints = &x.TableHints
	case *ast.InsertStmt:
		hints = &x.TableHints
	}
	if hints != nil {
		w.stmts = append(w.stmts, hints)
		w.stmtWas = append(w.stmtWas, *hints)
	}
	return n, false
}

func (w *walk) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// clear removes every hint met.
func (w *walk) clear() {
	for _, t := range w.tables {
		t.IndexHints = nil
	}
	for _, p := range w.stmts {
		*p = nil
	}
}

// apply puts back the hints met.
func (w *walk) apply() {
	for i, t := range w.tables {
		t.IndexHints = w.tableWas[i]
	}
	for i, p := range w.stmts {
		*p = w.stmtWas[i]
	}
}
