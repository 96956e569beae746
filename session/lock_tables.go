package session

import (
	"context"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// LOCK TABLES and UNLOCK TABLES, as far as a store of row locks and
// snapshots honours them. What dump tools take READ locks for is one
// consistent view of the tables they read, which a snapshot gives
// without stopping other sessions' writes: LOCK TABLES with only READ
// locks opens a transaction, so every read until UNLOCK TABLES sees the
// data as it was at LOCK TABLES. WRITE locks keep other sessions out in
// MySQL; here they do not (each row written is still locked as in any
// statement), and the session is not limited to the tables it locked
// (MySQL's 1100) nor kept from writing those it locked READ (1099).
// As in MySQL, LOCK TABLES commits the open transaction, the tables
// must exist (1146), and UNLOCK TABLES commits the transaction when
// tables were locked.

func (s *Session) lockTablesStmt(ctx context.Context, x *ast.LockTablesStmt, _ stmtArgs) (Result, error) {
	if err := s.commit(ctx); err != nil {
		return Result{}, err
	}
	s.tablesLocked = false
	is := s.d.catalog.InfoSchema()
	readOnly := true
	for _, l := range x.TableLocks {
		db := l.Table.Schema.O
		if db == "" {
			db = s.db
		}
		if db == "" {
			return Result{}, errno.New(errno.ErNoDB, "No database selected")
		}
		if !strings.EqualFold(db, planner.InfoSchemaDB) && is.Table(db, l.Table.Name.O) == nil {
			return Result{}, errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", db, l.Table.Name.O)
		}
		if l.Type != ast.TableLockRead && l.Type != ast.TableLockReadLocal {
			readOnly = false
		}
	}
	if readOnly {
		if err := s.begin(true, kv.Optimistic); err != nil {
			return Result{}, err
		}
	}
	s.tablesLocked = true
	return Result{}, nil
}

func (s *Session) unlockTablesStmt(ctx context.Context, _ *ast.UnlockTablesStmt, _ stmtArgs) (Result, error) {
	if !s.tablesLocked {
		return Result{}, nil
	}
	s.tablesLocked = false
	return Result{}, s.commit(ctx)
}
