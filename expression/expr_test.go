package expression

import (
	"testing"

	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

func build(t testing.TB, sql string, schema *Schema) Expr {
	stmts, err := parserdriver.Parse(parser.New(), "SELECT "+sql)
	if err != nil {
		t.Fatal(err)
	}
	e, err := (&Builder{Schema: schema, Clause: "field list"}).Build(stmts[0].(*ast.SelectStmt).Fields.Fields[0].Expr)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var testSchema = &Schema{Cols: []SchemaCol{{Name: "id", Tp: typeInt}, {Name: "c", Tp: typeString}}}

// Nested calls share the scratch stack without clobbering each other's
// arguments.
func TestNestedEval(t *testing.T) {
	row := []types.Datum{types.NewInt(7), types.NewString("ab")}
	ctx := &Ctx{}
	for sql, want := range map[string]string{
		"id BETWEEN 5 AND 9":                       "1",
		"(id + 1) * (id - 1) = 48":                 "1",
		"CONCAT(c, CONCAT(c, 'x'), UPPER(c))":      "ababxAB",
		"CASE WHEN id > 5 THEN id * 2 ELSE 0 END":  "14",
		"id IN (1, 2, id + 0) AND NOT (c IS NULL)": "1",
	} {
		got, err := build(t, sql, testSchema).Eval(ctx, row)
		if err != nil || got.String() != want {
			t.Errorf("%s = %v, %v; want %s", sql, got, err, want)
		}
		if len(ctx.scratch) != 0 {
			t.Errorf("%s left %d values on the scratch stack", sql, len(ctx.scratch))
		}
	}
}

func BenchmarkEvalBetween(b *testing.B) {
	e := build(b, "id BETWEEN 5 AND 9", testSchema)
	row := []types.Datum{types.NewInt(7), types.NewString("ab")}
	ctx := &Ctx{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EvalBool(ctx, e, row); err != nil {
			b.Fatal(err)
		}
	}
}
