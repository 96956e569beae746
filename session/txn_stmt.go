package session

import (
	"context"
	"regexp"
	"strings"

	"github.com/basalt-db/basalt/kv"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// BEGIN, COMMIT and ROLLBACK; savepoints are in savepoint.go. The transaction itself (begin, commit,
// rollback, the schema it pins) is in session.go.

// beginStmt commits an open transaction, as MySQL's implicit commit does,
// and opens an explicit one: pessimistic or optimistic as BEGIN
// PESSIMISTIC / OPTIMISTIC says, else as tidb_txn_mode says. The
// transaction starts, and takes its snapshot, at its first statement that
// reads or writes data (startTxn), as in InnoDB; START TRANSACTION WITH
// CONSISTENT SNAPSHOT starts it at once.
func (s *Session) beginStmt(ctx context.Context, x *ast.BeginStmt, _ stmtArgs) (Result, error) {
	if err := s.commit(ctx); err != nil {
		return Result{}, err
	}
	mode := s.defaultMode()
	switch strings.ToUpper(x.Mode) {
	case "PESSIMISTIC":
		mode = kv.Pessimistic
	case "OPTIMISTIC":
		mode = kv.Optimistic
	}
	if consistentSnapshot.MatchString(x.Text()) {
		return Result{}, s.begin(true, mode)
	}
	s.deferred, s.deferredMode, s.explicit = true, mode, true
	return Result{}, nil
}

// consistentSnapshot finds WITH CONSISTENT SNAPSHOT in a START
// TRANSACTION, which the parser accepts but does not record.
var consistentSnapshot = regexp.MustCompile(`(?i)\bwith\s+consistent\s+snapshot\b`)

func (s *Session) commitStmt(ctx context.Context, _ *ast.CommitStmt, _ stmtArgs) (Result, error) {
	return Result{}, s.commit(ctx)
}

func (s *Session) rollbackStmt(_ context.Context, x *ast.RollbackStmt, _ stmtArgs) (Result, error) {
	if x.SavepointName != "" {
		return Result{}, s.rollbackToSavepoint(x.SavepointName)
	}
	s.rollback()
	return Result{}, nil
}
