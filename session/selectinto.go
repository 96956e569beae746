package session

// User variables filled by queries: SET @x = (SELECT ...) and
// SELECT ... INTO @x, @y.
//
// TiDB's grammar has no INTO @var, so cutSelectInto lifts the clause out of
// the text before parsing and the statement runs as a selectInto: the query
// must give at most one row (1172), of as many columns as variables (1222);
// no row leaves the variables as they were, with warning 1329.

import (
	"context"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// selectInto is a query whose row goes to user variables.
type selectInto struct {
	ast.StmtNode // *ast.SelectStmt or *ast.SetOprStmt
	vars         []string
}

// parseWithInto parses sql whose plain parse failed with perr, after
// lifting its INTO @var clauses; it returns perr when that does not help.
func (s *Session) parseWithInto(sql string, perr error) ([]ast.StmtNode, string, error) {
	cut, into, ok := cutSelectInto(sql)
	if !ok {
		return nil, "", perr
	}
	stmts, _, err := s.parser.ParseSQL(cut)
	if err != nil || len(stmts) != into.statements {
		return nil, "", perr
	}
	for i, vars := range into.vars {
		if !isQuery(stmts[i]) {
			return nil, "", perr
		}
		stmts[i] = &selectInto{StmtNode: stmts[i], vars: vars}
	}
	return stmts, cut, nil
}

// intoClauses is what cutSelectInto found: the variables of each
// statement (by index) that had INTO @..., and how many statements the
// text holds.
type intoClauses struct {
	vars       map[int][]string
	statements int
}

// cutSelectInto removes each top-level "INTO @a[, @b ...]" from sql. It
// reads quotes and comments so as not to look inside them, and counts the
// non-empty statements between semicolons.
func cutSelectInto(sql string) (string, intoClauses, bool) {
	into := intoClauses{vars: map[int][]string{}}
	var out strings.Builder
	last, depth, content := 0, 0, false
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(sql, i) + 1
			content = true
		case c == '#' || (c == '-' && strings.HasPrefix(sql[i:], "--") && (i+2 == len(sql) || sql[i+2] <= ' ')):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(sql)
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(sql)
			}
		case c == '(':
			depth++
			i++
			content = true
		case c == ')':
			depth--
			i++
		case c == ';' && depth == 0:
			if content {
				into.statements++
			}
			content = false
			i++
		case isIdentByte(c):
			j := i
			for j < len(sql) && isIdentByte(sql[j]) {
				j++
			}
			content = true
			if depth == 0 && strings.EqualFold(sql[i:j], "into") {
				if vars, end, ok := readVarList(sql, j); ok {
					into.vars[into.statements] = vars
					out.WriteString(sql[last:i])
					out.WriteByte(' ')
					last = end
					j = end
				}
			}
			i = j
		default:
			i++
		}
	}
	if content {
		into.statements++
	}
	if len(into.vars) == 0 {
		return "", into, false
	}
	out.WriteString(sql[last:])
	return out.String(), into, true
}

// readVarList reads "@a, @b" after INTO, from i; it returns the names
// (lowercased: user variables ignore case) and where the list ends.
func readVarList(sql string, i int) ([]string, int, bool) {
	var vars []string
	for {
		for i < len(sql) && sql[i] <= ' ' {
			i++
		}
		if i+1 >= len(sql) || sql[i] != '@' || sql[i+1] == '@' {
			return nil, 0, false
		}
		i++
		var name string
		if q := sql[i]; q == '\'' || q == '"' || q == '`' {
			j := skipQuoted(sql, i)
			if j == len(sql)-1 && (j == i || sql[j] != q) {
				return nil, 0, false
			}
			name = strings.ReplaceAll(sql[i+1:j], string([]byte{q, q}), string(q))
			i = j + 1
		} else {
			j := i
			for j < len(sql) && (isIdentByte(sql[j]) || sql[j] == '.') {
				j++
			}
			if j == i {
				return nil, 0, false
			}
			name, i = sql[i:j], j
		}
		vars = append(vars, strings.ToLower(name))
		j := i
		for j < len(sql) && sql[j] <= ' ' {
			j++
		}
		if j < len(sql) && sql[j] == ',' {
			i = j + 1
			continue
		}
		return vars, i, true
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// execSelectInto runs a SELECT ... INTO @vars.
func (s *Session) execSelectInto(ctx context.Context, x *selectInto, params []types.Datum) (Result, error) {
	var data [][]types.Datum
	err := s.runQuery(ctx, x.StmtNode.(ast.ResultSetNode), params, func(q *planner.Query) error {
		if len(q.Fields) != len(x.vars) {
			return errno.New(errno.ErWrongNumberOfColumnsInSelect, "The used SELECT statements have a different number of columns")
		}
		return nil
	}, &data)
	if err != nil {
		return Result{}, err
	}
	switch {
	case len(data) > 1:
		return Result{}, errno.New(errno.ErTooManyRows, "Result consisted of more than one row")
	case len(data) == 0:
		s.warnings = append(s.warnings, errno.New(errno.ErSpFetchNoData, "No data - zero rows fetched, selected, or processed"))
		return Result{}, nil
	}
	for i, name := range x.vars {
		s.userVars[name] = data[0][i].Clone()
	}
	return Result{AffectedRows: 1}, nil
}

// evalWithSubquery evaluates an expression that holds a subquery (SET @x =
// (SELECT ...)) as the one column of SELECT expr.
func (s *Session) evalWithSubquery(ctx context.Context, e ast.ExprNode) (types.Datum, error) {
	sel := &ast.SelectStmt{
		SelectStmtOpts: &ast.SelectStmtOpts{SQLCache: true},
		Kind:           ast.SelectStmtKindSelect,
		Fields:         &ast.FieldList{Fields: []*ast.SelectField{{Expr: e}}},
	}
	var data [][]types.Datum
	if err := s.runQuery(ctx, sel, nil, nil, &data); err != nil {
		return types.Null, err
	}
	if len(data) == 0 {
		return types.Null, nil
	}
	return data[0][0], nil
}

// runQuery runs a query inside the session to its end and gives its rows
// to *data. check, if not nil, sees the plan before it runs.
func (s *Session) runQuery(ctx context.Context, node ast.ResultSetNode, params []types.Datum, check func(*planner.Query) error, data *[][]types.Datum) error {
	is, release, err := s.pinStmt()
	if err != nil {
		return err
	}
	defer release()
	s.stmtIS = is
	q, err := planner.BuildQuery(s.planContext(), node)
	s.stmtIS = nil
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(q); err != nil {
			return err
		}
	}
	reader, ts, err := s.readView(ctx, false, true)
	if err != nil {
		return err
	}
	eval := s.evalCtx(ctx, params)
	ec := &executor.Ctx{Context: ctx, Eval: eval, Reader: reader, ForUpdateTS: ts,
		LockWait: s.lockWait(), Catalog: s.d.catalog, MemTable: s.memTableRows, Mem: s.stmtMem(nil)}
	executor.BindSubqueries(ec)
	*data, err = drain(ec, q.Plan)
	s.warnings = append(s.warnings, eval.Warnings...)
	return err
}

// hasSubquery reports whether e holds a subquery.
func hasSubquery(e ast.ExprNode) bool {
	v := &subqueryFinder{}
	e.Accept(v)
	return v.found
}

type subqueryFinder struct{ found bool }

func (v *subqueryFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr:
		v.found = true
	}
	return n, v.found
}
func (v *subqueryFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func (s *Session) selectIntoStmt(ctx context.Context, x *selectInto, a stmtArgs) (Result, error) {
	return s.execSelectInto(ctx, x, a.params)
}
