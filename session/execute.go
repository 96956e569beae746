package session

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/metrics"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/trigger"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// This file runs statements: the entry points from the server's side
// (ExecuteQuery, and Stmt.Execute in prepare.go) parse, then run each
// statement through the dispatch table (dispatch.go) under the schema and
// evaluation context built here.

// ExecuteQuery runs the SQL text of one COM_QUERY. multi reports whether
// the client allows several statements separated by ';'; when it does not,
// more than one is a syntax error. Statements run in order, each result
// handed to w before the next statement runs; the first error ends the
// call.
func (s *Session) ExecuteQuery(ctx context.Context, sql string, multi bool, w ResultWriter) error {
	s.out = w
	defer func() { s.out, s.textParses.hit = nil, nil }()
	start := time.Now()
	s.syncParserMode()
	// A text INSERT of a shape seen before takes the tree of the first
	// (text_parse.go), whose nesting was checked; a bulk INSERT of
	// literal rows (sysbench prepare, mariadb-dump) is parsed as the
	// parser would, at a fraction of its cost.
	mentions := trigger.Mentions(sql)
	var stmts []ast.StmtNode
	var err error
	var st ast.StmtNode
	fromTemplate := false
	if !mentions {
		st, fromTemplate = s.parseTemplate(sql)
	} else {
		// No template: rememberParse must not take what an earlier
		// query's parseTemplate left pending for its own text.
		s.textParses.pending = false
	}
	if fromTemplate {
		s.oneStmt[0] = st
		stmts = s.oneStmt[:]
	} else {
		if err := checkNesting(sql); err != nil {
			return err
		}
		if mentions {
			if pieces, ok := trigger.Split(sql); ok {
				return s.executePieces(ctx, pieces, multi, w)
			}
		}
		var ok bool
		if stmts, ok = parserdriver.ParseBulkInsert(s.parser, s.parserSQLMode, sql); !ok {
			if stmts, _, err = s.parser.ParseSQL(sql); err == nil {
				s.rememberParse(sql, stmts)
			}
		}
	}
	if err != nil {
		if stmts, sql, err = s.parseRollbackWork(sql, err); err != nil {
			if stmts, sql, err = s.parseWithInto(sql, err); err != nil {
				return parseError(err)
			}
		}
	}
	if err := noPlaceholders(sql, stmts); err != nil {
		return err
	}
	if len(stmts) == 0 {
		return errno.New(1065, "Query was empty")
	}
	if len(stmts) > 1 && !multi {
		return errno.New(errno.ErParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use")
	}
	parse := time.Since(start)
	if len(stmts) > 1 {
		// The parser reuses the slice it returns, and a statement
		// (PREPARE) may parse again before the next one runs.
		stmts = slices.Clone(stmts)
	}
	for i, st := range stmts {
		if i > 0 {
			start, parse = time.Time{}, 0
		}
		if err := s.execute(ctx, st, start, parse, nil, nil, nil, w, i < len(stmts)-1); err != nil {
			return err
		}
	}
	return nil
}

// executePieces runs a query that holds a trigger statement, split into
// its statements by trigger.Split: those go to runTriggerStmt, the others
// to the TiDB parser. As for any query, every statement is parsed before
// the first runs.
func (s *Session) executePieces(ctx context.Context, pieces []trigger.Piece, multi bool, w ResultWriter) error {
	if len(pieces) > 1 && !multi {
		return errno.New(errno.ErParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use")
	}
	type unit struct {
		trigger string // a trigger statement's text, or ""
		st      ast.StmtNode
	}
	var units []unit
	for _, p := range pieces {
		if p.Trigger {
			units = append(units, unit{trigger: p.SQL})
			continue
		}
		stmts, _, err := s.parser.ParseSQL(p.SQL)
		if err != nil {
			return parseError(err)
		}
		if err := noPlaceholders(p.SQL, stmts); err != nil {
			return err
		}
		for _, st := range stmts {
			units = append(units, unit{st: st})
		}
	}
	for i, u := range units {
		more := i < len(units)-1
		if u.st != nil {
			if err := s.execute(ctx, u.st, time.Time{}, 0, nil, nil, nil, w, more); err != nil {
				return err
			}
			continue
		}
		res, err := s.runTriggerStmt(ctx, u.trigger)
		if err != nil {
			return err
		}
		if err := w.WriteResult(res, more); err != nil {
			return err
		}
	}
	return nil
}

// noPlaceholders rejects a '?' in a text query: placeholders belong to
// prepared statements, and MySQL's grammar for COM_QUERY has none (1064).
func noPlaceholders(sql string, stmts []ast.StmtNode) error {
	if strings.IndexByte(sql, '?') < 0 {
		return nil
	}
	for _, st := range stmts {
		pc := &paramCollector{}
		st.Accept(pc)
		if len(pc.params) == 0 {
			continue
		}
		off := pc.params[0].Offset
		for _, p := range pc.params[1:] {
			off = min(off, p.Offset)
		}
		if off < 0 || off >= len(sql) {
			off = 0
		}
		near := sql[off:]
		if len(near) > 80 {
			near = near[:80]
		}
		line := 1 + strings.Count(sql[:off], "\n")
		return errno.New(errno.ErParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s' at line %d", near, line)
	}
	return nil
}

func parseError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "]"); strings.HasPrefix(msg, "[") && i > 0 {
		// "[ddl:1273]Unknown collation: 'x'": the parser's own checks of
		// names carry MySQL's code.
		_, num, _ := strings.Cut(msg[1:i], ":")
		if code, cerr := strconv.Atoi(num); cerr == nil && code != errno.ErParse && code > 1000 && code < 65536 {
			return errno.New(uint16(code), "%s", strings.TrimSpace(msg[i+1:]))
		}
		msg = msg[i+1:]
	}
	return errno.New(errno.ErParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use %s", strings.TrimSpace(msg))
}

// run executes one statement, recording metrics and warnings. cached, if
// not nil, is the statement's plan from the plan cache; ps, if not nil,
// the prepared statement st is.
func (s *Session) run(ctx context.Context, st ast.StmtNode, params []types.Datum, cached *cachedPlan, ps *Stmt) (Result, error) {
	s.obs.prevFromCache = s.obs.fromCache
	s.obs.fromCache = false // for the plan cache's metrics when not observing
	s.binds.startStatement()
	if _, isShow := st.(*ast.ShowStmt); !isShow && !readsDiagnostics(st) {
		s.warnings = s.warnings[:0]
	}
	h := handlerOf(st)
	if !s.fkChecks() {
		ctx = ddl.WithoutFKChecks(ctx)
	}
	err := s.checkPrivileges(st)
	if err == nil && s.past != nil && writesInPast(st) {
		err = errWriteInPast()
	}
	asOf := ps == nil || ps.asOf
	if t := s.textTemplateOf(st); t != nil {
		asOf = t.asOf
	}
	if err == nil && asOf {
		var restore func()
		if restore, err = s.readAsOf(ctx, st, params); restore != nil {
			defer restore()
		}
	}
	var res Result
	if err == nil {
		res, err = h.run(s, ctx, st, stmtArgs{params: params, cached: cached})
	}
	s.stmtType = h.metric
	if cached != nil && s.d.cfg.PlanCacheCapacity > 0 && err == nil {
		if s.obs.fromCache {
			metrics.PlanCacheHit()
		} else {
			metrics.PlanCacheMiss()
		}
	}
	if err != nil {
		return res, mapError(err, s.d.catalog.InfoSchema())
	}
	return res, nil
}

func (s *Session) planContext() *planner.Context {
	return &planner.Context{IS: s.schema(), DB: s.db, Stats: s.d.catalog.Stats, Parse: parseView,
		OnlyFullGroupBy: s.sqlMode()&expression.ModeOnlyFullGroupBy != 0}
}

// schema is the schema statements are planned with: the running
// statement's, else the open transaction's (a transaction keeps the schema
// it started with, as its snapshot keeps the data), else the newest.
func (s *Session) schema() *catalog.InfoSchema {
	switch {
	case s.stmtIS != nil:
		return s.stmtIS
	case s.past != nil:
		return s.past.is
	case s.txn != nil:
		return s.txnIS
	}
	return s.d.catalog.InfoSchema()
}

// pinStmt pins the schema a statement is planned and run with, until
// release: its transaction's, or the newest for a statement outside one.
// On a cluster it fails while the node cannot tell that its schema is
// current (see pinSchema). It starts the open transaction if it has not
// started (startTxn).
func (s *Session) pinStmt() (is *catalog.InfoSchema, release func(), err error) {
	return s.pinStmtStarting(true)
}

// pinStmtStarting is pinStmt for a statement that starts the open
// transaction only if start says so: a query that reads no table does
// not, and runs as if outside it.
func (s *Session) pinStmtStarting(start bool) (is *catalog.InfoSchema, release func(), err error) {
	if s.past != nil {
		return s.pinPast()
	}
	if start && s.txn == nil && (s.deferred || !s.autocommit()) {
		if err := s.startTxn(); err != nil {
			// Run outside a transaction; the error comes back when
			// the statement tries to begin one.
			if is, err = s.d.pinSchema(s.info.ID); err != nil {
				return nil, nil, mapError(err, nil)
			}
			return is, func() { s.d.unpin(is, s.info.ID) }, nil
		}
	}
	if s.txn != nil {
		if s.d.sync != nil {
			if err := s.d.sync.Valid(); err != nil {
				return nil, nil, mapError(err, nil)
			}
		}
		return s.txnIS, func() {}, nil
	}
	if is, err = s.d.pinSchema(s.info.ID); err != nil {
		return nil, nil, mapError(err, nil)
	}
	return is, func() { s.d.unpin(is, s.info.ID) }, nil
}

func (s *Session) evalCtx(ctx context.Context, params []types.Datum) *expression.Ctx {
	mode := s.sqlMode()
	return &expression.Ctx{Context: ctx, Params: params, Now: time.Now(), Session: s, Strict: mode.Strict(), Mode: mode,
		LastInsertIDSet: func(v uint64) { s.lastInsertID = v }}
}

// observeError counts a failed statement in
// tidb_server_execute_error_total by its MySQL code.
func observeError(err error) {
	var code uint16
	if e, ok := errors.AsType[*errno.Error](err); ok {
		code = e.Code
	}
	metrics.ExecuteError(code)
}
