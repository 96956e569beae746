package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Schema changes. Each commits the session's open transaction first, as
// MySQL's implicit commit does, then runs in package ddl.

// ddl runs a schema change after an implicit commit.
func (s *Session) ddl(ctx context.Context, fn func() error) (Result, error) {
	if err := s.commit(ctx); err != nil {
		return Result{}, err
	}
	return Result{}, fn()
}

// createDatabaseStmt reports one row affected for a new database, as MySQL
// does.
func (s *Session) createDatabaseStmt(ctx context.Context, x *ast.CreateDatabaseStmt, _ stmtArgs) (Result, error) {
	existed := s.d.catalog.InfoSchema().DB(x.Name.O) != nil
	res, err := s.ddl(ctx, func() error { return s.d.ddl.CreateDatabase(ctx, x) })
	if err == nil && !existed {
		res.AffectedRows = 1
	}
	return res, err
}

// dropDatabaseStmt reports as many rows affected as the database had
// tables, as MySQL does, and leaves no current database if it was that one.
func (s *Session) dropDatabaseStmt(ctx context.Context, x *ast.DropDatabaseStmt, _ stmtArgs) (Result, error) {
	tables := len(s.d.catalog.InfoSchema().Tables(x.Name.O))
	res, err := s.ddl(ctx, func() error {
		err := s.d.ddl.DropDatabase(ctx, x)
		if err == nil && strings.EqualFold(s.db, x.Name.O) {
			s.db = ""
		}
		return err
	})
	if err == nil {
		res.AffectedRows = uint64(tables)
	}
	return res, err
}

func (s *Session) createTableStmt(ctx context.Context, x *ast.CreateTableStmt, _ stmtArgs) (Result, error) {
	return s.ddl(ctx, func() error { return s.d.ddl.CreateTable(ctx, s.db, x) })
}

// dropTableStmt is DROP TABLE, and DROP VIEW (the same node).
func (s *Session) dropTableStmt(ctx context.Context, x *ast.DropTableStmt, _ stmtArgs) (Result, error) {
	if x.IsView {
		return s.ddl(ctx, func() error { return s.d.ddl.DropView(ctx, s.db, x) })
	}
	return s.ddl(ctx, func() error { return s.d.ddl.DropTable(ctx, s.db, x) })
}

func (s *Session) createViewStmt(ctx context.Context, x *ast.CreateViewStmt, _ stmtArgs) (Result, error) {
	return s.ddl(ctx, func() error { return s.createView(ctx, x) })
}

func (s *Session) truncateTableStmt(ctx context.Context, x *ast.TruncateTableStmt, _ stmtArgs) (Result, error) {
	return s.ddl(ctx, func() error { return s.d.ddl.TruncateTable(ctx, s.db, x.Table) })
}

func (s *Session) createIndexStmt(ctx context.Context, x *ast.CreateIndexStmt, _ stmtArgs) (Result, error) {
	ctx = s.reorgContext(ctx)
	return s.ddl(ctx, func() error {
		unique := x.KeyType == ast.IndexKeyTypeUnique
		return s.d.ddl.CreateIndex(ctx, s.db, x.Table, x.IndexName, unique, x.IndexPartSpecifications, x.IfNotExists)
	})
}

func (s *Session) dropIndexStmt(ctx context.Context, x *ast.DropIndexStmt, _ stmtArgs) (Result, error) {
	return s.ddl(ctx, func() error { return s.d.ddl.DropIndex(ctx, s.db, x.Table, x.IndexName, x.IfExists) })
}

// reorgContext marks ctx for a schema change that backfills in
// transactions: tidb_ddl_enable_fast_reorg (global, as TiDB's) is off.
func (s *Session) reorgContext(ctx context.Context) context.Context {
	if v, err := s.sysVar("tidb_ddl_enable_fast_reorg", true); err == nil && !types.ToBool(v) {
		return ddl.WithoutFastReorg(ctx)
	}
	return ctx
}

// alterTableStmt reports the rows an ALTER copied and the warnings their
// conversion raised, as MySQL's "Records: n  Duplicates: 0  Warnings: w".
func (s *Session) alterTableStmt(ctx context.Context, x *ast.AlterTableStmt, _ stmtArgs) (Result, error) {
	if err := s.commit(ctx); err != nil {
		return Result{}, err
	}
	// DISABLE KEYS and ENABLE KEYS, which dumps wrap their INSERTs in,
	// change nothing on InnoDB, which says so in a note; so here.
	specs := x.Specs[:0:0]
	for _, spec := range x.Specs {
		if spec.Tp == ast.AlterTableDisableKeys || spec.Tp == ast.AlterTableEnableKeys {
			db := x.Table.Schema.O
			if db == "" {
				db = s.db
			}
			if db == "" {
				return Result{}, errno.New(errno.ErNoDB, "No database selected")
			}
			if s.d.catalog.InfoSchema().Table(db, x.Table.Name.O) == nil {
				return Result{}, errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", db, x.Table.Name.O)
			}
			note := errno.New(1031, // ER_ILLEGAL_HA
				"Table storage engine for '%s' doesn't have this option", x.Table.Name.O)
			note.Note = true
			s.warnings = append(s.warnings, note)
			continue
		}
		specs = append(specs, spec)
	}
	if len(specs) == 0 {
		return Result{}, nil
	}
	if len(specs) != len(x.Specs) {
		y := *x
		y.Specs = specs
		x = &y
	}
	res, err := s.d.ddl.AlterTable(s.reorgContext(ctx), s.db, x, uint32(s.sqlMode()))
	s.warnings = append(s.warnings, res.Warnings...)
	if err != nil {
		return Result{}, err
	}
	return Result{AffectedRows: res.Rows,
		Info: fmt.Sprintf("Records: %d  Duplicates: 0  Warnings: %d", res.Rows, len(res.Warnings))}, nil
}

func (s *Session) renameTableStmt(ctx context.Context, x *ast.RenameTableStmt, _ stmtArgs) (Result, error) {
	return s.ddl(ctx, func() error { return s.d.ddl.RenameTable(ctx, s.db, x) })
}
