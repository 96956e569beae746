package session

import (
	"strings"

	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// sqlMode is the session's sql_mode.
func (s *Session) sqlMode() expression.SQLMode {
	v, _ := s.sysVar("sql_mode", false)
	m, _ := expression.ParseSQLMode(v.Str())
	return m
}

// readsDiagnostics reports SELECT @@warning_count and @@error_count,
// which read the previous statement's warnings and so keep them, as
// SHOW WARNINGS does.
func readsDiagnostics(st ast.StmtNode) bool {
	sel, ok := st.(*ast.SelectStmt)
	if !ok || sel.From != nil || sel.Fields == nil {
		return false
	}
	for _, f := range sel.Fields.Fields {
		v, ok := f.Expr.(*ast.VariableExpr)
		if !ok || !v.IsSystem {
			return false
		}
		if n := strings.ToLower(v.Name); n != "warning_count" && n != "error_count" {
			return false
		}
	}
	return true
}
