package planner_test

import (
	"runtime"
	"testing"

	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/planner"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Planning a one-row INSERT allocates for its one row, not for a bulk
// INSERT's thousands: sysbench's oltp_insert plans one per statement,
// and a fixed 140 KiB of literal constants per plan (965974f) cost a
// third of the server's CPU in allocation and garbage collection.
func TestInsertPlanBytes(t *testing.T) {
	h := newHarness(t)
	stmts, err := parserdriver.Parse(h.p, `CREATE TABLE sbtest1 (id INTEGER NOT NULL AUTO_INCREMENT,
		k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL,
		PRIMARY KEY (id), KEY k_1 (k));
		INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 5013, '68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441', '22195207048-70116052123-74140395089-76317954521-98694025897')`)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.exec(stmts[0]); err != nil {
		t.Fatal(err)
	}
	ins := stmts[1].(*ast.InsertStmt)
	c := h.context()
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := planner.BuildInsert(c, ins); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 16<<10 {
		t.Errorf("planning a one-row INSERT allocates %d bytes, want at most %d", per, 16<<10)
	} else {
		t.Logf("%d bytes per plan", per)
	}
}
