package session

import (
	"context"
	"reflect"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/metrics"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// stmtArgs is what a statement runs with besides itself: the values of its
// '?' placeholders, and its cached plan when it is a prepared statement
// with the plan cache on (nil otherwise).
type stmtArgs struct {
	params []types.Datum
	cached *cachedPlan
}

// stmtHandler runs one kind of statement and names the metric it is
// counted under.
type stmtHandler struct {
	metric metrics.StmtType
	run    func(s *Session, ctx context.Context, st ast.StmtNode, a stmtArgs) (Result, error)
}

// statements is the dispatch table: every statement Basalt runs, by the
// type of its syntax tree node, with the metric it counts under and what
// runs it. Privileges are checked before (privcheck.go); a statement not
// listed is ER_NOT_SUPPORTED_YET.
var statements = map[reflect.Type]stmtHandler{}

func init() {
	// Queries (query.go, selectinto.go) and writes (dml.go).
	on(metrics.StmtSelect, (*Session).selectStmt)
	on(metrics.StmtSelect, (*Session).setOprStmt)
	on(metrics.StmtOther, (*Session).selectIntoStmt)
	on(metrics.StmtInsert, (*Session).insertStmt)
	on(metrics.StmtUpdate, (*Session).updateStmt)
	on(metrics.StmtDelete, (*Session).deleteStmt)
	on(metrics.StmtLoadData, (*Session).loadDataStmt) // loaddata.go
	on(metrics.StmtOther, (*Session).importIntoStmt)  // import_into.go

	// Transactions (txn_stmt.go, savepoint.go).
	on(metrics.StmtBegin, (*Session).beginStmt)
	on(metrics.StmtCommit, (*Session).commitStmt)
	on(metrics.StmtRollback, (*Session).rollbackStmt)
	on(metrics.StmtOther, (*Session).savepointStmt)
	on(metrics.StmtOther, (*Session).releaseSavepointStmt)

	// Prepared statements by name (sqlprepare.go).
	on(metrics.StmtPrepare, (*Session).prepareStmt)
	on(metrics.StmtExecute, (*Session).executeStmt)
	on(metrics.StmtDeallocate, (*Session).deallocateStmt)

	// Session state and the server (simple_stmt.go).
	on(metrics.StmtSet, (*Session).setStmt)
	on(metrics.StmtUse, (*Session).useStmt)
	on(metrics.StmtOther, (*Session).doStmt)
	on(metrics.StmtOther, (*Session).killStmt)
	on(metrics.StmtOther, (*Session).flushStmt)
	on(metrics.StmtOther, (*Session).lockTablesStmt)
	on(metrics.StmtOther, (*Session).unlockTablesStmt)

	// Schema changes (ddl_stmt.go), queued as DDL jobs on a cluster
	// (ddl_job.go).
	on(metrics.StmtCreateDatabase, queued((*Session).createDatabaseStmt))
	on(metrics.StmtDropDatabase, queued((*Session).dropDatabaseStmt))
	on(metrics.StmtCreateTable, queued((*Session).createTableStmt))
	on(metrics.StmtDropTable, queued((*Session).dropTableStmt))
	on(metrics.StmtCreateView, (*Session).createViewStmt)
	on(metrics.StmtTruncateTable, queued((*Session).truncateTableStmt))
	on(metrics.StmtCreateIndex, queued((*Session).createIndexStmt))
	on(metrics.StmtDropIndex, queued((*Session).dropIndexStmt))
	on(metrics.StmtAlterTable, queued((*Session).alterTableStmt))
	on(metrics.StmtRenameTable, queued((*Session).renameTableStmt))

	// Accounts and grants (acl_stmt.go).
	on(metrics.StmtOther, (*Session).createUserStmt)
	on(metrics.StmtOther, (*Session).alterUserStmt)
	on(metrics.StmtOther, (*Session).dropUserStmt)
	on(metrics.StmtOther, (*Session).setPasswordStmt)
	on(metrics.StmtOther, (*Session).grantStmt)
	on(metrics.StmtOther, (*Session).revokeStmt)

	// SHOW (show.go); EXPLAIN, ANALYZE and ADMIN (admin.go).
	on(metrics.StmtShow, (*Session).showStmt)
	on(metrics.StmtExplain, (*Session).explainStmt)
	on(metrics.StmtAnalyzeTable, (*Session).analyzeStmt)
	on(metrics.StmtOther, (*Session).adminStmt)

	// SQL plan bindings (binding.go).
	on(metrics.StmtOther, (*Session).createBindingStmt)
	on(metrics.StmtOther, (*Session).dropBindingStmt)
	on(metrics.StmtOther, (*Session).setBindingStmt)

	// BACKUP and RESTORE (brie_stmt.go).
	on(metrics.StmtOther, (*Session).brieStmt)
}

// on enters run in the table as the handler of the statements of type T.
func on[T ast.StmtNode](metric metrics.StmtType, run func(s *Session, ctx context.Context, x T, a stmtArgs) (Result, error)) {
	t := reflect.TypeFor[T]()
	if _, dup := statements[t]; dup {
		panic("session: two handlers for " + t.String())
	}
	statements[t] = stmtHandler{metric: metric, run: func(s *Session, ctx context.Context, st ast.StmtNode, a stmtArgs) (Result, error) {
		return run(s, ctx, st.(T), a)
	}}
}

// handlerOf returns the handler of st; for a statement Basalt does not run,
// one that returns ER_NOT_SUPPORTED_YET.
func handlerOf(st ast.StmtNode) stmtHandler {
	if h, ok := statements[reflect.TypeOf(st)]; ok {
		return h
	}
	metric := metrics.StmtOther
	return stmtHandler{metric: metric, run: func(*Session, context.Context, ast.StmtNode, stmtArgs) (Result, error) {
		return Result{}, errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support this statement (%T)", st)
	}}
}

// dispatch runs st without the privilege check and the metrics of run: for
// the driver's internal statements.
func (s *Session) dispatch(ctx context.Context, st ast.StmtNode, params []types.Datum, cached *cachedPlan) (Result, error) {
	return handlerOf(st).run(s, ctx, st, stmtArgs{params: params, cached: cached})
}
