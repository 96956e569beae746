package executor

import (
	"sync/atomic"
	"testing"

	"github.com/basalt-db/basalt/catalog"
)

// TestSpareWriter: an INSERT plan that runs again takes the Writer its
// last execution put back, one statement at a time; a second taker, or
// a plan of another table, gets a new one.
func TestSpareWriter(t *testing.T) {
	ta := &catalog.TableInfo{ID: 1, Columns: []*catalog.ColumnInfo{{ID: 1, Name: "a"}}}
	tb := &catalog.TableInfo{ID: 2, Columns: []*catalog.ColumnInfo{{ID: 1, Name: "a"}}}
	var slot atomic.Value
	w1 := takeSpareWriter(&slot, ta)
	putSpareWriter(&slot, w1)
	if w := takeSpareWriter(&slot, ta); w != w1 {
		t.Fatalf("second execution got a new Writer, want the one put back")
	}
	w2 := takeSpareWriter(&slot, ta)
	if w2 == w1 {
		t.Fatalf("a Writer in use was handed out again")
	}
	putSpareWriter(&slot, w2)
	if w := takeSpareWriter(&slot, tb); w == w2 || w.Table() != tb {
		t.Fatalf("a plan of another table got a Writer of %v", w.Table().ID)
	}
}
