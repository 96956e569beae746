package ddl

import (
	"context"
	"fmt"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
)

// Recovery of a schema change whose runner died (a restart of the one
// node of an embedded store, or the DDL owner of a cluster lost midway).
//
// The invariant it relies on: schema changes run one at a time under the
// schema-change lock, so once the lock is held nothing is in the middle
// of a change, and every object of the stored schema that is not public
// (a hidden column: ADD or DROP COLUMN, MODIFY COLUMN's changing or old
// column; an index in delete-only or write-only: ADD or DROP INDEX,
// MODIFY's changing or old indexes) was left by an interrupted change.
// Nothing would ever take such an object away, and writers would keep
// maintaining it.
//
// Each is taken out of the schema in one step, which F1 allows from
// delete-only and write-only alike (nobody reads them), and the entries
// of the indexes are deleted once the writers of the older version have
// ended. For an addition this takes the change back; for a drop, and for
// a MODIFY COLUMN past its swap (the old column and indexes are what is
// left), it finishes the change.

// RecoverSchema takes away every non-public column and index of the
// stored schema (see above), and deletes the data of the tables and
// indexes that an interrupted change had already taken out of the schema
// (droppedTables, droppedIndexes as {table id, index id}; those still in
// the schema are left alone). It returns whether the schema held anything
// to take away.
func (d *DDL) RecoverSchema(ctx context.Context, droppedTables []int64, droppedIndexes [][2]int64) (bool, error) {
	ctx = context.WithoutCancel(ctx)
	unlock, err := d.Catalog.LockDDL(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	found := false
	is := d.Catalog.InfoSchema()
	for _, db := range is.DBs() {
		for _, t := range is.Tables(db.Name) {
			var cols []int64
			var ixs []int64
			for _, c := range t.Hidden {
				cols = append(cols, c.ID)
			}
			for _, ix := range t.Indexes {
				if ix.State != catalog.StatePublic {
					ixs = append(ixs, ix.ID)
				}
			}
			if len(cols) == 0 && len(ixs) == 0 {
				continue
			}
			found = true
			if err := d.takeAway(ctx, t.ID, cols, ixs); err != nil {
				return found, fmt.Errorf("ddl: recovering an interrupted schema change of %s.%s: %w", db.Name, t.Name, err)
			}
		}
	}
	is = d.Catalog.InfoSchema()
	for _, id := range droppedTables {
		if is.TableByID(id) == nil {
			if err := d.deleteData(ctx, id); err != nil {
				return found, err
			}
		}
	}
	for _, p := range droppedIndexes {
		if t := is.TableByID(p[0]); t == nil || findIndexByID(t, p[1]) == nil {
			prefix := tablecodec.IndexPrefix(p[0], p[1])
			if err := d.dropRange(ctx, prefix, kv.PrefixEnd(prefix)); err != nil {
				return found, err
			}
		}
	}
	return found, nil
}

// takeAway removes hidden columns cols and non-public indexes ixs of
// table tableID in one schema step, then deletes the indexes' entries.
func (d *DDL) takeAway(ctx context.Context, tableID int64, cols, ixs []int64) error {
	err := d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		for _, id := range cols {
			takeHidden(t, id)
		}
		for _, id := range ixs {
			for i, ix := range t.Indexes {
				if ix.ID == id {
					t.Indexes = append(t.Indexes[:i:i], t.Indexes[i+1:]...)
					break
				}
			}
		}
		t.FixOffsets()
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range ixs {
		prefix := tablecodec.IndexPrefix(tableID, id)
		if err := d.dropRange(ctx, prefix, kv.PrefixEnd(prefix)); err != nil {
			return err
		}
	}
	return nil
}
