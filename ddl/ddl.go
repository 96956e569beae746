// Package ddl runs schema changes: it turns CREATE/DROP/TRUNCATE/RENAME,
// CREATE/DROP INDEX and ALTER TABLE statements into catalog records, and
// moves table data when a change needs it (index backfill, MODIFY
// COLUMN's row rewrite, dropped data), with package table's row and index
// encodings, the ones DML writes.
//
// Changes are online, as in F1 and TiDB (alter.go): a new index goes
// delete-only, then write-only, one schema version each; once every
// transaction that started under the older versions has ended (Waiter),
// the existing rows are backfilled (index.go) and the index becomes
// public. Column changes are in column.go; a MODIFY COLUMN that rewrites
// the rows is in modify.go.
package ddl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Waiter waits until no statement or transaction runs under a schema
// version older than v: on this SQL node and, on a cluster, on every other
// (session.Driver with schemasync). On a cluster every step also returns
// only once the other nodes have loaded it (catalog.Cluster.Published).
type Waiter func(ctx context.Context, v int64) error

// DDL runs schema changes against one catalog and store.
type DDL struct {
	Store   kv.Storage
	Catalog *catalog.Catalog
	Wait    Waiter
	// SplitTable (TiDB's split-table) starts a region at the first key of
	// each table CREATE TABLE or TRUNCATE TABLE makes, on a store with
	// regions (kv.RegionSplitter).
	SplitTable bool
}

// CreateDatabase runs CREATE DATABASE.
func (d *DDL) CreateDatabase(ctx context.Context, s *ast.CreateDatabaseStmt) error {
	name := s.Name.O
	if err := checkName(name, errno.ErWrongDBName, "Incorrect database name '%s'"); err != nil {
		return err
	}
	return d.Catalog.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		if is.DB(name) != nil {
			if s.IfNotExists {
				return nil
			}
			return errno.New(errno.ErDBCreateExists, "Can't create database '%s'; database exists", name)
		}
		id, err := m.NewIDs(1)
		if err != nil {
			return err
		}
		cs, coll, err := databaseCollation(s)
		if err != nil {
			return err
		}
		db := &catalog.DBInfo{ID: id, Name: name, Charset: cs, Collate: coll}
		is.AddDB(db)
		return m.PutDB(db)
	})
}

// DropDatabase runs DROP DATABASE and deletes its tables' data.
func (d *DDL) DropDatabase(ctx context.Context, s *ast.DropDatabaseStmt) error {
	var dropped []*catalog.TableInfo
	err := d.Catalog.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		db := is.DB(s.Name.O)
		if db == nil {
			if s.IfExists {
				return nil
			}
			return errno.New(errno.ErDBDropExists, "Can't drop database '%s'; database doesn't exist", s.Name.O)
		}
		if fkChecks(ctx) {
			for _, t := range is.Tables(db.Name) {
				for _, r := range is.ReferredBy(db.Name, t.Name) {
					if r.Child.DBID != db.ID {
						return errno.New(errno.ErFKCannotDropParent, "Cannot drop table '%s' referenced by a foreign key constraint '%s' on table '%s'.",
							t.Name, r.FK.Name, r.Child.Name)
					}
				}
			}
		}
		for _, t := range is.Tables(db.Name) {
			if err := m.DeleteTable(db.ID, t.ID); err != nil {
				return err
			}
			dropped = append(dropped, t)
		}
		is.DropDB(db.Name)
		return m.DeleteDB(db.ID)
	})
	if err != nil {
		return err
	}
	for _, t := range dropped {
		d.Catalog.ForgetAutoID(t.ID)
		if err := d.deleteData(ctx, t.ID); err != nil {
			return err
		}
	}
	return nil
}

func checkName(name string, code uint16, format string) error {
	if name == "" || len(name) > 64 || strings.HasSuffix(name, " ") {
		return errno.New(code, format, name)
	}
	return nil
}

// CreateTable runs CREATE TABLE.
func (d *DDL) CreateTable(ctx context.Context, currentDB string, s *ast.CreateTableStmt) error {
	dbName := s.Table.Schema.O
	if dbName == "" {
		dbName = currentDB
	}
	if dbName == "" {
		return errno.New(errno.ErNoDB, "No database selected")
	}
	if s.ReferTable != nil || s.Select != nil {
		return errno.New(errno.ErNotSupportedYet, "CREATE TABLE ... LIKE / AS SELECT is not supported yet")
	}
	if err := checkName(s.Table.Name.O, errno.ErWrongTableName, "Incorrect table name '%s'"); err != nil {
		return err
	}
	t, fks, err := buildTableInfo(s)
	if err != nil {
		return err
	}
	checks := fkChecks(ctx)
	created := false
	err = d.Catalog.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		created = false
		db := is.DB(dbName)
		if db == nil {
			return errno.New(errno.ErBadDB, "Unknown database '%s'", dbName)
		}
		if is.Table(dbName, t.Name) != nil {
			if s.IfNotExists {
				return nil
			}
			return errno.New(errno.ErTableExists, "Table '%s' already exists", t.Name)
		}
		if err := applyTableCollation(t, s, db); err != nil {
			return err
		}
		if err := addFKs(is, db.Name, t, fks, checks); err != nil {
			return err
		}
		n := 1 + len(t.Indexes)
		first, err := m.NewIDs(n)
		if err != nil {
			return err
		}
		t.ID, t.DBID = first, db.ID
		for i, ix := range t.Indexes {
			ix.ID = int64(i + 1)
		}
		t.MaxIndexID = int64(len(t.Indexes))
		is.PutTable(db, t)
		created = true
		return m.PutTable(t)
	})
	if err == nil && created {
		d.splitTable(ctx, t.ID)
	}
	return err
}

// splitTable starts a region at the table's first key when SplitTable is
// set and the store has regions, as TiDB does for a new table: each table
// then has regions of its own, which PD can move and whose leaders it can
// spread over the stores. The table is already made: a split that fails
// is logged, not returned (TiDB's behaviour too); the table's keys then
// stay in the region that held them.
func (d *DDL) splitTable(ctx context.Context, tableID int64) {
	sp, ok := d.Store.(kv.RegionSplitter)
	if !d.SplitTable || !ok {
		return
	}
	if err := sp.SplitRegions(ctx, [][]byte{tablecodec.TablePrefix(tableID)}); err != nil {
		slog.Warn("split-table: the new table's region was not split", "table_id", tableID, "err", err)
	}
}

// buildTableInfo turns CREATE TABLE's definitions into a TableInfo (ids
// left to the caller), and returns its FOREIGN KEY clauses, which need
// the schema (addFKs). Column-level REFERENCES are ignored, as in MySQL
// 8.0.
func buildTableInfo(s *ast.CreateTableStmt) (*catalog.TableInfo, []*ast.Constraint, error) {
	t := &catalog.TableInfo{Name: s.Table.Name.O, Charset: defaultCharset, Collate: defaultCollation}
	for _, o := range s.Options {
		switch o.Tp {
		case ast.TableOptionComment:
			t.Comment = o.StrValue
		case ast.TableOptionAutoIncrement:
			t.AutoIncStart = int64(o.UintValue)
		case ast.TableOptionAutoIdCache:
			if o.UintValue > math.MaxInt64 {
				return nil, nil, errno.New(errno.ErUnknown, "table option auto_id_cache overflows int64")
			}
			t.AutoIDCache = int64(o.UintValue)
		}
	}
	var constraints, fks []*ast.Constraint
	for i, cd := range s.Cols {
		col, cs, err := buildColumn(cd, i)
		if err != nil {
			return nil, nil, err
		}
		if t.FindColumn(col.Name) != nil {
			return nil, nil, errno.New(errno.ErDupFieldName, "Duplicate column name '%s'", col.Name)
		}
		t.MaxColumnID++
		col.ID = t.MaxColumnID
		t.Columns = append(t.Columns, col)
		constraints = append(constraints, cs...)
	}
	constraints = append(constraints, s.Constraints...)
	for _, c := range constraints {
		var ix *catalog.IndexInfo
		switch c.Tp {
		case ast.ConstraintPrimaryKey:
			if t.PrimaryKey() != nil {
				return nil, nil, errno.New(errno.ErMultiplePriKey, "Multiple primary key defined")
			}
			ix = &catalog.IndexInfo{Name: "PRIMARY", Primary: true, Unique: true}
		case ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
			ix = &catalog.IndexInfo{Name: c.Name, Unique: true}
		case ast.ConstraintKey, ast.ConstraintIndex:
			ix = &catalog.IndexInfo{Name: c.Name}
		case ast.ConstraintForeignKey:
			fks = append(fks, c)
			continue
		case ast.ConstraintCheck, ast.ConstraintFulltext:
			continue // accepted, not enforced
		default:
			return nil, nil, errno.New(errno.ErNotSupportedYet, "this constraint is not supported yet")
		}
		if err := fillIndexColumns(t, ix, c.Keys); err != nil {
			return nil, nil, err
		}
		if ix.Name == "" {
			ix.Name = uniqueIndexName(t, ix.Columns[0].Name)
		}
		if !ix.Primary && t.FindIndex(ix.Name) != nil {
			return nil, nil, errno.New(errno.ErDupKeyName, "Duplicate key name '%s'", ix.Name)
		}
		if ix.Primary {
			for _, ic := range ix.Columns {
				t.Columns[ic.Offset].Type.Flag |= mysql.NotNullFlag | mysql.PriKeyFlag
			}
		}
		t.Indexes = append(t.Indexes, ix)
	}
	if pk := t.PrimaryKey(); pk != nil {
		if len(pk.Columns) == 1 && t.Columns[pk.Columns[0].Offset].Type.IsInteger() && pk.Columns[0].Length <= 0 {
			t.PKIsHandle = true
		} else if !hasPrefix(pk) {
			t.CommonHandle = true
		}
	}
	autos := 0
	for _, c := range t.Columns {
		if c.AutoIncrement {
			autos++
			if !isIndexedFirst(t, c.Offset) {
				return nil, nil, errno.New(errno.ErWrongAutoKey, "Incorrect table definition; there can be only one auto column and it must be defined as a key")
			}
		}
	}
	if autos > 1 {
		return nil, nil, errno.New(errno.ErWrongAutoKey, "Incorrect table definition; there can be only one auto column and it must be defined as a key")
	}
	return t, fks, nil
}

func hasPrefix(ix *catalog.IndexInfo) bool {
	for _, c := range ix.Columns {
		if c.Length > 0 {
			return true
		}
	}
	return false
}

func isIndexedFirst(t *catalog.TableInfo, off int) bool {
	for _, ix := range t.Indexes {
		if ix.Columns[0].Offset == off {
			return true
		}
	}
	return false
}

func uniqueIndexName(t *catalog.TableInfo, base string) string {
	name := base
	for i := 2; t.FindIndex(name) != nil || strings.EqualFold(name, "PRIMARY"); i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	return name
}

func fillIndexColumns(t *catalog.TableInfo, ix *catalog.IndexInfo, keys []*ast.IndexPartSpecification) error {
	for _, k := range keys {
		if k.Column == nil {
			return errno.New(errno.ErNotSupportedYet, "expression indexes are not supported yet")
		}
		col := t.FindColumn(k.Column.Name.O)
		if col == nil {
			return errno.New(1072, "Key column '%s' doesn't exist in table", k.Column.Name.O)
		}
		length := k.Length
		if length <= 0 {
			length = -1
		}
		if length > 0 && !col.Type.IsString() {
			return errno.New(1089, "Incorrect prefix key; the used key part isn't a string, the used length is longer than the key part, or the storage engine doesn't support unique prefix keys")
		}
		ix.Columns = append(ix.Columns, catalog.IndexColumn{Name: col.Name, Offset: col.Offset, Length: length})
	}
	return nil
}

// buildColumn turns a column definition into a ColumnInfo, and returns the
// column-level key constraints (PRIMARY KEY, UNIQUE) as table constraints.
func buildColumn(cd *ast.ColumnDef, offset int) (*catalog.ColumnInfo, []*ast.Constraint, error) {
	ft := cd.Tp
	col := &catalog.ColumnInfo{Name: cd.Name.Name.O, Offset: offset}
	if err := checkName(col.Name, errno.ErWrongColumnName, "Incorrect column name '%s'"); err != nil {
		return nil, nil, err
	}
	col.Type = types.FieldType{Tp: ft.GetType(), Flag: ft.GetFlag(), Flen: ft.GetFlen(), Decimal: ft.GetDecimal(),
		Charset: ft.GetCharset(), Collate: ft.GetCollate(), Elems: ft.GetElems()}
	if err := normalizeType(col); err != nil {
		return nil, nil, err
	}
	var cs []*ast.Constraint
	keyPart := []*ast.IndexPartSpecification{{Column: cd.Name}}
	for _, o := range cd.Options {
		switch o.Tp {
		case ast.ColumnOptionNotNull:
			col.Type.Flag |= mysql.NotNullFlag
		case ast.ColumnOptionNull:
			col.Type.Flag &^= mysql.NotNullFlag
		case ast.ColumnOptionAutoIncrement:
			if !col.Type.IsInteger() && col.Type.Tp != mysql.TypeDouble && col.Type.Tp != mysql.TypeFloat {
				return nil, nil, errno.New(1063, "Incorrect column specifier for column '%s'", col.Name)
			}
			col.AutoIncrement = true
			col.Type.Flag |= mysql.AutoIncrementFlag
		case ast.ColumnOptionPrimaryKey:
			cs = append(cs, &ast.Constraint{Tp: ast.ConstraintPrimaryKey, Keys: keyPart})
		case ast.ColumnOptionUniqKey:
			cs = append(cs, &ast.Constraint{Tp: ast.ConstraintUniqKey, Keys: keyPart})
		case ast.ColumnOptionComment:
			if v, ok := o.Expr.(*parserdriver.ValueExpr); ok {
				col.Comment = v.GetString()
			}
		case ast.ColumnOptionDefaultValue:
			if err := setDefault(col, o.Expr); err != nil {
				return nil, nil, err
			}
		case ast.ColumnOptionOnUpdate:
			col.OnUpdateNow = true
			col.Type.Flag |= mysql.OnUpdateNowFlag
		}
	}
	if err := setColumnCollation(col, cd, "", ""); err != nil {
		return nil, nil, err
	}
	if err := checkTypeLimits(col, col.Type.Collate != ""); err != nil {
		return nil, nil, err
	}
	return col, cs, nil
}

func normalizeType(col *catalog.ColumnInfo) error {
	ft := &col.Type
	switch ft.Tp {
	case mysql.TypeNewDecimal:
		if ft.Flen == -1 || ft.Flen == 0 {
			ft.Flen = 10
		}
		if ft.Decimal == -1 {
			ft.Decimal = 0
		}
		if ft.Flen > 65 {
			return errno.New(errno.ErTooBigPrecision, "Too-big precision %d specified for '%s'. Maximum is 65.", ft.Flen, col.Name)
		}
		if ft.Decimal > 30 {
			return errno.New(errno.ErTooBigScale, "Too big scale %d specified for column '%s'. Maximum is 30.", ft.Decimal, col.Name)
		}
	case mysql.TypeDatetime, mysql.TypeTimestamp, mysql.TypeDuration:
		if ft.Decimal < 0 {
			ft.Decimal = 0
		}
		if ft.Decimal > 6 {
			return errno.New(1426, "Too-big precision %d specified for '%s'. Maximum is 6.", ft.Decimal, col.Name)
		}
	case mysql.TypeString, mysql.TypeVarchar, mysql.TypeVarString:
		if ft.Flen < 0 {
			ft.Flen = 1
		}
	case mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		switch ft.Tp {
		case mysql.TypeTinyBlob:
			ft.Flen = 255
		case mysql.TypeBlob:
			ft.Flen = 65535
		case mysql.TypeMediumBlob:
			ft.Flen = 16777215
		default:
			ft.Flen = 4294967295
		}
	}
	if ft.IsString() && ft.Charset == "binary" {
		ft.Flag |= mysql.BinaryFlag
	}
	return nil
}

func setDefault(col *catalog.ColumnInfo, e ast.ExprNode) error {
	switch x := e.(type) {
	case *parserdriver.ValueExpr:
		col.HasDefault = true
		if x.Datum.IsNull() {
			if col.Type.NotNull() {
				return errno.New(errno.ErInvalidDefault, "Invalid default value for '%s'", col.Name)
			}
			col.DefaultNull = true
			return nil
		}
		col.Default = string(types.ToText(x.Datum))
		return nil
	case *ast.FuncCallExpr:
		switch x.FnName.L {
		case "current_timestamp", "now", "localtime", "localtimestamp":
			col.HasDefault, col.DefaultNow = true, true
			return nil
		}
	case *ast.UnaryOperationExpr:
		if v, ok := x.V.(*parserdriver.ValueExpr); ok {
			col.HasDefault = true
			col.Default = "-" + string(types.ToText(v.Datum))
			return nil
		}
	}
	return errno.New(errno.ErInvalidDefault, "Invalid default value for '%s'", col.Name)
}

// DropTable runs DROP TABLE and deletes the tables' data.
func (d *DDL) DropTable(ctx context.Context, currentDB string, s *ast.DropTableStmt) error {
	var missing []string
	// A table that refers to one being dropped may be dropped with it.
	checks := fkChecks(ctx)
	dropping := map[int64]bool{}
	for _, tn := range s.Tables {
		dbName := tn.Schema.O
		if dbName == "" {
			dbName = currentDB
		}
		if t := d.Catalog.InfoSchema().Table(dbName, tn.Name.O); t != nil {
			dropping[t.ID] = true
		}
	}
	for _, tn := range s.Tables {
		dbName := tn.Schema.O
		if dbName == "" {
			dbName = currentDB
		}
		var dropped *catalog.TableInfo
		err := d.Catalog.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
			db := is.DB(dbName)
			var t *catalog.TableInfo
			if db != nil {
				t = is.Table(dbName, tn.Name.O)
			}
			if t == nil || t.View != nil {
				missing = append(missing, dbName+"."+tn.Name.O)
				return nil
			}
			if checks {
				if err := checkDropParent(is, db.Name, t, dropping); err != nil {
					return err
				}
			}
			is.DropTable(db, t)
			dropped = t
			return m.DeleteTable(db.ID, t.ID)
		})
		if err != nil {
			return err
		}
		if dropped != nil {
			d.Catalog.ForgetAutoID(dropped.ID)
			if err := d.deleteData(ctx, dropped.ID); err != nil {
				return err
			}
		}
	}
	if len(missing) > 0 && !s.IfExists {
		return errno.New(errno.ErBadTable, "Unknown table '%s'", strings.Join(missing, ","))
	}
	return nil
}

// TruncateTable gives the table a new id (so old data is unreachable at
// once) and deletes the old data.
func (d *DDL) TruncateTable(ctx context.Context, currentDB string, tn *ast.TableName) error {
	dbName := tn.Schema.O
	if dbName == "" {
		dbName = currentDB
	}
	var oldID, newID int64
	err := d.Catalog.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		db := is.DB(dbName)
		if db == nil {
			return errno.New(errno.ErBadDB, "Unknown database '%s'", dbName)
		}
		t := is.Table(dbName, tn.Name.O)
		if t == nil {
			return errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", dbName, tn.Name.O)
		}
		if t.View != nil {
			return errno.New(1347, "'%s.%s' is not BASE TABLE", dbName, t.Name)
		}
		if fkChecks(ctx) {
			for _, r := range is.ReferredBy(db.Name, t.Name) {
				if r.Child.ID != t.ID {
					cdb := is.DBByID(r.Child.DBID)
					return errno.New(errno.ErTruncateIllegalFK, "Cannot truncate a table referenced in a foreign key constraint (`%s`.`%s`, CONSTRAINT `%s`)",
						cdb.Name, r.Child.Name, r.FK.Name)
				}
			}
		}
		id, err := m.NewIDs(1)
		if err != nil {
			return err
		}
		if err := m.DeleteTable(db.ID, t.ID); err != nil {
			return err
		}
		nt := t.Clone()
		oldID, nt.ID, newID = t.ID, id, id
		is.DropTable(db, t)
		is.PutTable(db, nt)
		return m.PutTable(nt)
	})
	if err != nil {
		return err
	}
	d.Catalog.ForgetAutoID(oldID)
	d.splitTable(ctx, newID)
	return d.deleteData(ctx, oldID)
}

// deleteData deletes every key of a dropped table, once every transaction
// that could still see the table has ended: at once if the store can drop
// a range, else in batches of transactions.
func (d *DDL) deleteData(ctx context.Context, tableID int64) error {
	start, end := tablecodec.TablePrefix(tableID), tablecodec.TableEnd(tableID)
	if err := d.Wait(ctx, d.Catalog.InfoSchema().Version); err != nil {
		return err
	}
	return d.dropRange(ctx, start, end)
}

// dropRange deletes every key in [start, end), which nobody reads any more.
func (d *DDL) dropRange(ctx context.Context, start, end []byte) error {
	if rd, ok := d.Store.(kv.RangeDeleter); ok {
		return rd.DeleteRange(ctx, start, end)
	}
	return deleteRange(ctx, d.Store, start, end)
}

func deleteRange(ctx context.Context, store kv.Storage, start, end []byte) error {
	for {
		txn, err := store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
		if err != nil {
			return err
		}
		it, err := txn.Iter(start, end)
		if err != nil {
			txn.Rollback()
			return err
		}
		n := 0
		for ; it.Valid() && n < 4096; n++ {
			if err := txn.Delete(append([]byte(nil), it.Key()...)); err != nil {
				it.Close()
				txn.Rollback()
				return err
			}
			if err := it.Next(); err != nil {
				it.Close()
				txn.Rollback()
				return err
			}
		}
		it.Close()
		if n == 0 {
			return txn.Rollback()
		}
		if err := txn.Commit(ctx); err != nil && !errors.Is(err, kv.ErrWriteConflict) {
			return err
		}
	}
}
