package parserdriver

import (
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
)

func TestParseRestoresLiterals(t *testing.T) {
	p := parser.New()
	for in, want := range map[string]string{
		"SELECT 1, -2, 18446744073709551615, 1.50, 2.5e3, 'a''b', NULL, TRUE, x'4142', ?": "SELECT 1,-2,18446744073709551615,1.50,2500,'a''b',NULL,TRUE,x'4142',?",
	} {
		stmts, err := Parse(p, in)
		if err != nil {
			t.Fatalf("parse %q: %v", in, err)
		}
		var sb strings.Builder
		if err := stmts[0].Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err != nil {
			t.Fatal(err)
		}
		if sb.String() != want {
			t.Errorf("restore(%q) = %q, want %q", in, sb.String(), want)
		}
		sel := stmts[0].(*ast.SelectStmt)
		if pm, ok := sel.Fields.Fields[9].Expr.(*ParamMarkerExpr); !ok || pm.Order != 0 {
			t.Errorf("placeholder: %#v", sel.Fields.Fields[9].Expr)
		}
	}
}
