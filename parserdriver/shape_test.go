package parserdriver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestShape runs testdata/shape: each "shape" command's input is one
// statement; the output is its shape, with markString written as {s} and
// markInt as {i}, then the text of each literal marked, or "not shaped".
func TestShape(t *testing.T) {
	datadriven.RunTest(t, "testdata/shape", func(t *testing.T, d *datadriven.TestData) string {
		sql := strings.TrimSuffix(d.Input, "\n")
		shape, lits, ok := Shape(nil, nil, sql)
		if !ok {
			return "not shaped\n"
		}
		r := strings.NewReplacer(string(rune(markString)), "{s}", string(rune(markInt)), "{i}")
		var b strings.Builder
		b.WriteString(r.Replace(string(shape)) + "\n")
		for _, l := range lits {
			kind := "int"
			if l.String {
				kind = "string"
			}
			fmt.Fprintf(&b, "%s %s\n", kind, sql[l.Start:l.End])
		}
		return b.String()
	})
}
