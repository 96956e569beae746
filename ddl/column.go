package ddl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Column changes rewrite no rows. A row stores its columns by id
// (tablecodec/row.go), so:
//
//   - ADD COLUMN records the column's default as its origin default, the
//     value rows that lack the column read as. The column goes hidden
//     delete-only, then hidden write-only (writers fill it: a new row its
//     default, an updated row keeps its value), then public.
//   - DROP COLUMN goes the other way: hidden write-only, hidden
//     delete-only, gone. Its values stay in old rows, unread; its id is
//     never reused. An index on the column alone is dropped first; an index
//     on it and other columns is rebuilt without it, unless it is unique
//     (1072, as in MySQL).
//   - MODIFY / CHANGE COLUMN change the column's definition when its stored
//     values keep their encoding: integers of one signedness, DECIMALs of
//     one scale, strings of one kind and binary-ness (any lengths),
//     FLOAT to DOUBLE, ENUM and SET members added at the end, renames,
//     NULL-ness, defaults, positions. A change that can reject existing
//     values (a shorter length, a smaller integer, NOT NULL) is published
//     first, so that writers enforce it, and then every row is checked;
//     if one fails, the old definition comes back and the statement fails
//     as MySQL's copying ALTER would (1265, 1264, 1138). Other changes of
//     type (INT to VARCHAR, a new scale), and in a non-strict sql_mode
//     those that may clip values, rewrite the rows (modify.go).

// addColumn runs one ADD COLUMN.
func (d *DDL) addColumn(ctx context.Context, tableID int64, cd *ast.ColumnDef, pos *ast.ColumnPosition, ifNotExists bool) error {
	t := d.Catalog.InfoSchema().TableByID(tableID)
	col, cs, err := buildColumn(cd, len(t.Columns))
	if err != nil {
		return err
	}
	if t.FindColumn(col.Name) != nil {
		if ifNotExists {
			return nil
		}
		return errno.New(errno.ErDupFieldName, "Duplicate column name '%s'", col.Name)
	}
	if col.AutoIncrement {
		return notSupported("adding an AUTO_INCREMENT column")
	}
	var uniques []*ast.Constraint
	for _, c := range cs {
		if c.Tp == ast.ConstraintPrimaryKey {
			return notSupported("adding a PRIMARY KEY column")
		}
		uniques = append(uniques, c)
	}
	if _, err := insertAt(t, t.Columns, col, pos); err != nil {
		return err
	}
	if col.OriginDefault, err = table.OriginDefault(col); err != nil {
		return err
	}
	if col.Type.Collate == "" && col.Type.IsString() && !col.Type.IsBinary() {
		col.Type.Charset, col.Type.Collate = t.Charset, t.Collate
		if err := checkTypeLimits(col, true); err != nil {
			return err
		}
	}
	var colID int64
	err = d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		t.MaxColumnID++
		c := *col
		c.ID, c.State = t.MaxColumnID, catalog.StateDeleteOnly
		colID = c.ID
		t.Hidden = append(t.Hidden, &c)
		return nil
	})
	if err != nil {
		return err
	}
	err = d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		hiddenByID(t, colID).State = catalog.StateWriteOnly
		return nil
	})
	if err == nil {
		err = d.publish(ctx, tableID, func(t *catalog.TableInfo) error {
			c := takeHidden(t, colID)
			c.State = catalog.StatePublic
			cols, err := insertAt(t, t.Columns, c, pos)
			if err != nil {
				return err
			}
			t.Columns = cols
			t.FixOffsets()
			return nil
		})
	}
	if err != nil {
		// Not public yet: take the column away again.
		return errors.Join(err, d.publish(ctx, tableID, func(t *catalog.TableInfo) error {
			takeHidden(t, colID)
			return nil
		}))
	}
	for _, c := range uniques {
		if _, err := d.createIndexLocked(ctx, tableID, "", true, c.Keys, false); err != nil {
			// The column came with its key, or not at all.
			return errors.Join(err, d.dropColumn(ctx, tableID, col.Name, true))
		}
	}
	return nil
}

func hiddenByID(t *catalog.TableInfo, id int64) *catalog.ColumnInfo {
	for _, c := range t.Hidden {
		if c.ID == id {
			return c
		}
	}
	panic(fmt.Sprintf("ddl: hidden column %d of table %s is gone", id, t.Name))
}

// takeHidden removes a hidden column from t and returns it.
func takeHidden(t *catalog.TableInfo, id int64) *catalog.ColumnInfo {
	for i, c := range t.Hidden {
		if c.ID == id {
			t.Hidden = append(t.Hidden[:i:i], t.Hidden[i+1:]...)
			return c
		}
	}
	return nil
}

// insertAt returns cols with c inserted where pos says (at the end if
// pos is nil), or 1054 if pos names a column cols lacks.
func insertAt(t *catalog.TableInfo, cols []*catalog.ColumnInfo, c *catalog.ColumnInfo, pos *ast.ColumnPosition) ([]*catalog.ColumnInfo, error) {
	at := len(cols)
	if pos != nil {
		switch pos.Tp {
		case ast.ColumnPositionFirst:
			at = 0
		case ast.ColumnPositionAfter:
			at = -1
			for i, x := range cols {
				if strings.EqualFold(x.Name, pos.RelativeColumn.Name.O) {
					at = i + 1
				}
			}
			if at < 0 {
				return nil, errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", pos.RelativeColumn.Name.O, t.Name)
			}
		}
	}
	out := make([]*catalog.ColumnInfo, 0, len(cols)+1)
	out = append(out, cols[:at]...)
	out = append(out, c)
	return append(out, cols[at:]...), nil
}

// dropColumn runs one DROP COLUMN.
func (d *DDL) dropColumn(ctx context.Context, tableID int64, name string, ifExists bool) error {
	t := d.Catalog.InfoSchema().TableByID(tableID)
	col := t.FindColumn(name)
	if col == nil {
		if ifExists {
			return nil
		}
		return errno.New(errno.ErCantDropFieldOrKey, "Can't DROP '%s'; check that column/key exists", name)
	}
	if len(t.Columns) == 1 {
		return errno.New(errno.ErCantRemoveAllFields, "You can't delete all columns with ALTER TABLE; use DROP TABLE instead")
	}
	if pk := t.PrimaryKey(); pk != nil && indexHas(pk, col) {
		return notSupported("dropping a column of the primary key")
	}
	// The indexes on the column: dropped with it, or rebuilt without it.
	for _, ix := range t.Indexes {
		if ix.Unique && len(ix.Columns) > 1 && indexHas(ix, col) {
			return errno.New(1072, "Key column '%s' doesn't exist in table", col.Name)
		}
	}
	for _, ix := range t.Indexes {
		if !indexHas(ix, col) {
			continue
		}
		cur := d.Catalog.InfoSchema().TableByID(tableID)
		if err := d.dropIndexColumn(ctx, cur, findIndexByID(cur, ix.ID), col); err != nil {
			return err
		}
	}
	colID := col.ID
	err := d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		for i, c := range t.Columns {
			if c.ID == colID {
				t.Columns = append(t.Columns[:i:i], t.Columns[i+1:]...)
				c.State = catalog.StateWriteOnly
				t.Hidden = append(t.Hidden, c)
				break
			}
		}
		t.FixOffsets()
		return nil
	})
	if err != nil {
		return err
	}
	err = d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		hiddenByID(t, colID).State = catalog.StateDeleteOnly
		return nil
	})
	if err != nil {
		return err
	}
	return d.publish(ctx, tableID, func(t *catalog.TableInfo) error {
		takeHidden(t, colID)
		return nil
	})
}

func indexHas(ix *catalog.IndexInfo, col *catalog.ColumnInfo) bool {
	for _, ic := range ix.Columns {
		if strings.EqualFold(ic.Name, col.Name) {
			return true
		}
	}
	return false
}

// dropIndexColumn takes col out of index ix: it drops an index on col
// alone; it builds a copy of any other without col, then drops the
// original and gives the copy its name.
func (d *DDL) dropIndexColumn(ctx context.Context, t *catalog.TableInfo, ix *catalog.IndexInfo, col *catalog.ColumnInfo) error {
	var parts []*ast.IndexPartSpecification
	for _, ic := range ix.Columns {
		if strings.EqualFold(ic.Name, col.Name) {
			continue
		}
		parts = append(parts, &ast.IndexPartSpecification{Column: &ast.ColumnName{Name: ast.NewCIStr(ic.Name)}, Length: max(ic.Length, 0)})
	}
	if len(parts) == 0 || ix.State != catalog.StatePublic {
		return d.dropIndexLocked(ctx, t, ix)
	}
	if ix.Unique {
		// As in MySQL: what is unique would change.
		return errno.New(1072, "Key column '%s' doesn't exist in table", col.Name)
	}
	name := ix.Name
	tmp := uniqueIndexName(t, "_basalt_rebuild_"+name)
	newID, err := d.createIndexLocked(ctx, t.ID, tmp, ix.Unique, parts, false)
	if err != nil {
		return err
	}
	if err := d.dropIndexLocked(ctx, d.Catalog.InfoSchema().TableByID(t.ID), ix); err != nil {
		return err
	}
	return d.publish(ctx, t.ID, func(t *catalog.TableInfo) error {
		findIndexByID(t, newID).Name = name
		return nil
	})
}

// renameColumn runs RENAME COLUMN: a change of the schema alone.
func (d *DDL) renameColumn(ctx context.Context, tableID int64, from, to string) error {
	if err := checkName(to, errno.ErWrongColumnName, "Incorrect column name '%s'"); err != nil {
		return err
	}
	// One version renames the column and, in the constraints of the
	// tables that refer to it, the referenced column (as MySQL 8 does).
	return d.Catalog.RunDDLLocked(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		old := is.TableByID(tableID)
		if old == nil {
			return errno.New(errno.ErNoSuchTable, "Table doesn't exist")
		}
		db := is.DBByID(old.DBID)
		refs := is.ReferredBy(db.Name, old.Name)
		t := old.Clone()
		c := t.FindColumn(from)
		if c == nil {
			return errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", from, t.Name)
		}
		if other := t.FindColumn(to); other != nil && other != c {
			return errno.New(errno.ErDupFieldName, "Duplicate column name '%s'", to)
		}
		renameIndexColumns(t, c.Name, to)
		changed := map[int64]*catalog.TableInfo{t.ID: t}
		for _, r := range refs {
			child := changed[r.Child.ID]
			if child == nil {
				child = r.Child.Clone()
				changed[child.ID] = child
			}
			if fk := child.FindFK(r.FK.Name); fk != nil {
				for i := range fk.RefCols {
					if strings.EqualFold(fk.RefCols[i], c.Name) {
						fk.RefCols[i] = to
					}
				}
			}
		}
		c.Name = to
		for _, ct := range changed {
			is.PutTable(is.DBByID(ct.DBID), ct)
			if err := m.PutTable(ct); err != nil {
				return err
			}
		}
		return nil
	})
}

func renameIndexColumns(t *catalog.TableInfo, from, to string) {
	for _, fk := range t.ForeignKeys {
		for i := range fk.Cols {
			if strings.EqualFold(fk.Cols[i], from) {
				fk.Cols[i] = to
			}
		}
	}
	for _, ix := range t.Indexes {
		for i := range ix.Columns {
			if strings.EqualFold(ix.Columns[i].Name, from) {
				ix.Columns[i].Name = to
			}
		}
	}
}

// alterColumnDefault runs ALTER COLUMN c SET DEFAULT v / DROP DEFAULT.
func (d *DDL) alterColumnDefault(ctx context.Context, tableID int64, cd *ast.ColumnDef) error {
	t := d.Catalog.InfoSchema().TableByID(tableID)
	old := t.FindColumn(cd.Name.Name.O)
	if old == nil {
		return errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", cd.Name.Name.O, t.Name)
	}
	nc := *old
	nc.HasDefault, nc.Default, nc.DefaultNull, nc.DefaultNow = false, "", false, false
	for _, o := range cd.Options {
		// The parser leaves the option's type unset for SET DEFAULT.
		if o.Expr != nil {
			if err := setDefault(&nc, o.Expr); err != nil {
				return err
			}
		}
	}
	if nc.HasDefault && !nc.DefaultNull && !nc.DefaultNow {
		if _, err := table.ConvertStrict(types.NewString(nc.Default), &nc); err != nil {
			return errno.New(errno.ErInvalidDefault, "Invalid default value for '%s'", nc.Name)
		}
	}
	return d.publish(ctx, tableID, func(t *catalog.TableInfo) error {
		c := t.FindColumn(nc.Name)
		if c == nil || c.ID != nc.ID {
			return errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", nc.Name, t.Name)
		}
		*c = nc
		return nil
	})
}

// modifyColumn runs MODIFY COLUMN and CHANGE COLUMN: a change of the
// schema alone where the stored values keep their encoding (checked
// first in a strict sql_mode where some may not fit), else a rewrite of
// every row (modify.go).
func (d *DDL) modifyColumn(ctx context.Context, tableID int64, oldName string, cd *ast.ColumnDef, pos *ast.ColumnPosition, mode uint32, res *AlterResult) error {
	t := d.Catalog.InfoSchema().TableByID(tableID)
	old := t.FindColumn(oldName)
	if old == nil {
		return errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", oldName, t.Name)
	}
	nc, cs, err := buildColumn(cd, old.Offset)
	if err != nil {
		return err
	}
	if len(cs) > 0 {
		return notSupported("adding a key in MODIFY or CHANGE COLUMN")
	}
	if other := t.FindColumn(nc.Name); other != nil && other != old {
		return errno.New(errno.ErDupFieldName, "Duplicate column name '%s'", nc.Name)
	}
	nc.ID, nc.State, nc.OriginDefault = old.ID, catalog.StatePublic, old.OriginDefault
	if old.Type.Flag&mysql.PriKeyFlag != 0 {
		nc.Type.Flag |= mysql.PriKeyFlag | mysql.NotNullFlag
	}
	if nc.AutoIncrement && !old.AutoIncrement {
		return notSupported("adding AUTO_INCREMENT to a column")
	}
	sameCollation := true
	if nc.Type.IsString() && !nc.Type.IsBinary() {
		if nc.Type.Collate == "" {
			if old.Type.IsString() && !old.Type.IsBinary() {
				nc.Type.Charset, nc.Type.Collate = old.Type.Charset, old.Type.Collate
			} else {
				nc.Type.Charset, nc.Type.Collate = t.Charset, t.Collate
			}
			if err := checkTypeLimits(nc, true); err != nil {
				return err
			}
		}
		sameCollation = strings.EqualFold(nc.Type.Charset, old.Type.Charset) && strings.EqualFold(nc.Type.Collate, old.Type.Collate)
	}
	check, ok := typeChange(&old.Type, &nc.Type)
	if nc.Type.NotNull() && !old.Type.NotNull() {
		check = true
	}
	if nc.HasDefault && !nc.DefaultNull && !nc.DefaultNow {
		if _, err := table.ConvertStrict(types.NewString(nc.Default), nc); err != nil {
			return errno.New(errno.ErInvalidDefault, "Invalid default value for '%s'", nc.Name)
		}
	}
	if _, err := insertAt(t, without(t.Columns, old.ID), nc, pos); err != nil {
		return err
	}
	// A change of encoding, and in a non-strict sql_mode one that may
	// clip values, rewrites the rows (but the columns a rewrite cannot
	// take yet are checked instead, as in a strict mode).
	pk := t.PrimaryKey()
	rewritable := !old.AutoIncrement && (pk == nil || !indexHas(pk, old))
	if !ok || !sameCollation || (check && !expression.SQLMode(mode).Strict() && rewritable) {
		return d.modifyReorg(ctx, tableID, old, nc, pos, mode, res)
	}
	if check && t.PKIsHandle && t.HandleColumn() == old {
		return notSupported("narrowing the integer primary key")
	}
	oldDef := *old
	oldOrder := t.ColumnIDs()
	apply := func(t *catalog.TableInfo) error {
		c := columnByID(t, nc.ID)
		if c == nil {
			return errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", oldName, t.Name)
		}
		renameIndexColumns(t, c.Name, nc.Name)
		n := *nc
		*c = n
		if pos != nil && pos.Tp != ast.ColumnPositionNone {
			cols, err := insertAt(t, without(t.Columns, nc.ID), c, pos)
			if err != nil {
				return err
			}
			t.Columns = cols
		}
		t.FixOffsets()
		return nil
	}
	if !check {
		return d.publish(ctx, tableID, apply)
	}
	// Writers enforce the new definition from here on; then the rows
	// written before are checked.
	if err := d.change(ctx, tableID, apply); err != nil {
		return err
	}
	cur := d.Catalog.InfoSchema().TableByID(tableID)
	if err := d.checkColumn(ctx, cur, columnByID(cur, nc.ID)); err != nil {
		return errors.Join(err, d.publish(ctx, tableID, func(t *catalog.TableInfo) error {
			c := columnByID(t, oldDef.ID)
			renameIndexColumns(t, c.Name, oldDef.Name)
			*c = oldDef
			var cols []*catalog.ColumnInfo
			for _, id := range oldOrder {
				if c := columnByID(t, id); c != nil {
					cols = append(cols, c)
				}
			}
			t.Columns = cols
			t.FixOffsets()
			return nil
		}))
	}
	return nil
}

func columnByID(t *catalog.TableInfo, id int64) *catalog.ColumnInfo {
	for _, c := range t.Columns {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func without(cols []*catalog.ColumnInfo, id int64) []*catalog.ColumnInfo {
	out := make([]*catalog.ColumnInfo, 0, len(cols))
	for _, c := range cols {
		if c.ID != id {
			out = append(out, c)
		}
	}
	return out
}

// typeChange reports whether a column's stored values keep their encoding
// from type o to type n (ok), and whether some of them may not fit n
// (check).
func typeChange(o, n *types.FieldType) (check, ok bool) {
	switch {
	case o.IsInteger() && n.IsInteger() && o.Tp != mysql.TypeYear && n.Tp != mysql.TypeYear:
		if o.Unsigned() != n.Unsigned() {
			return false, false
		}
		return intBytes(n.Tp) < intBytes(o.Tp), true
	case o.Tp == mysql.TypeFloat && n.Tp == mysql.TypeDouble && n.Decimal <= 0:
		return false, true
	case (o.Tp == mysql.TypeFloat || o.Tp == mysql.TypeDouble) && n.Tp == o.Tp:
		return false, o.Flen == n.Flen && o.Decimal == n.Decimal
	case o.Tp == mysql.TypeNewDecimal && n.Tp == mysql.TypeNewDecimal:
		return n.Flen < o.Flen, o.Decimal == n.Decimal && o.Unsigned() == n.Unsigned()
	case o.Tp == mysql.TypeEnum || o.Tp == mysql.TypeSet:
		if n.Tp != o.Tp || len(n.Elems) < len(o.Elems) {
			return false, false
		}
		for i, e := range o.Elems {
			if n.Elems[i] != e {
				return false, false
			}
		}
		return false, true
	case o.IsString() && n.IsString():
		if o.IsBinary() != n.IsBinary() {
			return false, false
		}
		if o.Tp == mysql.TypeString && o.IsBinary() {
			// BINARY(n) pads its values to n bytes.
			return false, n.Tp == o.Tp && n.Flen == o.Flen
		}
		if o.Tp == n.Tp || (isBlob(o.Tp) && isBlob(n.Tp)) {
			return n.Flen < o.Flen, true
		}
		return false, false
	}
	return false, o.Tp == n.Tp && o.Flen == n.Flen && o.Decimal == n.Decimal && o.Unsigned() == n.Unsigned()
}

func intBytes(tp byte) int {
	switch tp {
	case mysql.TypeTiny:
		return 1
	case mysql.TypeShort:
		return 2
	case mysql.TypeInt24:
		return 3
	case mysql.TypeLong:
		return 4
	}
	return 8
}

func isBlob(tp byte) bool {
	switch tp {
	case mysql.TypeTinyBlob, mysql.TypeBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		return true
	}
	return false
}

// checkColumn reads every row of t and fails if one holds a value that
// col (its new definition) does not accept: 1138 for a NULL in a NOT NULL
// column, 1264 for an integer or decimal out of range, 1265 for anything
// else that does not fit, naming the row as MySQL's copying ALTER does.
func (d *DDL) checkColumn(ctx context.Context, t *catalog.TableInfo, col *catalog.ColumnInfo) error {
	ts, err := d.Store.CurrentTS()
	if err != nil {
		return err
	}
	snap := d.Store.Snapshot(ts)
	prefix := tablecodec.RowPrefix(t.ID)
	it, err := snap.Iter(prefix, kv.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	ids := []int64{col.ID}
	out := make([]types.Datum, 1)
	present := make([]bool, 1)
	for row := 1; it.Valid(); row++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := tablecodec.DecodeRow(it.Value(), ids, out, present); err != nil {
			return err
		}
		v := out[0]
		if !present[0] && col.OriginDefault != nil {
			v = types.NewString(*col.OriginDefault)
		}
		if v.IsNull() {
			if col.Type.NotNull() {
				return errno.New(errno.ErInvalidUseOfNull, "Invalid use of NULL value")
			}
		} else if _, err := table.ConvertStrict(v, col); err != nil {
			var e *errno.Error
			if errors.As(err, &e) && e.Code == errno.ErWarnDataOutOfRange {
				return errno.New(errno.ErWarnDataOutOfRange, "Out of range value for column '%s' at row %d", col.Name, row)
			}
			return errno.New(errno.ErWarnDataTruncated, "Data truncated for column '%s' at row %d", col.Name, row)
		}
		if err := it.Next(); err != nil {
			return err
		}
	}
	return nil
}
