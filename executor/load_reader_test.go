package executor

import (
	"strings"
	"testing"
	"testing/iotest"

	"github.com/basalt-db/basalt/planner"
)

// TestLoadReader cuts inputs into lines of fields. The SQL behaviour of
// LOAD DATA, compared with MariaDB, is in session/testdata/loaddata.test;
// these are the reader's edge cases, each also read one byte at a time (as
// a slow client's packets arrive).
func TestLoadReader(t *testing.T) {
	tsv := planner.LoadFormat{FieldsTerminated: "\t", Escaped: '\\', LinesTerminated: "\n"}
	csv := planner.LoadFormat{FieldsTerminated: ",", Enclosed: '"', Escaped: '\\', LinesTerminated: "\r\n"}
	multi := planner.LoadFormat{FieldsTerminated: "::", LinesStarting: ">>", LinesTerminated: "##"}
	anyNL := planner.LoadFormat{FieldsTerminated: ",", Enclosed: '"', Escaped: '\\', LinesTerminated: "\n", AnyNewline: true}
	for _, c := range []struct {
		f    planner.LoadFormat
		in   string
		want string // lines joined by " / ", fields by "|", NULL as <null>
	}{
		{tsv, "", ""},
		{tsv, "a\tb\n", "a|b"},
		{tsv, "a\tb", "a|b"}, // no final terminator
		{tsv, "\n\n", " / "}, // empty lines: one empty field each
		{tsv, "a\t\n", "a|"},
		{tsv, "\\N\t\\Nx\tNULL\n", "<null>|Nx|NULL"},
		{tsv, "a\\tb\\\tc\\\\\n", "a\tb\tc\\"},
		{tsv, "a\\", "a\\"}, // an escape at the very end is itself
		{csv, "\"a,b\",\"c\"\"d\",NULL,\"NULL\"\r\n", "a,b|c\"d|<null>|NULL"},
		// A quote not before a terminator is data, and the field goes on
		// to the next quote that is (here the end), as in MySQL's
		// read_field; MariaDB keeps the opening quote too.
		{csv, "\"a\"b,c\r\nx\r\n", "a\"b,c\r\nx\r\n"},
		{csv, "\"multi\nline\",2\r\n", "multi\nline|2"},
		{csv, "a\nb,c\r\n", "a\nb|c"},
		{multi, "junk>>1::2##no prefix##>>3:4##", "1|2 / 3:4"},
		{multi, ">>a::b#", "a|b#"},
		// IMPORT INTO's default: \n, \r\n and \r all end a line.
		{anyNL, "a,b\r\nc,\"d\"\re,f\ng\r", "a|b / c|d / e|f / g"},
		{anyNL, "\"x\r\ny\"\r\n", "x\r\ny"},
		{anyNL, "a\r", "a"},
	} {
		for _, oneByte := range []bool{false, true} {
			in := strings.NewReader(c.in)
			r := NewLoadReader(in, c.f)
			if oneByte {
				r = NewLoadReader(iotest.OneByteReader(strings.NewReader(c.in)), c.f)
			}
			var lines []string
			for {
				fields, err := r.Next()
				if err != nil {
					t.Fatalf("%q: %v", c.in, err)
				}
				if fields == nil {
					break
				}
				var fs []string
				for _, f := range fields {
					if f.Null {
						fs = append(fs, "<null>")
					} else {
						fs = append(fs, string(f.Value))
					}
				}
				lines = append(lines, strings.Join(fs, "|"))
			}
			if got := strings.Join(lines, " / "); got != c.want {
				t.Errorf("%q (one byte at a time: %t): got %q, want %q", c.in, oneByte, got, c.want)
			}
		}
	}
}
