package session

import (
	"context"
	"slices"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/trigger"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// cachedPlan is a prepared statement's plan, built at its first execution
// and reused while the schema version stays the same: the plan cache.
// Plans read parameters when they run, so one plan serves every value.
type cachedPlan struct {
	version int64
	query   *planner.Query
	dml     *dmlPlan
}

// stmt is a prepared statement.
type stmt struct {
	s       *Session
	node    ast.StmtNode
	nParams int
	cols    []server.Column
	plan    *cachedPlan
}

// paramCollector finds a statement's '?' placeholders.
type paramCollector struct {
	params []*parserdriver.ParamMarkerExpr
}

func (v *paramCollector) Enter(n ast.Node) (ast.Node, bool) {
	if p, ok := n.(*parserdriver.ParamMarkerExpr); ok {
		v.params = append(v.params, p)
	}
	return n, false
}
func (v *paramCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// numberParams gives each placeholder its position in the statement text,
// which is the position of its value in COM_STMT_EXECUTE.
func numberParams(st ast.StmtNode) int {
	pc := &paramCollector{}
	st.Accept(pc)
	slices.SortFunc(pc.params, func(a, b *parserdriver.ParamMarkerExpr) int { return a.Offset - b.Offset })
	for i, p := range pc.params {
		p.SetOrder(i)
	}
	return len(pc.params)
}

// Prepare implements server.Session.
func (s *Session) Prepare(ctx context.Context, sql string) (server.Stmt, error) {
	if err := checkNesting(sql); err != nil {
		return nil, err
	}
	s.syncParserMode()
	if trigger.Mentions(sql) {
		if _, ok := trigger.Split(sql); ok {
			return nil, server.NewError(1295, "This command is not supported in the prepared statement protocol yet")
		}
	}
	stmts, _, err := s.parser.ParseSQL(sql)
	if err != nil {
		if stmts, _, err = s.parseWithInto(sql, err); err != nil {
			return nil, parseError(err)
		}
	}
	if len(stmts) != 1 {
		return nil, server.NewError(1295, "This command is not supported in the prepared statement protocol yet")
	}
	if err := s.checkPrivileges(stmts[0]); err != nil { // as MySQL, at prepare and at each execution
		return nil, mapError(err, nil)
	}
	st := &stmt{s: s, node: stmts[0], nParams: numberParams(stmts[0])}
	if s.d.cfg.PlanCacheCapacity > 0 {
		st.plan = &cachedPlan{version: -1}
	}
	if sel, ok := stmts[0].(ast.ResultSetNode); ok && isQuery(stmts[0]) {
		pc := s.planContext()
		q, err := planner.BuildQuery(pc, sel)
		if err != nil {
			return nil, mapError(err, s.d.catalog.InfoSchema())
		}
		for _, f := range q.Fields {
			st.cols = append(st.cols, columnOf(f))
		}
		if st.plan != nil {
			// The plan is cached under the version it was built with
			// (the open transaction's, or the newest when it was read),
			// not the newest once it is built: an execution reuses it
			// only under that same schema.
			st.plan.query, st.plan.version = q, pc.IS.Version
		}
	}
	s.stmts[st] = struct{}{}
	return st, nil
}

func (st *stmt) NumParams() int           { return st.nParams }
func (st *stmt) Columns() []server.Column { return st.cols }
func (st *stmt) Close() error             { delete(st.s.stmts, st); return nil }

// Execute implements server.Stmt.
func (st *stmt) Execute(ctx context.Context, params []server.Value, w server.ResultWriter) error {
	if len(params) != st.nParams {
		return server.NewError(errno.ErWrongArguments, "Incorrect arguments to mysqld_stmt_execute")
	}
	ps := make([]types.Datum, len(params))
	for i, p := range params {
		ps[i] = fromValue(p)
	}
	res, err := st.s.run(ctx, st.node, ps, st.plan)
	if err != nil {
		return err
	}
	return w.WriteResult(res, false)
}

// fromValue converts a bound parameter to a datum (copying bytes, which
// the server reuses).
func fromValue(v server.Value) types.Datum {
	switch v.Kind() {
	case server.KindInt:
		return types.NewInt(v.Int())
	case server.KindUint:
		return types.NewUint(v.Uint())
	case server.KindFloat32, server.KindFloat64:
		return types.NewFloat(v.Float())
	case server.KindDecimal:
		d, _, err := apd.NewFromString(string(v.Bytes()))
		if err != nil {
			return types.NewString(string(v.Bytes()))
		}
		return types.NewDecimal(d)
	case server.KindBytes:
		return types.NewBytes(append([]byte(nil), v.Bytes()...))
	case server.KindDate, server.KindDateTime, server.KindTimestamp:
		dt := v.DateTime()
		t := types.MakeTime(dt.Year, dt.Month, dt.Day, dt.Hour, dt.Minute, dt.Second, dt.Microsecond)
		tt := types.TimeDatetime
		if v.Kind() == server.KindDate {
			tt = types.TimeDate
		}
		fsp := 0
		if dt.Microsecond != 0 {
			fsp = 6
		}
		return types.NewTime(t, tt, fsp)
	case server.KindTime:
		return types.NewDuration(v.Duration().Microseconds(), 6)
	}
	return types.Null
}

// isQuery reports a SELECT or a set operation of SELECTs.
func isQuery(st ast.StmtNode) bool {
	switch st.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		return true
	}
	return false
}
