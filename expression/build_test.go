package expression

import (
	"testing"

	"github.com/basalt-db/basalt/parserdriver"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Constants cuts its blocks to the literals Expect announced: a one-row
// INSERT of three literals allocates three constants, not a block of
// constantsBlock (~140 KiB, most of an INSERT's allocation and GC work
// under sysbench's oltp_insert). Without Expect, and past what it
// announced, blocks are constantsBlock long.
func TestConstantsExpect(t *testing.T) {
	stmts, err := parserdriver.Parse(parser.New(), "SELECT 1, 'a', 2.5")
	if err != nil {
		t.Fatal(err)
	}
	var lits []ast.ExprNode
	for _, f := range stmts[0].(*ast.SelectStmt).Fields.Fields {
		lits = append(lits, f.Expr)
	}
	b := &Builder{Clause: "field list"}
	for _, tc := range []struct {
		expect int   // 0: Expect not called
		builds int   // literals built
		blocks []int // the length of each block allocated, in order
	}{
		{expect: 3, builds: 3, blocks: []int{3}},
		{expect: 1, builds: 1, blocks: []int{1}},
		{expect: 2, builds: 4, blocks: []int{2, constantsBlock}},
		{expect: 3000, builds: 3000, blocks: []int{constantsBlock, constantsBlock, 3000 - 2*constantsBlock}},
		{expect: 0, builds: 2, blocks: []int{constantsBlock}},
	} {
		var cs Constants
		if tc.expect > 0 {
			cs.Expect(tc.expect)
		}
		var blocks []int
		for i := range tc.builds {
			if len(cs.free) == 0 {
				blocks = append(blocks, -1) // a block is due: its length below
			}
			e, err := cs.Build(b, lits[i%len(lits)])
			if err != nil {
				t.Fatal(err)
			}
			if blocks[len(blocks)-1] == -1 {
				blocks[len(blocks)-1] = cap(cs.free) + 1
			}
			if got := e.(*Constant); got.Value.String() != lits[i%len(lits)].(*parserdriver.ValueExpr).Datum.String() {
				t.Errorf("literal %d: %v", i, got.Value)
			}
		}
		if len(blocks) != len(tc.blocks) {
			t.Errorf("Expect(%d), %d literals: blocks %v, want %v", tc.expect, tc.builds, blocks, tc.blocks)
			continue
		}
		for i := range blocks {
			if blocks[i] != tc.blocks[i] {
				t.Errorf("Expect(%d), %d literals: blocks %v, want %v", tc.expect, tc.builds, blocks, tc.blocks)
				break
			}
		}
	}
}
