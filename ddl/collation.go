package ddl

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// The character set and collation a new database, table or text column
// gets when nothing names one: MariaDB's defaults.
const (
	defaultCharset   = "utf8mb4"
	defaultCollation = "utf8mb4_general_ci"
)

// resolveCollation returns the character set and collation that a
// CHARACTER SET and a COLLATE clause (either may be empty) name, falling
// back to defCharset and defCollation when both are empty. binAttr is the
// BINARY column attribute, which asks for the character set's _bin
// collation.
func resolveCollation(charset, collate, defCharset, defCollation string, binAttr bool) (string, string, error) {
	if charset == "" && collate == "" && !binAttr {
		return defCharset, defCollation, nil
	}
	var csDefault string
	if charset != "" {
		cs, def, ok := types.LookupCharset(charset)
		if !ok {
			return "", "", errno.New(errno.ErUnknownCharacterSet, "Unknown character set: '%s'", charset)
		}
		charset, csDefault = cs, def
	}
	if collate != "" {
		name, cs, _, ok := types.LookupCollation(collate)
		if !ok {
			return "", "", errno.New(errno.ErUnknownCollation, "Unknown collation: '%s'", collate)
		}
		if charset != "" && cs != charset {
			return "", "", errno.New(errno.ErCollationCharsetMismatch, "COLLATION '%s' is not valid for CHARACTER SET '%s'", name, charset)
		}
		return cs, name, nil
	}
	if charset == "" {
		charset, csDefault = defCharset, defCollation
	}
	if binAttr && charset != "binary" {
		if name, _, _, ok := types.LookupCollation(charset + "_bin"); ok {
			return charset, name, nil
		}
	}
	return charset, csDefault, nil
}

// columnCollation resolves a column definition's character set and
// collation, and reports whether the definition named any (else the
// table's defaults apply).
func columnCollation(cd *ast.ColumnDef, defCharset, defCollation string) (charset, collate string, explicit bool, err error) {
	cs := cd.Tp.GetCharset()
	coll := ""
	if cs == "binary" {
		return "binary", "binary", true, nil
	}
	for _, o := range cd.Options {
		if o.Tp == ast.ColumnOptionCollate {
			coll = o.StrValue
		}
	}
	binAttr := cd.Tp.GetFlag()&mysql.BinaryFlag != 0
	explicit = cs != "" || coll != "" || binAttr
	charset, collate, err = resolveCollation(cs, coll, defCharset, defCollation, binAttr)
	return charset, collate, explicit, err
}

// setColumnCollation records the character set and collation of a text
// column (binary strings get "binary"; other types none). With no
// defaults (defCollation ""), a column that names neither is left
// without: its table's apply (CREATE TABLE, ADD COLUMN).
func setColumnCollation(col *catalog.ColumnInfo, cd *ast.ColumnDef, defCharset, defCollation string) error {
	ft := &col.Type
	if !ft.IsString() {
		return nil
	}
	resolveDef := defCollation
	if resolveDef == "" {
		defCharset, defCollation = defaultCharset, defaultCollation
	}
	cs, coll, explicit, err := columnCollation(cd, defCharset, defCollation)
	if err != nil {
		return err
	}
	if !explicit && (ft.Charset == "binary" || resolveDef == "") {
		return nil
	}
	ft.Charset, ft.Collate = cs, coll
	if cs == "binary" {
		ft.Flag |= mysql.BinaryFlag
	} else {
		ft.Flag &^= mysql.BinaryFlag
	}
	return nil
}

// tableCollation resolves a new table's default character set and
// collation from its options, else the database's.
func tableCollation(s *ast.CreateTableStmt, db *catalog.DBInfo) (string, string, error) {
	var cs, coll string
	for _, o := range s.Options {
		switch o.Tp {
		case ast.TableOptionCharset:
			cs = o.StrValue
		case ast.TableOptionCollate:
			coll = o.StrValue
		}
	}
	defCS, defColl := defaultCharset, defaultCollation
	if db != nil && db.Collate != "" {
		defCS, defColl = db.Charset, db.Collate
	}
	return resolveCollation(cs, coll, defCS, defColl, false)
}

// applyTableCollation sets a new table's default character set and
// collation, and gives its text columns that named none the table's.
func applyTableCollation(t *catalog.TableInfo, s *ast.CreateTableStmt, db *catalog.DBInfo) error {
	cs, coll, err := tableCollation(s, db)
	if err != nil {
		return err
	}
	t.Charset, t.Collate = cs, coll
	for i, cd := range s.Cols {
		col := t.Columns[i]
		if col.Type.IsString() && col.Type.Charset != "binary" {
			if err := setColumnCollation(col, cd, cs, coll); err != nil {
				return err
			}
		}
		if err := checkTypeLimits(col, true); err != nil {
			return err
		}
	}
	return nil
}

// databaseCollation resolves CREATE DATABASE's character set and collation.
func databaseCollation(s *ast.CreateDatabaseStmt) (string, string, error) {
	var cs, coll string
	for _, o := range s.Options {
		switch o.Tp {
		case ast.DatabaseOptionCharset:
			cs = o.Value
		case ast.DatabaseOptionCollate:
			coll = o.Value
		}
	}
	return resolveCollation(cs, coll, defaultCharset, defaultCollation, false)
}
