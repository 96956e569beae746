package sqllogictest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/testkit"
	"github.com/cockroachdb/datadriven"
)

// TestParse prints the records of scripts (testdata/parse):
//
//	parse [file=NAME]    the script is testdata/NAME, or else the input
func TestParse(t *testing.T) {
	datadriven.RunTest(t, "testdata/parse", func(t *testing.T, d *datadriven.TestData) string {
		script := d.Input
		if d.HasArg("file") {
			var name string
			d.ScanArgs(t, "file", &name)
			b, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			script = string(b)
		}
		records, err := Parse(strings.NewReader(script))
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		var out strings.Builder
		for _, r := range records {
			fmt.Fprintf(&out, "line %d: ", r.Line)
			if r.Conn != "" {
				fmt.Fprintf(&out, "(on %s) ", r.Conn)
			}
			if len(r.Conditions) > 0 {
				var conds []string
				for _, c := range r.Conditions {
					conds = append(conds, c.keyword())
				}
				fmt.Fprintf(&out, "[%s] ", strings.Join(conds, " "))
			}
			switch r.Kind {
			case Halt:
				out.WriteString("halt\n")
				continue
			case File:
				fmt.Fprintf(&out, "file %s %q\n", r.Name, r.Content)
				continue
			case Statement:
				out.WriteString(map[bool]string{false: "statement ok", true: "statement error"}[r.ExpectError])
			case Query:
				fmt.Fprintf(&out, "query %s %s", r.Types, r.Sort)
				if r.Label != "" {
					fmt.Fprintf(&out, " label=%s", r.Label)
				}
			}
			out.WriteString("\n  " + strings.ReplaceAll(r.SQL, "\n", "\n  ") + "\n")
			switch {
			case r.Kind != Query:
			case r.Hash != "":
				fmt.Fprintf(&out, "  expect %d values hashing to %s\n", r.HashCount, r.Hash)
			default:
				fmt.Fprintf(&out, "  expect %v\n", r.Expected)
			}
		}
		return out.String()
	})
}

// TestParseCorpus parses every script of the corpus: the parser must
// understand all of it.
func TestParseCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 30 MB; not with -short")
	}
	root := filepath.Join(testkit.ModuleRoot(t), corpusDir)
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no corpus: %v", err)
	}
	var scripts, records int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".test") {
			return err
		}
		recs, err := ParseFile(path)
		scripts++
		records += len(recs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d scripts, %d records", scripts, records)
}
