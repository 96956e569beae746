package catalog

import (
	"context"
	"testing"

	"github.com/basalt-db/basalt/store/local"
)

// Auto-increment values never repeat, across explicit values (rebase) and
// restarts.
func TestAutoIDNeverRepeats(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	tbl := &TableInfo{ID: 100, Name: "t"}
	seen := map[int64]bool{}
	take := func(c *Catalog, n int) {
		for range n {
			v, err := c.AllocAutoID(ctx, tbl, 1)
			if err != nil {
				t.Fatal(err)
			}
			if seen[v] {
				t.Fatalf("auto-increment value %d handed out twice", v)
			}
			seen[v] = true
		}
	}
	for restart := range 3 {
		st, err := local.Open(dir, local.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Open(st)
		if err != nil {
			t.Fatal(err)
		}
		// An explicit value below what was handed out before the restart
		// must not rewind the counter.
		if err := c.RebaseAutoID(ctx, tbl, int64(10*restart+5)); err != nil {
			t.Fatal(err)
		}
		take(c, 1500)
		// An explicit value above moves the next value past it.
		hi := int64(100000 * (restart + 1))
		if err := c.RebaseAutoID(ctx, tbl, hi); err != nil {
			t.Fatal(err)
		}
		seen[hi] = true
		v, err := c.AllocAutoID(ctx, tbl, 1)
		if err != nil {
			t.Fatal(err)
		}
		if v <= hi || seen[v] {
			t.Fatalf("after rebase to %d got %d", hi, v)
		}
		seen[v] = true
		st.Close()
	}
}
