package ddl

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/table"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// checkSpecs runs an ALTER TABLE's specifications against a copy of the
// table's definition, changing nothing, and returns the first error one
// of them would meet because of the definitions alone: unknown or
// duplicate columns and keys, key columns that do not exist, invalid
// column definitions, defaults and positions. MySQL checks the whole
// statement before it changes anything, so a later specification's error
// must not leave an earlier one done. (Errors that depend on the rows, a
// duplicate for a new unique index or a value a MODIFY cannot convert,
// still come from the specification that meets them.)
func (d *DDL) checkSpecs(t *catalog.TableInfo, dbName string, specs []*ast.AlterTableSpec) error {
	vt := t.Clone()
	for _, spec := range specs {
		var err error
		switch spec.Tp {
		case ast.AlterTableAddColumns:
			for _, cd := range spec.NewColumns {
				if err = d.checkAddColumn(vt, cd, spec.Position, spec.IfNotExists); err != nil {
					return err
				}
			}
			for _, c := range spec.NewConstraints {
				if err = checkConstraint(vt, c); err != nil {
					return err
				}
			}
		case ast.AlterTableDropColumn:
			if err = checkDropFKColumn(d.Catalog.InfoSchema(), dbName, vt, spec.OldColumnName.Name.O); err != nil {
				return err
			}
			err = checkDropColumn(vt, spec.OldColumnName.Name.O, spec.IfExists)
		case ast.AlterTableModifyColumn:
			if err = checkModifyColumn(vt, spec.NewColumns[0].Name.Name.O, spec.NewColumns[0], spec.Position); err == nil {
				err = checkFKTypes(d.Catalog.InfoSchema(), dbName, t.Name, vt, spec.NewColumns[0].Name.Name.O)
			}
		case ast.AlterTableChangeColumn:
			if err = checkModifyColumn(vt, spec.OldColumnName.Name.O, spec.NewColumns[0], spec.Position); err == nil {
				err = checkFKTypes(d.Catalog.InfoSchema(), dbName, t.Name, vt, spec.NewColumns[0].Name.Name.O)
			}
		case ast.AlterTableRenameColumn:
			from, to := spec.OldColumnName.Name.O, spec.NewColumnName.Name.O
			if err = checkName(to, errno.ErWrongColumnName, "Incorrect column name '%s'"); err != nil {
				return err
			}
			c := vt.FindColumn(from)
			if c == nil {
				return errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", from, vt.Name)
			}
			if other := vt.FindColumn(to); other != nil && other != c {
				return errno.New(errno.ErDupFieldName, "Duplicate column name '%s'", to)
			}
			renameIndexColumns(vt, c.Name, to)
			c.Name = to
		case ast.AlterTableAlterColumn:
			if vt.FindColumn(spec.NewColumns[0].Name.Name.O) == nil {
				return errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", spec.NewColumns[0].Name.Name.O, vt.Name)
			}
		case ast.AlterTableAddConstraint:
			err = checkConstraint(vt, spec.Constraint)
		case ast.AlterTableDropIndex:
			ix := vt.FindIndex(spec.Name)
			if ix == nil || ix.State != catalog.StatePublic {
				if !spec.IfExists {
					return errno.New(errno.ErCantDropFieldOrKey, "Can't DROP '%s'; check that column/key exists", spec.Name)
				}
				break
			}
			if err := checkDropIndexFK(d.Catalog.InfoSchema(), dbName, vt, ix); err != nil {
				return err
			}
			dropIndexFrom(vt, ix.ID)
		case ast.AlterTableDropPrimaryKey:
			ix := vt.PrimaryKey()
			if ix == nil {
				return errno.New(errno.ErCantDropFieldOrKey, "Can't DROP 'PRIMARY'; check that column/key exists")
			}
			if err := checkDropIndexFK(d.Catalog.InfoSchema(), dbName, vt, ix); err != nil {
				return err
			}
			dropIndexFrom(vt, ix.ID)
		case ast.AlterTableDropForeignKey:
			if vt.FindFK(spec.Name) == nil && !spec.IfExists {
				return errno.New(errno.ErCantDropFieldOrKey, "Can't DROP '%s'; check that column/key exists", spec.Name)
			}
		case ast.AlterTableRenameIndex:
			from, to := spec.FromKey.O, spec.ToKey.O
			ix := vt.FindIndex(from)
			if ix == nil || ix.State != catalog.StatePublic {
				return errno.New(errno.ErKeyDoesNotExist, "Key '%s' doesn't exist in table '%s'", from, vt.Name)
			}
			if ix.Primary || strings.EqualFold(to, "PRIMARY") {
				return errno.New(1280, "Incorrect index name '%s'", to)
			}
			if other := vt.FindIndex(to); other != nil && other != ix {
				return errno.New(errno.ErDupKeyName, "Duplicate key name '%s'", to)
			}
			ix.Name = to
		case ast.AlterTableRenameTable:
			newDB := spec.NewTable.Schema.O
			if newDB == "" {
				newDB = dbName
			}
			if err = checkName(spec.NewTable.Name.O, errno.ErWrongTableName, "Incorrect table name '%s'"); err != nil {
				return err
			}
			is := d.Catalog.InfoSchema()
			if is.DB(newDB) == nil {
				return errno.New(errno.ErBadDB, "Unknown database '%s'", newDB)
			}
			if other := is.Table(newDB, spec.NewTable.Name.O); other != nil && (other.ID != t.ID || t.Name == spec.NewTable.Name.O) {
				return errno.New(errno.ErTableExists, "Table '%s' already exists", spec.NewTable.Name.O)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *DDL) checkAddColumn(vt *catalog.TableInfo, cd *ast.ColumnDef, pos *ast.ColumnPosition, ifNotExists bool) error {
	col, cs, err := buildColumn(cd, len(vt.Columns))
	if err != nil {
		return err
	}
	if vt.FindColumn(col.Name) != nil {
		if ifNotExists {
			return nil
		}
		return errno.New(errno.ErDupFieldName, "Duplicate column name '%s'", col.Name)
	}
	if col.AutoIncrement {
		return notSupported("adding an AUTO_INCREMENT column")
	}
	for _, c := range cs {
		if c.Tp == ast.ConstraintPrimaryKey {
			return notSupported("adding a PRIMARY KEY column")
		}
	}
	if col.Type.Collate == "" && col.Type.IsString() && !col.Type.IsBinary() {
		col.Type.Charset, col.Type.Collate = vt.Charset, vt.Collate
		if err := checkTypeLimits(col, true); err != nil {
			return err
		}
	}
	if _, err := table.OriginDefault(col); err != nil {
		return err
	}
	cols, err := insertAt(vt, vt.Columns, col, pos)
	if err != nil {
		return err
	}
	vt.MaxColumnID++
	col.ID = vt.MaxColumnID
	vt.Columns = cols
	vt.FixOffsets()
	for _, c := range cs {
		if err := checkConstraint(vt, c); err != nil {
			return err
		}
	}
	return nil
}

// checkConstraint adds an index for ADD INDEX / UNIQUE to vt, or fails as
// createIndexLocked would.
func checkConstraint(vt *catalog.TableInfo, c *ast.Constraint) error {
	ix := &catalog.IndexInfo{Name: c.Name}
	switch c.Tp {
	case ast.ConstraintKey, ast.ConstraintIndex:
	case ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
		ix.Unique = true
	case ast.ConstraintPrimaryKey:
		return notSupported("adding a PRIMARY KEY to an existing table")
	default:
		return nil
	}
	if err := fillIndexColumns(vt, ix, c.Keys); err != nil {
		return err
	}
	if ix.Name == "" {
		ix.Name = uniqueIndexName(vt, ix.Columns[0].Name)
	}
	if vt.FindIndex(ix.Name) != nil || strings.EqualFold(ix.Name, "PRIMARY") {
		if c.IfNotExists {
			return nil
		}
		return errno.New(errno.ErDupKeyName, "Duplicate key name '%s'", ix.Name)
	}
	vt.MaxIndexID++
	ix.ID = vt.MaxIndexID
	vt.Indexes = append(vt.Indexes, ix)
	return nil
}

func checkDropColumn(vt *catalog.TableInfo, name string, ifExists bool) error {
	col := vt.FindColumn(name)
	if col == nil {
		if ifExists {
			return nil
		}
		return errno.New(errno.ErCantDropFieldOrKey, "Can't DROP '%s'; check that column/key exists", name)
	}
	if len(vt.Columns) == 1 {
		return errno.New(errno.ErCantRemoveAllFields, "You can't delete all columns with ALTER TABLE; use DROP TABLE instead")
	}
	if pk := vt.PrimaryKey(); pk != nil && indexHas(pk, col) {
		return notSupported("dropping a column of the primary key")
	}
	for _, ix := range vt.Indexes {
		if ix.Unique && len(ix.Columns) > 1 && indexHas(ix, col) {
			return errno.New(1072, "Key column '%s' doesn't exist in table", col.Name)
		}
	}
	var keep []*catalog.IndexInfo
	for _, ix := range vt.Indexes {
		var cols []catalog.IndexColumn
		for _, ic := range ix.Columns {
			if !strings.EqualFold(ic.Name, col.Name) {
				cols = append(cols, ic)
			}
		}
		if len(cols) > 0 {
			ix.Columns = cols
			keep = append(keep, ix)
		}
	}
	vt.Indexes = keep
	vt.Columns = without(vt.Columns, col.ID)
	vt.FixOffsets()
	return nil
}

func checkModifyColumn(vt *catalog.TableInfo, oldName string, cd *ast.ColumnDef, pos *ast.ColumnPosition) error {
	old := vt.FindColumn(oldName)
	if old == nil {
		return errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", oldName, vt.Name)
	}
	nc, cs, err := buildColumn(cd, old.Offset)
	if err != nil {
		return err
	}
	if len(cs) > 0 {
		return notSupported("adding a key in MODIFY or CHANGE COLUMN")
	}
	if other := vt.FindColumn(nc.Name); other != nil && other != old {
		return errno.New(errno.ErDupFieldName, "Duplicate column name '%s'", nc.Name)
	}
	if nc.AutoIncrement && !old.AutoIncrement {
		return notSupported("adding AUTO_INCREMENT to a column")
	}
	if _, ok := typeChange(&old.Type, &nc.Type); !ok {
		// A rewrite (modify.go), which these columns cannot have yet.
		if pk := vt.PrimaryKey(); pk != nil && indexHas(pk, old) {
			return notSupported("changing the type of a primary key column")
		}
		if old.AutoIncrement || nc.AutoIncrement {
			return notSupported("changing the type of an AUTO_INCREMENT column")
		}
	}
	nc.ID = old.ID
	cols := without(vt.Columns, old.ID)
	if pos != nil && pos.Tp != ast.ColumnPositionNone {
		if cols, err = insertAt(vt, cols, nc, pos); err != nil {
			return err
		}
	} else {
		at := old.Offset
		cols = append(cols[:at:at], append([]*catalog.ColumnInfo{nc}, cols[at:]...)...)
	}
	renameIndexColumns(vt, old.Name, nc.Name)
	vt.Columns = cols
	vt.FixOffsets()
	return nil
}

func dropIndexFrom(vt *catalog.TableInfo, id int64) {
	for i, ix := range vt.Indexes {
		if ix.ID == id {
			vt.Indexes = append(vt.Indexes[:i:i], vt.Indexes[i+1:]...)
			return
		}
	}
}
