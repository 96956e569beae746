package ddl_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// splitStore is a store with regions as far as DDL can tell: it records
// the keys it is asked to split at, and fails with fail.
type splitStore struct {
	kv.Storage
	keys [][]byte
	fail error
}

func (s *splitStore) SplitRegions(_ context.Context, keys [][]byte) error {
	s.keys = append(s.keys, keys...)
	return s.fail
}

// TestSplitTable: with SplitTable (split-table) on a store with regions,
// CREATE TABLE and TRUNCATE TABLE split at the new table's first key, a
// CREATE TABLE IF NOT EXISTS of an existing table splits nothing, and a
// failed split leaves the table made; with SplitTable off nothing splits.
func TestSplitTable(t *testing.T) {
	ctx := context.Background()
	base, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	st := &splitStore{Storage: base}
	cat, err := catalog.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	d := &ddl.DDL{Store: st, Catalog: cat, Wait: func(context.Context, int64) error { return nil }, SplitTable: true}
	p := parser.New()
	run := func(sql string) {
		t.Helper()
		n, err := p.ParseOneStmt(sql, "", "")
		if err != nil {
			t.Fatal(err)
		}
		switch s := n.(type) {
		case *ast.CreateTableStmt:
			err = d.CreateTable(ctx, catalog.DefaultDB, s)
		case *ast.TruncateTableStmt:
			err = d.TruncateTable(ctx, catalog.DefaultDB, s.Table)
		}
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	id := func(name string) int64 { return cat.InfoSchema().Table(catalog.DefaultDB, name).ID }
	want := func(what string, ids ...int64) {
		t.Helper()
		var keys [][]byte
		for _, id := range ids {
			keys = append(keys, tablecodec.TablePrefix(id))
		}
		if len(st.keys) != len(keys) {
			t.Fatalf("%s: split at %d keys %x, want %x", what, len(st.keys), st.keys, keys)
		}
		for i := range keys {
			if !bytes.Equal(st.keys[i], keys[i]) {
				t.Fatalf("%s: split at %x, want %x", what, st.keys, keys)
			}
		}
	}

	run("CREATE TABLE t (id INT PRIMARY KEY, v INT, KEY (v))")
	t1 := id("t")
	want("create", t1)
	run("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY)")
	want("create if not exists", t1)
	run("TRUNCATE TABLE t")
	t2 := id("t")
	want("truncate", t1, t2)

	st.fail = errors.New("no leader")
	run("CREATE TABLE u (id INT PRIMARY KEY)")
	want("a failed split", t1, t2, id("u"))

	d.SplitTable = false
	run("CREATE TABLE w (id INT PRIMARY KEY)")
	run("TRUNCATE TABLE w")
	want("split-table off", t1, t2, id("u"))
}
