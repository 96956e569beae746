package session

import (
	"context"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// PREPARE name FROM 'text' | @var, EXECUTE name [USING @a, ...] and
// {DEALLOCATE | DROP} PREPARE name: the binary protocol's prepared
// statements (prepare.go), plan cache included, under a name the session
// keeps. Names are case-insensitive. A PREPARE under a taken name drops
// the old statement first, so a PREPARE that fails leaves none, as in
// MySQL.

func (s *Session) prepareStmt(ctx context.Context, x *ast.PrepareStmt, _ stmtArgs) (Result, error) {
	name := strings.ToLower(x.Name)
	if old := s.named[name]; old != nil {
		old.Close()
		delete(s.named, name)
	}
	text := x.SQLText
	if x.SQLVar != nil {
		// A variable's value is the text; NULL, or no such variable,
		// is text that does not parse.
		v, ok := s.userVars[strings.ToLower(x.SQLVar.Name)]
		if !ok || v.IsNull() {
			return Result{}, errno.New(errno.ErParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'NULL' at line 1")
		}
		text = v.String()
	}
	st, err := s.Prepare(ctx, text)
	if err != nil {
		return Result{}, err
	}
	if s.named == nil {
		s.named = map[string]*Stmt{}
	}
	s.named[name] = st
	return Result{Info: "Statement prepared"}, nil
}

func (s *Session) executeStmt(ctx context.Context, x *ast.ExecuteStmt, a stmtArgs) (Result, error) {
	st := s.named[strings.ToLower(x.Name)]
	if st == nil {
		return Result{}, unknownStmt(x.Name, "EXECUTE")
	}
	if len(x.UsingVars) != st.nParams {
		return Result{}, errno.New(errno.ErWrongArguments, "Incorrect arguments to EXECUTE")
	}
	params := make([]types.Datum, len(x.UsingVars))
	ec := s.evalCtx(ctx, a.params)
	for i, e := range x.UsingVars {
		b := &expression.Builder{Clause: "field list"}
		ex, err := b.Build(e)
		if err != nil {
			return Result{}, err
		}
		v, err := ex.Eval(ec, nil)
		if err != nil {
			return Result{}, err
		}
		params[i] = v.Clone()
	}
	return s.run(ctx, st.node, params, st.cachedPlan(), st)
}

func (s *Session) deallocateStmt(_ context.Context, x *ast.DeallocateStmt, _ stmtArgs) (Result, error) {
	name := strings.ToLower(x.Name)
	st := s.named[name]
	if st == nil {
		return Result{}, unknownStmt(x.Name, "DEALLOCATE PREPARE")
	}
	st.Close()
	delete(s.named, name)
	return Result{}, nil
}

// dropNamedStmts deallocates every statement PREPARE made.
func (s *Session) dropNamedStmts() {
	for _, st := range s.named {
		st.Close()
	}
	s.named = nil
}

func unknownStmt(name, stmt string) error {
	return errno.New(errno.ErUnknownStmtHandler, "Unknown prepared statement handler (%s) given to %s", name, stmt)
}
