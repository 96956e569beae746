package catalog

import (
	"context"
	"testing"

	"github.com/basalt-db/basalt/store/local"
)

// ReferredBy answers for the schema as it is: a change made after a
// first call (in the same schema being changed, or a later version)
// shows, and a reloaded catalog finds the constraints stored with the
// child tables.
func TestReferredByFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := local.Open(dir, local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	pk := []IndexColumn{{Name: "id", Length: -1}}
	parent := &TableInfo{ID: 100, Name: "P", Columns: []*ColumnInfo{{ID: 1, Name: "id"}},
		Indexes: []*IndexInfo{{ID: 1, Name: "PRIMARY", Primary: true, Unique: true, Columns: pk}}}
	child := func(id int64, name, fk string) *TableInfo {
		return &TableInfo{ID: id, Name: name, Columns: []*ColumnInfo{{ID: 1, Name: "pid"}},
			ForeignKeys: []*FKInfo{{ID: 1, Name: fk, Cols: []string{"pid"}, RefSchema: "TEST", RefTable: "p", RefCols: []string{"id"}}}}
	}
	err = c.RunDDL(ctx, func(m *Meta, is *InfoSchema) error {
		db := is.DB(DefaultDB)
		for _, tb := range []*TableInfo{parent, child(101, "c1", "z_fk")} {
			tb.DBID = db.ID
			is.PutTable(db, tb)
			if err := m.PutTable(tb); err != nil {
				return err
			}
		}
		if got := len(is.ReferredBy("test", "P")); got != 1 {
			t.Errorf("within the change: %d referrers, want 1", got)
		}
		c2 := child(102, "c2", "a_fk")
		c2.DBID = db.ID
		is.PutTable(db, c2)
		if got := is.ReferredBy("test", "p"); len(got) != 2 || got[0].FK.Name != "a_fk" {
			t.Errorf("after adding c2 in the same change: %v", got)
		}
		return m.PutTable(c2)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.InfoSchema().ReferredBy("test", "p")); got != 2 {
		t.Errorf("published: %d referrers, want 2", got)
	}
	if err := c.RunDDL(ctx, func(m *Meta, is *InfoSchema) error {
		db := is.DB(DefaultDB)
		is.DropTable(db, is.Table("test", "c1"))
		return m.DeleteTable(db.ID, 101)
	}); err != nil {
		t.Fatal(err)
	}
	if got := len(c.InfoSchema().ReferredBy("test", "p")); got != 1 {
		t.Errorf("after dropping c1: %d referrers, want 1", got)
	}
	st.Close()

	st, err = local.Open(dir, local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err = Open(st)
	if err != nil {
		t.Fatal(err)
	}
	is := c.InfoSchema()
	if got := is.ReferredBy("test", "p"); len(got) != 1 || got[0].Child.Name != "c2" || !is.HasForeignKeys() {
		t.Errorf("reloaded: %v", got)
	}
}
