package executor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// sysbenchC is a value of sysbench's c column: ten groups of eleven digits.
func sysbenchC(r *rand.Rand) types.Datum {
	var b []byte
	for g := range 10 {
		if g > 0 {
			b = append(b, '-')
		}
		b = fmt.Appendf(b, "%011d", r.Int64N(1e11))
	}
	return types.NewCollatedBytes(b, types.CollationGeneralCI)
}

// sliceExec returns its rows.
type sliceExec struct{ rowsExec }

func (e *sliceExec) Open(*Ctx) error { e.pos = 0; return nil }

// sortRows sorts rows by items through a sortExec.
func sortRows(t testing.TB, rows [][]types.Datum, items []planner.SortItem) [][]types.Datum {
	e := &sortExec{child: &sliceExec{rowsExec{rows: rows}}, items: items}
	ctx := &Ctx{Context: context.Background()}
	out, err := Drain(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSortStable: ORDER BY keeps rows of equal keys in their input order
// (as the tests of ORDER BY ... LIMIT rely on), ascending and descending,
// on one key and on two, one of them computed.
func TestSortStable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var rows [][]types.Datum
	for i := range 500 {
		rows = append(rows, []types.Datum{types.NewInt(r.Int64N(7)), types.NewString(fmt.Sprint(r.IntN(3))), types.NewInt(int64(i))})
	}
	col := func(i int) expression.Expr { return &expression.Column{Idx: i} }
	for _, items := range [][]planner.SortItem{
		{{Expr: col(0)}},
		{{Expr: col(0), Desc: true}},
		{{Expr: col(1)}, {Expr: col(0), Desc: true}},
	} {
		got := sortRows(t, slices.Clone(rows), items)
		want := slices.Clone(rows)
		slices.SortStableFunc(want, func(a, b []types.Datum) int {
			for _, it := range items {
				i := it.Expr.(*expression.Column).Idx
				if c := types.Compare(a[i], b[i]); c != 0 {
					if it.Desc {
						return -c
					}
					return c
				}
			}
			return 0
		})
		for i := range want {
			if got[i][2].Int() != want[i][2].Int() {
				t.Fatalf("items %v: row %d is input row %d, want %d", items, i, got[i][2].Int(), want[i][2].Int())
			}
		}
	}
}

// BenchmarkSortSysbench sorts what sysbench's order_ranges sorts: 100 rows
// of c by c.
func BenchmarkSortSysbench(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([][]types.Datum, 100)
	for i := range rows {
		rows[i] = []types.Datum{sysbenchC(r)}
	}
	items := []planner.SortItem{{Expr: &expression.Column{Idx: 0}}}
	b.ReportAllocs()
	for b.Loop() {
		sortRows(b, rows, items)
	}
}

// TestSortAbbreviatedKeys: strings that share their first characters,
// differ in case, accent or trailing spaces, sort as types.Compare orders
// them, stably, both ways: on one collation (abbreviated keys), and with
// a NULL or a second collation among them (full comparisons only).
func TestSortAbbreviatedKeys(t *testing.T) {
	parts := []string{"abcd", "ABCD", "é", "e", " ", "x", "ß", "s", "😀", "\t"}
	r := rand.New(rand.NewPCG(3, 4))
	mk := func(c types.Collation) [][]types.Datum {
		var rows [][]types.Datum
		for i := range 300 {
			var b []byte
			for range 1 + r.IntN(4) {
				b = append(b, parts[r.IntN(len(parts))]...)
			}
			rows = append(rows, []types.Datum{types.NewCollatedBytes(b, c), types.NewInt(int64(i))})
		}
		return rows
	}
	withNull := mk(types.CollationGeneralCI)
	withNull[17][0] = types.Null
	mixed := mk(types.CollationGeneralCI)
	mixed[5][0] = types.NewCollatedBytes(mixed[5][0].Bytes(), types.CollationBin)
	for name, rows := range map[string][][]types.Datum{
		"general_ci": mk(types.CollationGeneralCI), "bin": mk(types.CollationBin),
		"nopad_bin": mk(types.CollationNoPadBin), "binary": mk(types.CollationBinary),
		"with NULL": withNull, "mixed collations": mixed,
	} {
		for _, desc := range []bool{false, true} {
			items := []planner.SortItem{{Expr: &expression.Column{Idx: 0}, Desc: desc}}
			got := sortRows(t, slices.Clone(rows), items)
			want := slices.Clone(rows)
			slices.SortStableFunc(want, func(a, b []types.Datum) int {
				if desc {
					return types.Compare(b[0], a[0])
				}
				return types.Compare(a[0], b[0])
			})
			for i := range want {
				if got[i][1].Int() != want[i][1].Int() {
					t.Fatalf("%s desc=%v: row %d is input row %d (%q), want %d (%q)", name, desc, i,
						got[i][1].Int(), got[i][0].Bytes(), want[i][1].Int(), want[i][0].Bytes())
				}
			}
		}
	}
}
