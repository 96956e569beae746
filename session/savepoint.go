package session

import (
	"context"
	"regexp"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// SAVEPOINT, ROLLBACK TO SAVEPOINT and RELEASE SAVEPOINT, with MySQL's
// rules: names are case-insensitive; a SAVEPOINT whose name is taken
// replaces the old one (the savepoints set after it stay); ROLLBACK TO
// undoes the transaction's writes since the savepoint, keeps it and drops
// the later ones; RELEASE drops it and the later ones. Outside a
// transaction under autocommit, SAVEPOINT is accepted and marks nothing.
//
// Each savepoint is a mark of the transaction's write buffer (kv.Txn's
// Savepoint), which statements also use to undo themselves when they
// fail, nested inside. Pessimistic locks taken after a savepoint are kept
// by ROLLBACK TO, as in InnoDB and TiDB.

// savepoint is one SAVEPOINT of the open transaction: its name, and its
// mark in the transaction's write buffer, or -1 while the transaction has
// not started (deferred; startTxn marks it then, on the empty buffer).
type savepoint struct {
	name string
	mark int
}

func (s *Session) savepointStmt(_ context.Context, x *ast.SavepointStmt, _ stmtArgs) (Result, error) {
	if s.txn == nil && !s.deferred {
		if s.autocommit() {
			return Result{}, nil
		}
		// Under autocommit=0 the savepoint belongs to the transaction
		// that is open from here on.
		s.deferred, s.deferredMode, s.explicit = true, s.defaultMode(), true
	}
	if i := s.findSavepoint(x.Name); i >= 0 {
		s.savepoints = append(s.savepoints[:i], s.savepoints[i+1:]...)
	}
	mark := -1
	if s.txn != nil {
		mark = s.txn.Savepoint()
	}
	s.savepoints = append(s.savepoints, savepoint{name: x.Name, mark: mark})
	return Result{}, nil
}

// rollbackToSavepoint is ROLLBACK [WORK] TO [SAVEPOINT] name.
func (s *Session) rollbackToSavepoint(name string) error {
	i := s.findSavepoint(name)
	if i < 0 {
		return noSavepoint(name)
	}
	sp := &s.savepoints[i]
	if s.txn != nil && sp.mark >= 0 {
		// RollbackTo closes the mark and every later one; the
		// savepoint stays, on a new mark at the same place.
		s.txn.RollbackTo(sp.mark)
		sp.mark = s.txn.Savepoint()
	}
	s.savepoints = s.savepoints[:i+1]
	return nil
}

func (s *Session) releaseSavepointStmt(_ context.Context, x *ast.ReleaseSavepointStmt, _ stmtArgs) (Result, error) {
	i := s.findSavepoint(x.Name)
	if i < 0 {
		return Result{}, noSavepoint(x.Name)
	}
	if s.txn != nil && s.savepoints[i].mark >= 0 {
		s.txn.ReleaseSavepoint(s.savepoints[i].mark)
	}
	s.savepoints = s.savepoints[:i]
	return Result{}, nil
}

// findSavepoint returns the index of the savepoint named name, or -1.
func (s *Session) findSavepoint(name string) int {
	for i, sp := range s.savepoints {
		if strings.EqualFold(sp.name, name) {
			return i
		}
	}
	return -1
}

// markSavepoints marks, in a transaction that has just started, the
// savepoints set before it did: at its empty buffer.
func (s *Session) markSavepoints() {
	for i := range s.savepoints {
		if s.savepoints[i].mark < 0 {
			s.savepoints[i].mark = s.txn.Savepoint()
		}
	}
}

// rollbackWork finds the WORK of ROLLBACK WORK TO at the start of a
// statement: MySQL's grammar has it, TiDB's does not.
var rollbackWork = regexp.MustCompile(`(?i)(^|;)(\s*ROLLBACK)\s+WORK(\s+TO\b)`)

// parseRollbackWork parses sql, whose plain parse failed with perr,
// without the WORK of its ROLLBACK WORK TO statements; it returns sql and
// perr as they were when that does not help.
func (s *Session) parseRollbackWork(sql string, perr error) ([]ast.StmtNode, string, error) {
	cut := rollbackWork.ReplaceAllString(sql, "$1$2$3")
	if cut == sql {
		return nil, sql, perr
	}
	stmts, _, err := s.parser.ParseSQL(cut)
	if err != nil {
		return nil, sql, perr
	}
	return stmts, cut, nil
}

func noSavepoint(name string) error {
	return errno.New(errno.ErSpDoesNotExist, "SAVEPOINT %s does not exist", name)
}
