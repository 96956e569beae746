package expression_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/scripttest"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// TestEval runs the scripts in testdata/: SQL expressions in, their value
// and type out. The command:
//
//	eval [mode=none|mode=(MODE,...)] [tz=ZONE] [write]
//
// takes one expression per line, parses it as "SELECT <expr>", builds it
// with a Builder over no columns and evaluates it over no row. It prints
//
//	<expr> => <value> (<kind>, <type>)
//
// where the value is as the text protocol sends it (strings Go-quoted),
// the kind is the Datum's and the type is the expression's field type;
// or <expr> => <error>; then each warning the evaluation recorded.
//
// mode is the sql_mode (MySQL 8's default unless given); tz the session's
// time_zone (+00:00 unless given); write evaluates as in an INSERT or
// UPDATE, where strict modes turn some warnings into errors. The
// statement's clock reads 2024-02-29 13:14:15.123456 UTC. Rewrite the
// expected output with -rewrite.
func TestEval(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		p := parser.New()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if td.Cmd != "eval" {
				t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			}
			ctx := evalCtx(t, td)
			var out strings.Builder
			for _, line := range strings.Split(td.Input, "\n") {
				if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				fmt.Fprintf(&out, "%s => %s\n", line, eval(t, p, ctx, line))
				for _, w := range ctx.Warnings {
					fmt.Fprintf(&out, "  warning %d: %s\n", w.Code, w.Msg)
				}
				ctx.Warnings = nil
			}
			return out.String()
		})
	})
}

// defaultSQLMode is MySQL 8's default sql_mode, as sessions start with.
const defaultSQLMode = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

var testNow = time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)

func evalCtx(t *testing.T, td *datadriven.TestData) *expression.Ctx {
	modeText := defaultSQLMode
	if arg, ok := td.Arg("mode"); ok {
		modeText = strings.Join(arg.Vals, ",")
		if modeText == "none" {
			modeText = ""
		}
	}
	mode, err := expression.ParseSQLMode(modeText)
	if err != nil {
		t.Fatalf("%s: %v", td.Pos, err)
	}
	sess := &session{tz: "+00:00"}
	if arg, ok := td.Arg("tz"); ok {
		sess.tz = arg.SingleVal(t)
	}
	return &expression.Ctx{Now: testNow, Session: sess, Mode: mode, Strict: mode.Strict(), InWrite: td.HasArg("write")}
}

// eval builds and evaluates one expression.
func eval(t *testing.T, p *parser.Parser, ctx *expression.Ctx, sql string) string {
	stmts, err := parserdriver.Parse(p, "SELECT "+sql)
	if err != nil {
		return "parse error: " + err.Error()
	}
	sel, ok := stmts[0].(*ast.SelectStmt)
	if !ok || len(stmts) != 1 || len(sel.Fields.Fields) != 1 {
		t.Fatalf("%q is not one expression", sql)
	}
	e, err := (&expression.Builder{Clause: "field list"}).Build(sel.Fields.Fields[0].Expr)
	if err != nil {
		return scripttest.Err(err)
	}
	d, err := e.Eval(ctx, nil)
	if err != nil {
		return scripttest.Err(err)
	}
	return fmt.Sprintf("%s (%s, %s)", scripttest.Value(d), d.Kind(), scripttest.Type(e.Type()))
}

// session is what the functions that read the session see.
type session struct{ tz string }

func (s *session) CurrentDB() string                  { return "test" }
func (s *session) User() string                       { return "root@localhost" }
func (s *session) ConnectionID() uint64               { return 7 }
func (s *session) LastInsertID() uint64               { return 0 }
func (s *session) FoundRows() uint64                  { return 0 }
func (s *session) RowCount() int64                    { return -1 }
func (s *session) UserVar(string) (types.Datum, bool) { return types.Null, false }

func (s *session) SysVar(name string, _ bool) (types.Datum, error) {
	if strings.EqualFold(name, "time_zone") {
		return types.NewString(s.tz), nil
	}
	return types.Null, errno.New(errno.ErUnknownSystemVariable, "Unknown system variable '%s'", name)
}
