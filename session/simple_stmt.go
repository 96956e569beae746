package session

import (
	"context"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Statements that change the session's state or ask the server: SET, USE,
// DO, KILL and FLUSH.

func (s *Session) setStmt(ctx context.Context, x *ast.SetStmt, a stmtArgs) (Result, error) {
	return Result{}, s.execSet(ctx, x, a.params)
}

func (s *Session) useStmt(ctx context.Context, x *ast.UseStmt, _ stmtArgs) (Result, error) {
	return Result{}, s.UseDB(ctx, x.DBName)
}

// doStmt evaluates DO's expressions for their effects and drops the values.
func (s *Session) doStmt(ctx context.Context, x *ast.DoStmt, a stmtArgs) (Result, error) {
	ec := s.evalCtx(ctx, a.params)
	for _, e := range x.Exprs {
		b := &expression.Builder{Clause: "field list"}
		ex, err := b.Build(e)
		if err != nil {
			return Result{}, err
		}
		if _, err := ex.Eval(ec, nil); err != nil {
			return Result{}, err
		}
	}
	return Result{}, nil
}

// killStmt is KILL [CONNECTION | QUERY] id, carried out by the server
// holding the connection.
func (s *Session) killStmt(_ context.Context, x *ast.KillStmt, _ stmtArgs) (Result, error) {
	if s.d.conns == nil {
		return Result{}, errno.NoSuchThread(uint32(x.ConnectionID))
	}
	return Result{}, s.d.conns.Kill(uint32(x.ConnectionID), x.Query)
}

// flushStmt is FLUSH PRIVILEGES; the other FLUSH statements have nothing
// to flush and succeed.
func (s *Session) flushStmt(ctx context.Context, x *ast.FlushStmt, _ stmtArgs) (Result, error) {
	if x.Tp == ast.FlushPrivileges {
		return Result{}, s.d.FlushPrivileges(ctx)
	}
	return Result{}, nil
}
