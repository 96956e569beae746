package ddl

import (
	"context"
	"errors"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// A MODIFY / CHANGE COLUMN whose new type stores values differently (INT
// to VARCHAR, a new DECIMAL scale, signed to unsigned, another collation,
// or any change that clips values in a non-strict sql_mode) rewrites
// every row, online, as TiDB's "modify column with reorg" does. With the
// old column C and the indexes I on it:
//
//  1. A hidden changing column C' of the new type (ChangeFrom = C) and,
//     for each index on C, a changing index I' of the same name on C'
//     instead of C, all delete-only. Writers that know them delete the I'
//     entries of the rows they change, computing C' from C.
//  2. C' and every I' write-only: writers store C' = C converted, as an
//     INSERT under the ALTER's sql_mode would convert it (a value that
//     does not fit fails the write in a strict mode), and add I' entries.
//  3. Backfill: every row is rewritten with C' converted from C and its I'
//     entries added, a batch of rows per transaction; a batch that raced
//     with a writer fails to commit on the row keys and is redone. A value
//     that does not convert (strict) or a duplicate in a unique I' fails
//     the ALTER: C' and the I' are taken away again (write-only to gone,
//     then their entries deleted) and the table is as it was.
//  4. Swap, in one schema version: C' takes C's name and place and is
//     public, the I' are public in the places of the I; C becomes a hidden
//     write-only column derived the other way (C converted back from C',
//     clipped), so that readers and writers of the previous version, which
//     still read C, see what the new version wrote; the I become
//     delete-only.
//  5. C and the I leave the schema, and the I's entries are deleted. C's
//     values stay in the rows, unread, as a dropped column's do.
//
// Every step waits until nothing runs under an older schema version, so
// two adjacent steps are live at once at most. What is not exact: an old
// index I stops being maintained for new rows at step 4, so a statement
// that started before the swap and reads through I may miss a row written
// by one that started after it.

// changingName names the hidden columns of a MODIFY COLUMN in progress.
const changingName = catalog.ChangingPrefix

// modifyReorg runs a MODIFY / CHANGE COLUMN of old into nc (which has
// old's id) that rewrites the rows; see above.
// The rows rewritten and the warnings go to res (a statement of several
// MODIFYs reports the table's rows once, as MySQL's single copy does).
func (d *DDL) modifyReorg(ctx context.Context, tableID int64, old, nc *catalog.ColumnInfo, pos *ast.ColumnPosition, mode uint32, res *AlterResult) error {
	t := d.Catalog.InfoSchema().TableByID(tableID)
	if pk := t.PrimaryKey(); pk != nil && indexHas(pk, old) {
		return notSupported("changing the type of a primary key column")
	}
	if old.AutoIncrement || nc.AutoIncrement {
		return notSupported("changing the type of an AUTO_INCREMENT column")
	}
	newName, oldName := changingName+nc.Name, changingName+"old_"+old.Name
	for _, n := range []string{newName, oldName} {
		if t.FindColumn(n) != nil || t.FindHidden(n) != nil {
			return notSupported("a column named " + n)
		}
	}
	oldID := old.ID
	var newID int64
	var pairs [][2]int64 // old index id, changing index id
	err := d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		c := columnByID(t, oldID)
		if c == nil {
			return errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", old.Name, t.Name)
		}
		t.MaxColumnID++
		cc := *nc
		cc.ID, cc.Name, cc.State = t.MaxColumnID, newName, catalog.StateDeleteOnly
		cc.ChangeFrom, cc.ChangeMode, cc.OriginDefault = oldID, mode, nil
		newID = cc.ID
		t.Hidden = append(t.Hidden, &cc)
		for _, ix := range t.Indexes {
			if ix.State == catalog.StatePublic && indexHas(ix, c) {
				t.MaxIndexID++
				pairs = append(pairs, [2]int64{ix.ID, t.MaxIndexID})
			}
		}
		for _, p := range pairs {
			t.Indexes = append(t.Indexes, changingIndex(t, p[0], p[1], newName, &cc))
		}
		t.FixOffsets()
		return nil
	})
	if err != nil {
		return err
	}
	err = d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		hiddenByID(t, newID).State = catalog.StateWriteOnly
		for _, p := range pairs {
			findIndexByID(t, p[1]).State = catalog.StateWriteOnly
		}
		return nil
	})
	if err == nil {
		err = d.reorgBackfill(ctx, tableID, pairs, res)
	}
	if err != nil {
		return d.abandonReorg(ctx, tableID, newID, pairs, err)
	}
	// The swap.
	err = d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		c, cc := columnByID(t, oldID), takeHidden(t, newID)
		at := c.Offset
		for _, p := range pairs {
			renameColumnOf(findIndexByID(t, p[0]), c.Name, oldName)
			renameColumnOf(findIndexByID(t, p[1]), newName, nc.Name)
		}
		c.Name, c.State, c.ChangeFrom, c.ChangeMode = oldName, catalog.StateWriteOnly, newID, 0
		cc.Name, cc.State, cc.ChangeFrom, cc.ChangeMode = nc.Name, catalog.StatePublic, 0, 0
		cols := without(t.Columns, oldID)
		if pos != nil && pos.Tp != ast.ColumnPositionNone {
			var err error
			if cols, err = insertAt(t, cols, cc, pos); err != nil {
				return err
			}
		} else {
			cols = append(cols[:at:at], append([]*catalog.ColumnInfo{cc}, cols[at:]...)...)
		}
		t.Columns = cols
		t.Hidden = append(t.Hidden, c)
		for _, p := range pairs {
			i, j := indexPos(t, p[0]), indexPos(t, p[1])
			t.Indexes[i], t.Indexes[j] = t.Indexes[j], t.Indexes[i]
			t.Indexes[i].State, t.Indexes[j].State = catalog.StatePublic, catalog.StateDeleteOnly
		}
		t.FixOffsets()
		return nil
	})
	if err != nil {
		return err
	}
	err = d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		takeHidden(t, oldID)
		for _, p := range pairs {
			i := indexPos(t, p[0])
			t.Indexes = append(t.Indexes[:i:i], t.Indexes[i+1:]...)
		}
		t.FixOffsets()
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range pairs {
		prefix := tablecodec.IndexPrefix(tableID, p[0])
		if err := d.dropRange(ctx, prefix, kv.PrefixEnd(prefix)); err != nil {
			return err
		}
	}
	return nil
}

// changingIndex returns the changing index newID: a copy of index oldID
// of t that reads column cc (named name) where the original reads the
// column cc changes.
func changingIndex(t *catalog.TableInfo, oldID, newID int64, name string, cc *catalog.ColumnInfo) *catalog.IndexInfo {
	ix := findIndexByID(t, oldID)
	var from string
	for _, c := range t.Columns {
		if c.ID == cc.ChangeFrom {
			from = c.Name
		}
	}
	nix := &catalog.IndexInfo{ID: newID, Name: ix.Name, Unique: ix.Unique, State: catalog.StateDeleteOnly, Comment: ix.Comment}
	for _, ic := range ix.Columns {
		if strings.EqualFold(ic.Name, from) {
			ic.Name = name
			if !cc.Type.IsString() {
				ic.Length = -1
			}
		}
		nix.Columns = append(nix.Columns, ic)
	}
	return nix
}

func renameColumnOf(ix *catalog.IndexInfo, from, to string) {
	for i := range ix.Columns {
		if strings.EqualFold(ix.Columns[i].Name, from) {
			ix.Columns[i].Name = to
		}
	}
}

func indexPos(t *catalog.TableInfo, id int64) int {
	for i, ix := range t.Indexes {
		if ix.ID == id {
			return i
		}
	}
	panic("ddl: index of a MODIFY COLUMN is gone")
}

// abandonReorg takes the changing column and indexes of a failed MODIFY
// COLUMN away (write-only to gone: nobody reads them), then, once the
// writers that maintained them have ended, deletes the indexes' entries.
// It runs to the end even when the statement was cancelled.
func (d *DDL) abandonReorg(ctx context.Context, tableID, newID int64, pairs [][2]int64, cause error) error {
	ctx = context.WithoutCancel(ctx)
	err := d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		takeHidden(t, newID)
		for _, p := range pairs {
			i := indexPos(t, p[1])
			t.Indexes = append(t.Indexes[:i:i], t.Indexes[i+1:]...)
		}
		t.FixOffsets()
		return nil
	})
	for _, p := range pairs {
		if err != nil {
			break
		}
		prefix := tablecodec.IndexPrefix(tableID, p[1])
		err = d.dropRange(ctx, prefix, kv.PrefixEnd(prefix))
	}
	return errors.Join(cause, err)
}

// reorgBackfill rewrites every row of the table with its changing column
// and adds its entries to the changing indexes (pairs[i][1]), a batch of
// rows per transaction.
func (d *DDL) reorgBackfill(ctx context.Context, tableID int64, pairs [][2]int64, res *AlterResult) error {
	t := d.Catalog.InfoSchema().TableByID(tableID)
	var ixs []*catalog.IndexInfo
	for _, p := range pairs {
		ixs = append(ixs, findIndexByID(t, p[1]))
	}
	start, end := tablecodec.RowPrefix(t.ID), kv.PrefixEnd(tablecodec.RowPrefix(t.ID))
	rows := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		next, n, warnings, err := d.reorgBatch(ctx, t, ixs, start, end, rows)
		if errors.Is(err, kv.ErrWriteConflict) {
			continue
		}
		if err != nil {
			return err
		}
		res.warn(warnings)
		rows += n
		if next == nil {
			res.Rows = max(res.Rows, uint64(rows))
			return nil
		}
		start = next
	}
}

// reorgBatchRows is smaller than an index backfill's batch: a batch
// writes its rows and their entries, which writers change too, and is
// redone whole when one of them did.
const reorgBatchRows = 128

func (d *DDL) reorgBatch(ctx context.Context, t *catalog.TableInfo, ixs []*catalog.IndexInfo, start, end []byte, rows int) (next []byte, n int, warnings []*errno.Error, err error) {
	txn, err := d.Store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return nil, 0, nil, err
	}
	defer txn.Rollback()
	it, err := txn.Iter(start, end)
	if err != nil {
		return nil, 0, nil, err
	}
	defer it.Close()
	reorg := table.NewReorg(t)
	for it.Valid() {
		if n == reorgBatchRows {
			next = append([]byte(nil), it.Key()...)
			break
		}
		rk := append([]byte(nil), it.Key()...)
		_, h, err := tablecodec.DecodeRowKey(rk, t.CommonHandle)
		if err != nil {
			return nil, 0, nil, err
		}
		value, ws, err := reorg.Row(h, it.Value(), rows+n+1)
		if err != nil {
			return nil, 0, nil, err
		}
		warnings = append(warnings, ws...)
		// Writing the row key makes a batch that raced with a writer
		// fail to commit.
		if err := txn.Set(rk, value); err != nil {
			return nil, 0, nil, err
		}
		for _, ix := range ixs {
			key, v, err := reorg.Entry(ix, h)
			if err != nil {
				return nil, 0, nil, err
			}
			if ix.Unique && len(v) > 0 {
				old, err := txn.Get(ctx, key)
				switch {
				case err == nil && string(old) != string(v):
					vals, _, _, _ := tablecodec.DecodeIndexKey(key, len(ix.Columns), t.CommonHandle)
					return nil, 0, nil, table.DupEntry(t, ix, vals)
				case err != nil && !errors.Is(err, kv.ErrNotFound):
					return nil, 0, nil, err
				}
			}
			if err := txn.Set(key, v); err != nil {
				return nil, 0, nil, err
			}
		}
		n++
		if err := it.Next(); err != nil {
			return nil, 0, nil, err
		}
	}
	if n == 0 {
		return nil, 0, nil, nil
	}
	return next, n, warnings, txn.Commit(ctx)
}

func indexHasName(ix *catalog.IndexInfo, name string) bool {
	for _, ic := range ix.Columns {
		if strings.EqualFold(ic.Name, name) {
			return true
		}
	}
	return false
}
