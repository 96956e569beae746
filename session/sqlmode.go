package session

import (
	"strings"
	"sync"

	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// parsedModes caches sql_mode strings' flags: sessions share a few values.
var parsedModes sync.Map // string → expression.SQLMode

// sqlMode is the session's sql_mode.
func (s *Session) sqlMode() expression.SQLMode { return s.hotVar().sqlMode }

// readSQLMode reads sql_mode: its flags and its text.
func (s *Session) readSQLMode() (expression.SQLMode, string) {
	v, _ := s.sysVar("sql_mode", false)
	str := v.Str()
	if m, ok := parsedModes.Load(str); ok {
		return m.(expression.SQLMode), str
	}
	m, _ := expression.ParseSQLMode(str)
	parsedModes.Store(str, m)
	return m, str
}

// syncParserMode gives the parser the session's sql_mode, for the modes
// that change how SQL reads: PIPES_AS_CONCAT, ANSI_QUOTES,
// NO_BACKSLASH_ESCAPES, HIGH_NOT_PRECEDENCE, IGNORE_SPACE. It reads
// sql_mode from the hot variables (a SET of it, session or global, makes
// them read again), not from the variables' map at every statement.
func (s *Session) syncParserMode() {
	str := s.hotVar().sqlModeText
	if str == s.parserMode {
		return
	}
	s.parserMode = str
	m, err := mysql.GetSQLMode(str)
	if err != nil {
		m = 0
	}
	s.parser.SetSQLMode(m)
	s.parserSQLMode = m
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
