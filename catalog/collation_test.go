package catalog

import (
	"context"
	"testing"

	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Tables stored before Basalt had collations have no collation on their
// text columns; loading them gives those columns utf8mb4_nopad_bin, which
// compares (and keys) as the bytes they were indexed by.
func TestLegacyTablesCompareBytes(t *testing.T) {
	dir := t.TempDir()
	st, err := local.Open(dir, local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	legacy := &TableInfo{ID: 1000, Name: "old", Columns: []*ColumnInfo{
		{ID: 1, Name: "v", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 10, Charset: "utf8mb4"}},
		{ID: 2, Name: "b", Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 10, Charset: "binary", Collate: "binary"}},
		{ID: 3, Name: "n", Type: types.FieldType{Tp: mysql.TypeLong}},
		{ID: 4, Name: "c", Offset: 3, Type: types.FieldType{Tp: mysql.TypeVarchar, Flen: 10, Charset: "utf8mb4", Collate: "utf8mb4_general_ci"}},
	}}
	err = c.RunDDL(context.Background(), func(m *Meta, is *InfoSchema) error {
		db := is.DB(DefaultDB)
		legacy.DBID = db.ID
		is.PutTable(db, legacy)
		return m.PutTable(legacy)
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = local.Open(dir, local.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if c, err = Open(st); err != nil {
		t.Fatal(err)
	}
	got := c.InfoSchema().Table(DefaultDB, "old")
	if got == nil {
		t.Fatal("table lost")
	}
	want := []types.Collation{types.CollationNoPadBin, types.CollationBinary, types.CollationGeneralCI, types.CollationGeneralCI}
	for i, col := range got.Columns {
		if c := col.Type.Collation(); c != want[i] {
			t.Errorf("column %s: collation %d (%q), want %d", col.Name, c, col.Type.Collate, want[i])
		}
	}
	if got.Columns[2].Type.Collate != "" {
		t.Error("a number column got a collation")
	}
}
