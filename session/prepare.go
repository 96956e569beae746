package session

import (
	"context"
	"slices"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/trigger"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// cachedPlan is a prepared statement's plan, built at its first execution
// and reused while the schema version stays the same and, unless
// tidb_plan_cache_invalidation_on_fresh_stats is off, no table's
// statistics changed (ANALYZE here or on another SQL node): the plan
// cache. Plans read parameters when they run, so one plan serves every
// value.
type cachedPlan struct {
	version int64
	stats   uint64 // the catalog's StatsGeneration when it was built
	query   *planner.Query
	dml     *dmlPlan
	// binds is the session's bindsVersion the plan was built under, and
	// fromBinding whether a binding's hints were used.
	binds       uint64
	fromBinding bool
	// reads caches readsTables of the statement (query.go): 0 not known
	// yet, 1 no, 2 yes. It depends on the statement's text alone.
	reads int8
}

// usable reports whether the plan p holds was built under schema is, the
// SQL plan bindings the session sees now (binding.go) and, if the session
// asks for it, the statistics held now.
func (p *cachedPlan) usable(s *Session, is *catalog.InfoSchema) bool {
	return p.version == is.Version && p.binds == s.bindsVersion() &&
		(p.stats == s.d.catalog.StatsGeneration() || !s.hotVar().freshStatsReplan)
}

// Stmt is a prepared statement (COM_STMT_PREPARE, PREPARE).
type Stmt struct {
	s       *Session
	node    ast.StmtNode
	nParams int
	fields  []planner.ResultField // the result's columns, known at prepare; nil for no rows
	plan    *cachedPlan
	// digest is the statement's, computed at its first recorded
	// execution (observe.go).
	digest *digestOf
	// asOf: a table of the statement says AS OF TIMESTAMP (found by the
	// walk that numbers its placeholders, so that an execution need not
	// walk it again: see readAsOf).
	asOf bool
}

// paramCollector finds a statement's '?' placeholders, and whether a
// table of it says AS OF.
type paramCollector struct {
	params []*parserdriver.ParamMarkerExpr
	asOf   bool
}

func (v *paramCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *parserdriver.ParamMarkerExpr:
		v.params = append(v.params, x)
	case *ast.TableName:
		v.asOf = v.asOf || x.AsOf != nil
	}
	return n, false
}
func (v *paramCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// numberParams gives each placeholder its position in the statement text,
// which is the position of its value in COM_STMT_EXECUTE, and returns
// how many there are and whether a table of st says AS OF.
func numberParams(st ast.StmtNode) (n int, asOf bool) {
	pc := &paramCollector{}
	st.Accept(pc)
	slices.SortFunc(pc.params, func(a, b *parserdriver.ParamMarkerExpr) int { return a.Offset - b.Offset })
	for i, p := range pc.params {
		p.SetOrder(i)
	}
	return len(pc.params), pc.asOf
}

// Prepare parses one statement with '?' placeholders.
func (s *Session) Prepare(ctx context.Context, sql string) (*Stmt, error) {
	if err := checkNesting(sql); err != nil {
		return nil, err
	}
	s.syncParserMode()
	if trigger.Mentions(sql) {
		if _, ok := trigger.Split(sql); ok {
			return nil, errno.New(1295, "This command is not supported in the prepared statement protocol yet")
		}
	}
	stmts, _, err := s.parser.ParseSQL(sql)
	if err != nil {
		if stmts, _, err = s.parseWithInto(sql, err); err != nil {
			return nil, parseError(err)
		}
	}
	switch {
	case len(stmts) == 0:
		return nil, errno.New(1065, "Query was empty")
	case len(stmts) > 1:
		// One statement, as MySQL's grammar for a prepared statement
		// has it.
		return nil, errno.New(errno.ErParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use")
	}
	switch stmts[0].(type) {
	case *ast.PrepareStmt, *ast.ExecuteStmt, *ast.DeallocateStmt:
		return nil, errno.New(1295, "This command is not supported in the prepared statement protocol yet")
	}
	if _, ok := stmts[0].(*ast.LoadDataStmt); ok {
		// As in MySQL: its LOCAL exchange belongs to COM_QUERY.
		return nil, errno.New(1295, "This command is not supported in the prepared statement protocol yet")
	}
	if err := s.checkPrivileges(stmts[0]); err != nil { // as MySQL, at prepare and at each execution
		return nil, mapError(err, nil)
	}
	st := &Stmt{s: s, node: stmts[0]}
	st.nParams, st.asOf = numberParams(stmts[0])
	if s.d.cfg.PlanCacheCapacity > 0 {
		st.plan = &cachedPlan{version: -1}
	}
	if sel, ok := stmts[0].(ast.ResultSetNode); ok && isQuery(stmts[0]) {
		stats := s.d.catalog.StatsGeneration() // before planning: a change meanwhile replans
		binds, usedBefore := s.bindsVersion(), s.binds.used
		pc := s.planContext()
		var q *planner.Query
		err := s.withBinding(stmts[0], func() (err error) {
			q, err = planner.BuildQuery(pc, sel)
			return err
		})
		fromBinding := s.binds.used
		s.binds.used = usedBefore // PREPARE is not the statement planned
		if err != nil {
			return nil, mapError(err, s.d.catalog.InfoSchema())
		}
		st.fields = q.Fields
		if st.plan != nil {
			// The plan is cached under the version it was built with
			// (the open transaction's, or the newest when it was read),
			// not the newest once it is built: an execution reuses it
			// only under that same schema.
			st.plan.query, st.plan.version, st.plan.stats = q, pc.IS.Version, stats
			st.plan.binds, st.plan.fromBinding = binds, fromBinding
		}
	}
	s.stmts[st] = struct{}{}
	return st, nil
}

// NumParams is the number of '?' placeholders.
func (st *Stmt) NumParams() int { return st.nParams }

// Fields describes the result set of a query, as known at prepare time;
// nil for a statement that returns no rows.
func (st *Stmt) Fields() []planner.ResultField { return st.fields }

// Close frees the statement.
func (st *Stmt) Close() error { delete(st.s.stmts, st); return nil }

// Execute runs the statement with len(params) == NumParams() values and
// hands its result to w. The statement keeps the params only during the
// call.
func (st *Stmt) Execute(ctx context.Context, params []types.Datum, w ResultWriter) error {
	if len(params) != st.nParams {
		return errno.New(errno.ErWrongArguments, "Incorrect arguments to mysqld_stmt_execute")
	}
	return st.s.execute(ctx, st.node, time.Time{}, 0, params, st.cachedPlan(), st, w, false)
}

// cachedPlan is the plan cache's entry for an execution: nil with
// tidb_enable_prepared_plan_cache off, which plans every execution.
func (st *Stmt) cachedPlan() *cachedPlan {
	if st.plan == nil || !st.s.hotVar().planCache {
		return nil
	}
	return st.plan
}

// isQuery reports a SELECT or a set operation of SELECTs.
func isQuery(st ast.StmtNode) bool {
	switch st.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		return true
	}
	return false
}
