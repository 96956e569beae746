package ddl

import (
	"context"
	"errors"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Online schema changes follow F1's protocol, as TiDB does: a change
// that needs it goes through intermediate states (delete-only,
// write-only), one schema version each, and before publishing the next
// version the change waits until nothing runs under a version older than
// the one it just published (Waiter). Sessions pin a version per
// transaction (or statement), so at most two consecutive versions are in
// use at any time, and each state is chosen so that writers of two
// consecutive versions keep the data consistent for readers of both.

// errSkip ends a change that has nothing to do (IF [NOT] EXISTS).
var errSkip = errors.New("ddl: nothing to do")

// table returns a base table of the current schema by name, with MySQL's
// errors.
func (d *DDL) table(dbName, name string) (*catalog.DBInfo, *catalog.TableInfo, error) {
	if dbName == "" {
		return nil, nil, errno.New(errno.ErNoDB, "No database selected")
	}
	is := d.Catalog.InfoSchema()
	db := is.DB(dbName)
	if db == nil {
		return nil, nil, errno.New(errno.ErBadDB, "Unknown database '%s'", dbName)
	}
	t := is.Table(dbName, name)
	if t == nil {
		return nil, nil, errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", dbName, name)
	}
	if t.View != nil {
		return nil, nil, errno.New(1347, "'%s.%s' is not BASE TABLE", dbName, t.Name)
	}
	return db, t, nil
}

// publish applies fn to a copy of table tableID and publishes the result
// as a new schema version. The caller holds the schema-change lock.
func (d *DDL) publish(ctx context.Context, tableID int64, fn func(t *catalog.TableInfo) error) error {
	return d.Catalog.RunDDLLocked(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		t := is.TableByID(tableID)
		if t == nil {
			return errno.New(errno.ErNoSuchTable, "Table doesn't exist")
		}
		nt := t.Clone()
		if err := fn(nt); err != nil {
			return err
		}
		is.PutTable(is.DBByID(nt.DBID), nt)
		return m.PutTable(nt)
	})
}

// change publishes like publish, then waits until nothing runs under an
// older schema version: afterwards only the new version and the one
// before it are in use.
func (d *DDL) change(ctx context.Context, tableID int64, fn func(t *catalog.TableInfo) error) error {
	if err := d.publish(ctx, tableID, fn); err != nil {
		return err
	}
	return d.Wait(ctx, d.Catalog.InfoSchema().Version)
}

// AlterResult is what ALTER TABLE reports, as MySQL's copying ALTER does:
// the rows a MODIFY COLUMN rewrote, and the warnings of values it clipped.
type AlterResult struct {
	Rows     uint64
	Warnings []*errno.Error
}

func (r *AlterResult) warn(ws []*errno.Error) {
	for _, w := range ws {
		if len(r.Warnings) < 64 {
			r.Warnings = append(r.Warnings, w)
		}
	}
}

// AlterTable runs ALTER TABLE: its specifications one after another, each
// an online change of its own. Specifications of kinds Basalt does not
// support, and those whose definitions are wrong (checkSpecs), fail the
// statement before any runs. One that fails on the table's rows (a
// duplicate, a value that does not convert) takes back those that ran
// before it when all of them can be (adds, renames, defaults); after a
// DROP, a MODIFY or a RENAME TABLE the earlier parts stay done. sqlMode is the session's
// (expression.SQLMode): how MODIFY COLUMN converts values.
func (d *DDL) AlterTable(ctx context.Context, currentDB string, s *ast.AlterTableStmt, sqlMode uint32) (AlterResult, error) {
	var res AlterResult
	err := d.alterTable(ctx, currentDB, s, sqlMode, &res)
	return res, err
}

func (d *DDL) alterTable(ctx context.Context, currentDB string, s *ast.AlterTableStmt, sqlMode uint32, res *AlterResult) error {
	dbName := s.Table.Schema.O
	if dbName == "" {
		dbName = currentDB
	}
	for _, spec := range s.Specs {
		if err := supported(spec); err != nil {
			return err
		}
	}
	unlock, err := d.Catalog.LockDDL(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	name := s.Table.Name.O
	if err := checkDropsAll(d, dbName, name, s.Specs); err != nil {
		return err
	}
	if _, t, err := d.table(dbName, name); err != nil {
		return err
	} else if err := d.checkSpecs(t, dbName, s.Specs); err != nil {
		return err
	}
	// The parts run one after another. If one fails after others ran,
	// those are taken back when they all can be (see undoable).
	var undo []func(context.Context) error
	reversible := true
	for _, spec := range s.Specs {
		_, t, err := d.table(dbName, name)
		if err != nil {
			return err
		}
		u, ok := d.undoable(t, spec)
		if err := d.alterSpec(ctx, &dbName, &name, t, spec, sqlMode, res); err != nil {
			if spec.Tp == ast.AlterTableAddColumns && u != nil {
				// Its own columns and keys that were added.
				undo = append(undo, u)
			}
			if reversible && len(undo) > 0 {
				ctx := context.WithoutCancel(ctx)
				for i := len(undo) - 1; i >= 0; i-- {
					if uerr := undo[i](ctx); uerr != nil {
						return errors.Join(err, uerr)
					}
				}
				res.Rows = 0
			}
			return err
		}
		if !ok {
			reversible = false
		} else if u != nil {
			undo = append(undo, u)
		}
	}
	return nil
}

// undoable returns how to take back part spec of an ALTER, which ran on
// table t (as it was before), or false if Basalt cannot take it back (it
// dropped or rewrote something). A nil func means nothing to take back.
func (d *DDL) undoable(t *catalog.TableInfo, spec *ast.AlterTableSpec) (func(context.Context) error, bool) {
	switch spec.Tp {
	case ast.AlterTableOption, ast.AlterTableLock, ast.AlterTableAlgorithm, ast.AlterTableEnableKeys, ast.AlterTableDisableKeys:
		return nil, true
	case ast.AlterTableAddColumns, ast.AlterTableAddConstraint:
		// Drop what the part added: the indexes, then the columns.
		return func(ctx context.Context) error {
			now := d.Catalog.InfoSchema().TableByID(t.ID)
			for _, ix := range now.Indexes {
				if findIndexByID(t, ix.ID) == nil {
					if err := d.dropIndexLocked(ctx, d.Catalog.InfoSchema().TableByID(t.ID), ix); err != nil {
						return err
					}
				}
			}
			for _, c := range now.Columns {
				if columnByID(t, c.ID) == nil {
					if err := d.dropColumn(ctx, t.ID, c.Name, true); err != nil {
						return err
					}
				}
			}
			return nil
		}, true
	case ast.AlterTableRenameColumn:
		from, to := spec.OldColumnName.Name.O, spec.NewColumnName.Name.O
		return func(ctx context.Context) error { return d.renameColumn(ctx, t.ID, to, from) }, true
	case ast.AlterTableRenameIndex:
		from, to := spec.FromKey.O, spec.ToKey.O
		return func(ctx context.Context) error { return d.renameIndex(ctx, t.ID, to, from) }, true
	case ast.AlterTableAlterColumn:
		old := *t.FindColumn(spec.NewColumns[0].Name.Name.O)
		return func(ctx context.Context) error {
			return d.publish(ctx, t.ID, func(t *catalog.TableInfo) error {
				if c := columnByID(t, old.ID); c != nil {
					c.HasDefault, c.Default, c.DefaultNull, c.DefaultNow = old.HasDefault, old.Default, old.DefaultNull, old.DefaultNow
				}
				return nil
			})
		}, true
	}
	return nil, false
}

// alterSpec runs one part of an ALTER TABLE on table t (dbName.name,
// which RENAME changes).
func (d *DDL) alterSpec(ctx context.Context, dbName, name *string, t *catalog.TableInfo, spec *ast.AlterTableSpec, sqlMode uint32, res *AlterResult) error {
	var err error
	switch spec.Tp {
	case ast.AlterTableAddColumns:
		for _, cd := range spec.NewColumns {
			if err := d.addColumn(ctx, t.ID, cd, spec.Position, spec.IfNotExists); err != nil {
				return err
			}
		}
		for _, c := range spec.NewConstraints {
			if err := d.addConstraint(ctx, t.ID, c, res); err != nil {
				return err
			}
		}
	case ast.AlterTableDropColumn:
		err = d.dropColumn(ctx, t.ID, spec.OldColumnName.Name.O, spec.IfExists)
	case ast.AlterTableModifyColumn:
		err = d.modifyColumn(ctx, t.ID, spec.NewColumns[0].Name.Name.O, spec.NewColumns[0], spec.Position, sqlMode, res)
	case ast.AlterTableChangeColumn:
		err = d.modifyColumn(ctx, t.ID, spec.OldColumnName.Name.O, spec.NewColumns[0], spec.Position, sqlMode, res)
		if err == nil {
			err = d.renameRefCols(ctx, *dbName, t.Name, spec.OldColumnName.Name.O, spec.NewColumns[0].Name.Name.O)
		}
	case ast.AlterTableRenameColumn:
		err = d.renameColumn(ctx, t.ID, spec.OldColumnName.Name.O, spec.NewColumnName.Name.O)
	case ast.AlterTableAlterColumn:
		err = d.alterColumnDefault(ctx, t.ID, spec.NewColumns[0])
	case ast.AlterTableAddConstraint:
		err = d.addConstraint(ctx, t.ID, spec.Constraint, res)
	case ast.AlterTableDropIndex:
		ix := t.FindIndex(spec.Name)
		if ix == nil || ix.State != catalog.StatePublic {
			if !spec.IfExists {
				err = errno.New(errno.ErCantDropFieldOrKey, "Can't DROP '%s'; check that column/key exists", spec.Name)
			}
			break
		}
		err = d.dropIndexLocked(ctx, t, ix)
	case ast.AlterTableDropPrimaryKey:
		ix := t.PrimaryKey()
		if ix == nil {
			err = errno.New(errno.ErCantDropFieldOrKey, "Can't DROP 'PRIMARY'; check that column/key exists")
			break
		}
		err = d.dropIndexLocked(ctx, t, ix)
	case ast.AlterTableRenameIndex:
		err = d.renameIndex(ctx, t.ID, spec.FromKey.O, spec.ToKey.O)
	case ast.AlterTableDropForeignKey:
		err = d.dropForeignKey(ctx, t.ID, spec.Name, spec.IfExists)
	case ast.AlterTableEnableKeys, ast.AlterTableDisableKeys:
		// The session answers these with InnoDB's note, and passes on
		// the rest of the statement (session/ddl_stmt.go).
	case ast.AlterTableRenameTable:
		newDB := spec.NewTable.Schema.O
		if newDB == "" {
			newDB = *dbName
		}
		if err = d.renameTableLocked(ctx, *dbName, t.Name, newDB, spec.NewTable.Name.O); err == nil {
			*dbName, *name = newDB, spec.NewTable.Name.O
		}
	}
	return err
}

// checkDropsAll refuses, as MySQL does before changing anything, an ALTER
// that would drop every column.
func checkDropsAll(d *DDL, dbName, name string, specs []*ast.AlterTableSpec) error {
	_, t, err := d.table(dbName, name)
	if err != nil {
		return err
	}
	dropped := map[int64]bool{}
	for _, spec := range specs {
		switch spec.Tp {
		case ast.AlterTableDropColumn:
			if c := t.FindColumn(spec.OldColumnName.Name.O); c != nil {
				dropped[c.ID] = true
			}
		case ast.AlterTableAddColumns:
			return nil
		}
	}
	if len(dropped) > 0 && len(dropped) == len(t.Columns) {
		return errno.New(errno.ErCantRemoveAllFields, "You can't delete all columns with ALTER TABLE; use DROP TABLE instead")
	}
	return nil
}

// supported refuses the ALTER TABLE specifications Basalt cannot run.
// Table options, ALGORITHM, LOCK and ENABLE/DISABLE KEYS are accepted and
// ignored (every change here is online).
func supported(spec *ast.AlterTableSpec) error {
	switch spec.Tp {
	case ast.AlterTableAddColumns, ast.AlterTableDropColumn, ast.AlterTableModifyColumn,
		ast.AlterTableChangeColumn, ast.AlterTableRenameColumn, ast.AlterTableAlterColumn,
		ast.AlterTableDropIndex, ast.AlterTableDropPrimaryKey, ast.AlterTableRenameIndex,
		ast.AlterTableRenameTable, ast.AlterTableOption, ast.AlterTableLock, ast.AlterTableAlgorithm,
		ast.AlterTableDropForeignKey, ast.AlterTableEnableKeys, ast.AlterTableDisableKeys:
		return nil
	case ast.AlterTableAddConstraint:
		switch spec.Constraint.Tp {
		case ast.ConstraintKey, ast.ConstraintIndex, ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex,
			ast.ConstraintForeignKey, ast.ConstraintCheck:
			return nil
		case ast.ConstraintPrimaryKey:
			return notSupported("adding a PRIMARY KEY to an existing table")
		}
	}
	return errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support this ALTER TABLE")
}

func notSupported(what string) error {
	return errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support '%s'", what)
}

// addConstraint runs ADD INDEX / ADD UNIQUE / ADD FOREIGN KEY; checks
// are accepted and not enforced, as in CREATE TABLE.
func (d *DDL) addConstraint(ctx context.Context, tableID int64, c *ast.Constraint, res *AlterResult) error {
	unique := false
	switch c.Tp {
	case ast.ConstraintKey, ast.ConstraintIndex:
	case ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
		unique = true
	case ast.ConstraintPrimaryKey:
		return notSupported("adding a PRIMARY KEY to an existing table")
	case ast.ConstraintForeignKey:
		return d.addForeignKey(ctx, tableID, c, res)
	default:
		return nil
	}
	_, err := d.createIndexLocked(ctx, tableID, c.Name, unique, c.Keys, c.IfNotExists)
	return err
}

// renameIndex runs RENAME INDEX: a change of the schema alone.
func (d *DDL) renameIndex(ctx context.Context, tableID int64, from, to string) error {
	return d.publish(ctx, tableID, func(t *catalog.TableInfo) error {
		ix := t.FindIndex(from)
		if ix == nil || ix.State != catalog.StatePublic {
			return errno.New(errno.ErKeyDoesNotExist, "Key '%s' doesn't exist in table '%s'", from, t.Name)
		}
		if ix.Primary || strings.EqualFold(to, "PRIMARY") {
			return errno.New(1280, "Incorrect index name '%s'", to)
		}
		if other := t.FindIndex(to); other != nil && other != ix {
			return errno.New(errno.ErDupKeyName, "Duplicate key name '%s'", to)
		}
		ix.Name = to
		return nil
	})
}

// RenameTable runs RENAME TABLE a TO b[, c TO d ...], in order. A table
// keeps its id, so statements still running under the old name read and
// write the same rows.
func (d *DDL) RenameTable(ctx context.Context, currentDB string, s *ast.RenameTableStmt) error {
	unlock, err := d.Catalog.LockDDL(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, tt := range s.TableToTables {
		oldDB, newDB := tt.OldTable.Schema.O, tt.NewTable.Schema.O
		if oldDB == "" {
			oldDB = currentDB
		}
		if newDB == "" {
			newDB = currentDB
		}
		if err := d.renameTableLocked(ctx, oldDB, tt.OldTable.Name.O, newDB, tt.NewTable.Name.O); err != nil {
			return err
		}
	}
	return nil
}

func (d *DDL) renameTableLocked(ctx context.Context, oldDB, oldName, newDB, newName string) error {
	if oldDB == "" || newDB == "" {
		return errno.New(errno.ErNoDB, "No database selected")
	}
	if err := checkName(newName, errno.ErWrongTableName, "Incorrect table name '%s'"); err != nil {
		return err
	}
	return d.Catalog.RunDDLLocked(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		db := is.DB(oldDB)
		var t *catalog.TableInfo
		if db != nil {
			t = is.Table(oldDB, oldName)
		}
		if t == nil {
			return errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", oldDB, oldName)
		}
		ndb := is.DB(newDB)
		if ndb == nil {
			return errno.New(errno.ErBadDB, "Unknown database '%s'", newDB)
		}
		if other := is.Table(newDB, newName); other != nil {
			if other.ID != t.ID || t.Name == newName {
				return errno.New(errno.ErTableExists, "Table '%s' already exists", newName)
			}
		}
		if ndb.ID != db.ID && len(t.Triggers) > 0 {
			// A trigger stays in its table's database.
			return errno.New(errno.ErTrgInWrongSchema, "Trigger in wrong schema")
		}
		refs := is.ReferredBy(db.Name, t.Name)
		nt := t.Clone()
		nt.Name, nt.DBID = newName, ndb.ID
		is.DropTable(db, t)
		is.PutTable(ndb, nt)
		if err := renameParent(m, is, refs, nt, ndb.Name); err != nil {
			return err
		}
		if ndb.ID != db.ID {
			if err := m.DeleteTableRecord(db.ID, t.ID); err != nil {
				return err
			}
		}
		return m.PutTable(nt)
	})
}
