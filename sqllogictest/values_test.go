package sqllogictest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestValues checks rendering, sorting and hashing (testdata/values):
//
//	render               input lines "TYPE TEXT"
//	text                 input lines "KIND VALUE", KIND a Go type the driver returns
//	sort mode=M cols=N   input: rows of space-separated values
//	hash                 input: one value per line
func TestValues(t *testing.T) {
	datadriven.RunTest(t, "testdata/values", func(t *testing.T, d *datadriven.TestData) string {
		lines := strings.Split(d.Input, "\n")
		var out strings.Builder
		switch d.Cmd {
		case "render":
			for _, line := range lines {
				typ, text, _ := strings.Cut(line, " ")
				null := text == "<null>"
				if text == "<empty>" {
					text = ""
				}
				fmt.Fprintf(&out, "%s -> %s\n", line, render(text, null, typ[0]))
			}
		case "text":
			for _, line := range lines {
				text, null := valueText(driverValue(t, line))
				if null {
					text = "NULL"
				}
				fmt.Fprintf(&out, "%s -> %s\n", line, text)
			}
		case "sort":
			var mode string
			var cols int
			d.ScanArgs(t, "mode", &mode)
			d.ScanArgs(t, "cols", &cols)
			values := strings.Fields(d.Input)
			sortValues(values, cols, SortMode(mode))
			for i := 0; i < len(values); i += cols {
				fmt.Fprintln(&out, strings.Join(values[i:i+cols], " "))
			}
		case "hash":
			return hashValues(lines) + "\n"
		default:
			t.Fatalf("unknown command %q", d.Cmd)
		}
		return out.String()
	})
}

// driverValue makes the value "KIND VALUE" describes.
func driverValue(t *testing.T, line string) any {
	kind, s, _ := strings.Cut(line, " ")
	var v any
	var err error
	switch kind {
	case "nil":
	case "bytes":
		v = []byte(s)
	case "int64":
		v, err = strconv.ParseInt(s, 10, 64)
	case "uint64":
		v, err = strconv.ParseUint(s, 10, 64)
	case "float32":
		var f float64
		f, err = strconv.ParseFloat(s, 32)
		v = float32(f)
	case "float64":
		v, err = strconv.ParseFloat(s, 64)
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}
