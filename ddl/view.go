package ddl

import (
	"context"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// CreateView stores a view: a TableInfo with no rows whose View holds
// the query's text, and whose columns (names and types of the query's
// result, which the caller planned) serve SHOW and information_schema.
func (d *DDL) CreateView(ctx context.Context, currentDB string, name *ast.TableName, orReplace bool, view *catalog.ViewInfo, cols []*catalog.ColumnInfo) error {
	dbName := name.Schema.O
	if dbName == "" {
		dbName = currentDB
	}
	if dbName == "" {
		return errno.New(errno.ErNoDB, "No database selected")
	}
	if err := checkName(name.Name.O, errno.ErWrongTableName, "Incorrect table name '%s'"); err != nil {
		return err
	}
	t := &catalog.TableInfo{Name: name.Name.O, Charset: "utf8mb4", Collate: "utf8mb4_bin", View: view}
	seen := map[string]bool{}
	for i, c := range cols {
		key := strings.ToLower(c.Name)
		if seen[key] {
			return errno.New(1060, "Duplicate column name '%s'", c.Name)
		}
		seen[key] = true
		c.ID, c.Offset = int64(i+1), i
		t.Columns = append(t.Columns, c)
	}
	t.MaxColumnID = int64(len(cols))
	return d.Catalog.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		db := is.DB(dbName)
		if db == nil {
			return errno.New(errno.ErBadDB, "Unknown database '%s'", dbName)
		}
		if old := is.Table(dbName, t.Name); old != nil {
			if !orReplace || old.View == nil {
				return errno.New(errno.ErTableExists, "Table '%s' already exists", t.Name)
			}
			is.DropTable(db, old)
			if err := m.DeleteTable(db.ID, old.ID); err != nil {
				return err
			}
		}
		id, err := m.NewIDs(1)
		if err != nil {
			return err
		}
		t.ID, t.DBID = id, db.ID
		is.PutTable(db, t)
		return m.PutTable(t)
	})
}

// DropView runs DROP VIEW: 1051 for views that do not exist (unless IF
// EXISTS), 1347 for names of tables.
func (d *DDL) DropView(ctx context.Context, currentDB string, s *ast.DropTableStmt) error {
	var missing []string
	for _, tn := range s.Tables {
		dbName := tn.Schema.O
		if dbName == "" {
			dbName = currentDB
		}
		err := d.Catalog.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
			db := is.DB(dbName)
			var t *catalog.TableInfo
			if db != nil {
				t = is.Table(dbName, tn.Name.O)
			}
			if t == nil {
				missing = append(missing, dbName+"."+tn.Name.O)
				return nil
			}
			if t.View == nil {
				return errno.New(1347, "'%s.%s' is not VIEW", dbName, t.Name)
			}
			is.DropTable(db, t)
			return m.DeleteTable(db.ID, t.ID)
		})
		if err != nil {
			return err
		}
	}
	if len(missing) > 0 && !s.IfExists {
		return errno.New(errno.ErBadTable, "Unknown table '%s'", strings.Join(missing, ","))
	}
	return nil
}
