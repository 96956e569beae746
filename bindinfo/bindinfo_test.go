package bindinfo_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/bindinfo"
	_ "github.com/basalt-db/basalt/parserdriver" // the parser's literal values
	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// TestBindinfo runs testdata/bindinfo:
//
//	normalize [db=D]      the input statement's normalized text and the
//	                      start of its digest
//	apply [db=D]          the first statement with the hints of the second
//	                      (one per line) put in place, restored; then the
//	                      first restored again after undo
func TestBindinfo(t *testing.T) {
	datadriven.RunTest(t, "testdata/bindinfo", func(t *testing.T, d *datadriven.TestData) string {
		db := ""
		if d.HasArg("db") {
			d.ScanArgs(t, "db", &db)
		}
		p := parser.New()
		parse := func(sql string) ast.StmtNode {
			st, err := p.ParseOneStmt(sql, "", "")
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			return st
		}
		switch d.Cmd {
		case "normalize":
			st := parse(d.Input)
			before := bindinfo.Restore(st, db)
			n, digest := bindinfo.Normalize(st, db)
			if after := bindinfo.Restore(st, db); after != before {
				return fmt.Sprintf("Normalize changed the statement: %s", after)
			}
			return fmt.Sprintf("%s\ndigest %s...\n", n, digest[:16])
		case "apply":
			lines := strings.SplitN(d.Input, "\n", 2)
			st, hinted := parse(lines[0]), parse(lines[1])
			undo, ok := bindinfo.HintsOf(hinted).Apply(st)
			applied := bindinfo.Restore(st, db)
			undo()
			return fmt.Sprintf("ok: %v\n%s\n%s\n", ok, applied, bindinfo.Restore(st, db))
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}
