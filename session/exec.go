package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/metrics"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/trigger"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// ExecuteQuery runs the SQL text of one COM_QUERY. multi reports whether
// the client allows several statements separated by ';'; when it does not,
// more than one is a syntax error. Statements run in order, each result
// handed to w before the next statement runs; the first error ends the
// call.
func (s *Session) ExecuteQuery(ctx context.Context, sql string, multi bool, w ResultWriter) error {
	if err := checkNesting(sql); err != nil {
		return err
	}
	s.syncParserMode()
	if trigger.Mentions(sql) {
		if pieces, ok := trigger.Split(sql); ok {
			return s.executePieces(ctx, pieces, multi, w)
		}
	}
	stmts, _, err := s.parser.ParseSQL(sql)
	if err != nil {
		if stmts, sql, err = s.parseWithInto(sql, err); err != nil {
			return parseError(err)
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
	for i, st := range stmts {
		res, err := s.run(ctx, st, nil, nil)
		if err != nil {
			return err
		}
		if err := w.WriteResult(res, i < len(stmts)-1); err != nil {
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
		var res Result
		var err error
		if u.st != nil {
			res, err = s.run(ctx, u.st, nil, nil)
		} else {
			res, err = s.runTriggerStmt(ctx, u.trigger)
		}
		if err != nil {
			return err
		}
		if err := w.WriteResult(res, i < len(units)-1); err != nil {
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
// not nil, is the statement's plan from the plan cache.
func (s *Session) run(ctx context.Context, st ast.StmtNode, params []types.Datum, cached *cachedPlan) (Result, error) {
	start := time.Now()
	if _, isShow := st.(*ast.ShowStmt); !isShow && !readsDiagnostics(st) {
		s.warnings = s.warnings[:0]
	}
	err := s.checkPrivileges(st)
	var res Result
	if err == nil {
		res, err = s.dispatch(ctx, st, params, cached)
	}
	metrics.ObserveQuery(stmtType(st), time.Since(start), err)
	if err != nil {
		return res, mapError(err, s.d.catalog.InfoSchema())
	}
	return res, nil
}

func stmtType(st ast.StmtNode) metrics.StmtType {
	switch x := st.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		return metrics.StmtSelect
	case *ast.InsertStmt:
		return metrics.StmtInsert
	case *ast.UpdateStmt:
		return metrics.StmtUpdate
	case *ast.DeleteStmt:
		return metrics.StmtDelete
	case *ast.BeginStmt:
		return metrics.StmtBegin
	case *ast.CommitStmt:
		return metrics.StmtCommit
	case *ast.RollbackStmt:
		return metrics.StmtRollback
	case *ast.SetStmt:
		return metrics.StmtSet
	case *ast.ShowStmt:
		return metrics.StmtShow
	case ast.DDLNode:
		return metrics.StmtDDL
	default:
		_ = x
	}
	return metrics.StmtOther
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
	case s.txn != nil:
		return s.txnIS
	}
	return s.d.catalog.InfoSchema()
}

// pinStmt pins the schema a statement is planned and run with, until
// release: its transaction's, or the newest for a statement outside one.
func (s *Session) pinStmt() (is *catalog.InfoSchema, release func()) {
	if s.txn == nil && !s.autocommit() {
		mode := kv.Optimistic
		if s.pessimistic() {
			mode = kv.Pessimistic
		}
		if err := s.begin(true, mode); err != nil {
			// Run outside a transaction; the error comes back when
			// the statement tries to begin one.
			is = s.d.pinSchema()
			return is, func() { s.d.unpin(is) }
		}
	}
	if s.txn != nil {
		return s.txnIS, func() {}
	}
	is = s.d.pinSchema()
	return is, func() { s.d.unpin(is) }
}

func (s *Session) evalCtx(ctx context.Context, params []types.Datum) *expression.Ctx {
	mode := s.sqlMode()
	return &expression.Ctx{Context: ctx, Params: params, Now: time.Now(), Session: s, Strict: mode.Strict(), Mode: mode,
		LastInsertIDSet: func(v uint64) { s.lastInsertID = v }}
}

func (s *Session) dispatch(ctx context.Context, st ast.StmtNode, params []types.Datum, cached *cachedPlan) (Result, error) {
	if res, ok, err := s.dispatchACL(ctx, st); ok {
		return res, err
	}
	switch x := st.(type) {
	case *ast.SelectStmt:
		return s.execSelect(ctx, x, params, cached)
	case *ast.SetOprStmt:
		return s.execSelect(ctx, x, params, cached)
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt:
		return s.execDML(ctx, st, params, cached)
	case *selectInto:
		return s.execSelectInto(ctx, x, params)
	case *ast.BeginStmt:
		if err := s.commit(ctx); err != nil {
			return Result{}, err
		}
		mode := kv.Optimistic
		if s.pessimistic() {
			mode = kv.Pessimistic
		}
		switch strings.ToUpper(x.Mode) {
		case "PESSIMISTIC":
			mode = kv.Pessimistic
		case "OPTIMISTIC":
			mode = kv.Optimistic
		}
		return Result{}, s.begin(true, mode)
	case *ast.CommitStmt:
		return Result{}, s.commit(ctx)
	case *ast.RollbackStmt:
		s.rollback()
		return Result{}, nil
	case *ast.SetStmt:
		return Result{}, s.execSet(ctx, x)
	case *ast.UseStmt:
		return Result{}, s.UseDB(ctx, x.DBName)
	case *ast.CreateDatabaseStmt:
		// MySQL reports one row affected for a new database, and for a
		// dropped one as many as it had tables.
		existed := s.d.catalog.InfoSchema().DB(x.Name.O) != nil
		res, err := s.ddl(ctx, func() error { return s.d.ddl.CreateDatabase(ctx, x) })
		if err == nil && !existed {
			res.AffectedRows = 1
		}
		return res, err
	case *ast.DropDatabaseStmt:
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
	case *ast.CreateTableStmt:
		return s.ddl(ctx, func() error { return s.d.ddl.CreateTable(ctx, s.db, x) })
	case *ast.DropTableStmt:
		if x.IsView {
			return s.ddl(ctx, func() error { return s.d.ddl.DropView(ctx, s.db, x) })
		}
		return s.ddl(ctx, func() error { return s.d.ddl.DropTable(ctx, s.db, x) })
	case *ast.CreateViewStmt:
		return s.ddl(ctx, func() error { return s.createView(ctx, x) })
	case *ast.TruncateTableStmt:
		return s.ddl(ctx, func() error { return s.d.ddl.TruncateTable(ctx, s.db, x.Table) })
	case *ast.CreateIndexStmt:
		return s.ddl(ctx, func() error {
			unique := x.KeyType == ast.IndexKeyTypeUnique
			return s.d.ddl.CreateIndex(ctx, s.db, x.Table, x.IndexName, unique, x.IndexPartSpecifications, x.IfNotExists, executor.IndexEntry)
		})
	case *ast.DropIndexStmt:
		return s.ddl(ctx, func() error { return s.d.ddl.DropIndex(ctx, s.db, x.Table, x.IndexName, x.IfExists) })
	case *ast.AlterTableStmt:
		if err := s.commit(ctx); err != nil {
			return Result{}, err
		}
		res, err := s.d.ddl.AlterTable(ctx, s.db, x, executor.IndexEntry, uint32(s.sqlMode()))
		s.warnings = append(s.warnings, res.Warnings...)
		if err != nil {
			return Result{}, err
		}
		return Result{AffectedRows: res.Rows,
			Info: fmt.Sprintf("Records: %d  Duplicates: 0  Warnings: %d", res.Rows, len(res.Warnings))}, nil
	case *ast.RenameTableStmt:
		return s.ddl(ctx, func() error { return s.d.ddl.RenameTable(ctx, s.db, x) })
	case *ast.ShowStmt:
		return s.execShow(ctx, x)
	case *ast.ExplainStmt:
		return s.execExplain(ctx, x)
	case *ast.AnalyzeTableStmt:
		return s.execAnalyze(ctx, x)
	case *ast.AdminStmt:
		return s.execAdmin(ctx, x)
	case *ast.KillStmt:
		if s.d.conns == nil {
			return Result{}, errno.New(errno.ErNoSuchThread, "Unknown thread id: %d", x.ConnectionID)
		}
		return Result{}, s.d.conns.Kill(uint32(x.ConnectionID), x.Query)
	case *ast.DoStmt:
		ec := s.evalCtx(ctx, params)
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
	case *ast.FlushStmt:
		return Result{}, nil
	}
	return Result{}, errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support this statement (%T)", st)
}

// ddl runs a schema change after an implicit commit, as MySQL does.
func (s *Session) ddl(ctx context.Context, fn func() error) (Result, error) {
	if err := s.commit(ctx); err != nil {
		return Result{}, err
	}
	return Result{}, fn()
}

// readView returns where a query reads: the open transaction, or a fresh
// snapshot. forUpdate reads the newest data of a pessimistic transaction.
func (s *Session) readView(ctx context.Context, forUpdate bool) (kv.Retriever, uint64, error) {
	if s.txn == nil && !s.autocommit() {
		mode := kv.Optimistic
		if s.pessimistic() {
			mode = kv.Pessimistic
		}
		if err := s.begin(true, mode); err != nil {
			return nil, 0, err
		}
	}
	if s.txn != nil {
		if forUpdate && s.txn.Mode() == kv.Pessimistic {
			ts, err := s.d.store.CurrentTS()
			if err != nil {
				return nil, 0, err
			}
			return s.txn.ReaderAt(ts), ts, nil
		}
		return s.txn, s.txn.StartTS(), nil
	}
	ts, err := s.d.store.CurrentTS()
	if err != nil {
		return nil, 0, err
	}
	return s.d.store.Snapshot(ts), ts, nil
}

func (s *Session) execSelect(ctx context.Context, node ast.ResultSetNode, params []types.Datum, cached *cachedPlan) (Result, error) {
	// Pinned from the moment the schema is read until the rows are done
	// (see pinSchema), or until an early return.
	is, release := s.pinStmt()
	registered := true
	defer func() {
		if registered {
			release()
		}
	}()
	var q *planner.Query
	if cached != nil && cached.query != nil && cached.version == is.Version {
		q = cached.query
	} else {
		var err error
		s.stmtIS = is
		q, err = planner.BuildQuery(s.planContext(), node)
		s.stmtIS = nil
		if err != nil {
			return Result{}, err
		}
		if cached != nil {
			cached.query, cached.version = q, is.Version
		}
	}
	sel, _ := node.(*ast.SelectStmt)
	forUpdate := sel != nil && sel.LockInfo != nil && sel.LockInfo.LockType != ast.SelectLockNone
	reader, ts, err := s.readView(ctx, forUpdate)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := s.selectContext(ctx, sel)
	if forUpdate && s.txn != nil && s.txn.Mode() == kv.Pessimistic {
		if cancel != nil {
			defer cancel()
		}
		return s.selectForUpdate(ctx, q, params, is.Version, ts)
	}
	ex, err := executor.Build(q.Plan)
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return Result{}, err
	}
	ec := &executor.Ctx{Context: ctx, Eval: s.evalCtx(ctx, params), Reader: reader, ForUpdateTS: ts,
		LockWait: s.lockWait(), Catalog: s.d.catalog, MemTable: s.memTableRows, Mem: s.stmtMem(nil)}
	if forUpdate && s.txn != nil {
		ec.Txn, ec.SelectForUpdate = s.txn, true
	}
	executor.BindSubqueries(ec)
	if err := ex.Open(ec); err != nil {
		ex.Close()
		if cancel != nil {
			cancel()
		}
		return Result{}, err
	}
	// FOUND_ROWS() answers for the previous SELECT until this one ends (the
	// statement may be SELECT FOUND_ROWS() itself).
	found := new(uint64)
	registered = false // the rows' done exits
	return Result{Rows: &rows{ctx: ec, exec: ex, fields: q.Fields, counted: found, done: func() {
		s.foundRows = *found
		release()
		s.warnings = append(s.warnings, ec.Eval.Warnings...)
		if cancel != nil {
			cancel()
		}
	}}}, nil
}

// selectForUpdate runs a SELECT ... FOR UPDATE of a pessimistic
// transaction to its end before answering, so that it can run again (as
// TiDB does): when a lock it waited for is released by a commit newer than
// its for-update timestamp ts (a write conflict), it runs again at a new
// timestamp and returns the rows that commit left, as a locking read in
// MySQL does after a lock wait. A deadlock rolls back the whole
// transaction, as in MySQL, which releases the locks the other side waits
// for.
func (s *Session) selectForUpdate(ctx context.Context, q *planner.Query, params []types.Datum, version int64, ts uint64) (Result, error) {
	// The caller pinned the schema (version) for the whole statement.
	txn := s.txn
	eval := s.evalCtx(ctx, params)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			var err error
			if ts, err = s.d.store.CurrentTS(); err != nil {
				return Result{}, err
			}
		}
		ec := &executor.Ctx{Context: ctx, Eval: eval, Reader: txn.ReaderAt(ts), ForUpdateTS: ts,
			LockWait: s.lockWait(), Catalog: s.d.catalog, MemTable: s.memTableRows, Txn: txn, SelectForUpdate: true,
			Mem: s.stmtMem(nil)}
		executor.BindSubqueries(ec)
		data, err := drain(ec, q.Plan)
		if err == nil {
			s.warnings = append(s.warnings, eval.Warnings...)
			s.foundRows = uint64(len(data))
			return Result{Rows: &staticRows{fields: q.Fields, data: data}}, nil
		}
		if errors.Is(err, kv.ErrWriteConflict) && attempt < maxStmtRetries {
			eval.Warnings = eval.Warnings[:0]
			continue
		}
		if errors.Is(err, kv.ErrDeadlock) {
			s.rollback()
		}
		return Result{}, err
	}
}

// drain runs a query plan and returns copies of all its rows.
func drain(ec *executor.Ctx, plan planner.Plan) ([][]types.Datum, error) {
	ex, err := executor.Build(plan)
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	if err := ex.Open(ec); err != nil {
		return nil, err
	}
	var data [][]types.Datum
	for {
		row, err := ex.Next(ec)
		if err != nil || row == nil {
			return data, err
		}
		c := make([]types.Datum, len(row))
		for i := range row {
			c[i] = row[i].Clone()
		}
		data = append(data, c)
		if len(data)%256 == 0 {
			if err := ec.Mem.Consume(executor.RowsMem(data[len(data)-256:])); err != nil {
				return nil, err
			}
		}
	}
}

// dmlPlan is a planned INSERT, UPDATE or DELETE.
type dmlPlan struct {
	insert      *planner.Insert
	update      *planner.Update
	del         *planner.Delete
	multiUpdate *planner.MultiUpdate
	multiDelete *planner.MultiDelete
}

func (s *Session) planDML(st ast.StmtNode) (*dmlPlan, error) {
	return planDMLIn(s.planContext(), st)
}

// planDMLIn plans a write statement in pc.
func planDMLIn(pc *planner.Context, st ast.StmtNode) (*dmlPlan, error) {
	var p dmlPlan
	var err error
	switch x := st.(type) {
	case *ast.InsertStmt:
		p.insert, err = planner.BuildInsert(pc, x)
	case *ast.UpdateStmt:
		if planner.IsMultiUpdate(x) {
			p.multiUpdate, err = planner.BuildMultiUpdate(pc, x)
		} else {
			p.update, err = planner.BuildUpdate(pc, x)
		}
	case *ast.DeleteStmt:
		if x.IsMultiTable {
			p.multiDelete, err = planner.BuildMultiDelete(pc, x)
		} else {
			p.del, err = planner.BuildDelete(pc, x)
		}
	}
	return &p, err
}

func (p *dmlPlan) run(ec *executor.Ctx) (executor.DMLResult, error) {
	switch {
	case p.insert != nil:
		return executor.ExecInsert(ec, p.insert)
	case p.update != nil:
		return executor.ExecUpdate(ec, p.update)
	case p.multiUpdate != nil:
		return executor.ExecMultiUpdate(ec, p.multiUpdate)
	case p.multiDelete != nil:
		return executor.ExecMultiDelete(ec, p.multiDelete)
	}
	return executor.ExecDelete(ec, p.del)
}

// maxStmtRetries bounds how often a statement is retried after a write
// conflict.
const maxStmtRetries = 100

func (s *Session) execDML(ctx context.Context, st ast.StmtNode, params []types.Datum, cached *cachedPlan) (Result, error) {
	is, release := s.pinStmt()
	defer release()
	if s.txn == nil && !s.autocommit() {
		mode := kv.Optimistic
		if s.pessimistic() {
			mode = kv.Pessimistic
		}
		if err := s.begin(true, mode); err != nil {
			return Result{}, err
		}
	}
	var p *dmlPlan
	if cached != nil && cached.dml != nil && cached.version == is.Version {
		p = cached.dml
	} else {
		var err error
		s.stmtIS = is
		p, err = s.planDML(st)
		s.stmtIS = nil
		if err != nil {
			return Result{}, err
		}
		if cached != nil {
			cached.dml, cached.version = p, is.Version
		}
	}
	eval := s.evalCtx(ctx, params)
	eval.InWrite = true
	var res executor.DMLResult
	var err error
	trig := s.newTriggerRun(is, p)
	if s.txn != nil {
		res, err = s.dmlInTxn(ctx, p, eval, trig)
	} else {
		res, err = s.dmlAutocommit(ctx, p, eval, trig)
	}
	s.warnings = append(s.warnings, eval.Warnings...)
	if err != nil {
		s.rowCount = -1 // ROW_COUNT() after a failed statement
		return Result{}, err
	}
	if res.LastInsertID != 0 {
		s.lastInsertID = res.LastInsertID
	}
	s.rowCount = int64(res.Affected)
	out := Result{AffectedRows: res.Affected, LastInsertID: res.LastInsertID}
	if p.insert != nil && (len(p.insert.Rows) > 1 || p.insert.Select != nil) {
		out.Info = fmt.Sprintf("Records: %d  Duplicates: %d  Warnings: %d", res.Records, res.Duplicates, len(eval.Warnings))
	}
	if p.update != nil || p.multiUpdate != nil {
		out.Info = fmt.Sprintf("Rows matched: %d  Changed: %d  Warnings: %d", res.Matched, res.Affected, len(eval.Warnings))
		if s.info.FoundRows {
			out.AffectedRows = res.Matched
		}
	}
	return out, nil
}

// dmlInTxn runs a statement in the open transaction. A pessimistic
// statement that meets a write conflict undoes its own writes and runs
// again at a newer for-update timestamp; a deadlock rolls back the whole
// transaction, as in MySQL.
func (s *Session) dmlInTxn(ctx context.Context, p *dmlPlan, eval *expression.Ctx, trig executor.Triggers) (executor.DMLResult, error) {
	txn := s.txn
	for attempt := 0; ; attempt++ {
		ec := &executor.Ctx{Context: ctx, Eval: eval, Reader: txn, Txn: txn, ForUpdateTS: txn.StartTS(),
			LockWait: s.lockWait(), Catalog: s.d.catalog, Mem: s.stmtMem(txn), Triggers: trig}
		executor.BindSubqueries(ec)
		if txn.Mode() == kv.Pessimistic {
			ts, err := s.d.store.CurrentTS()
			if err != nil {
				return executor.DMLResult{}, err
			}
			ec.ForUpdateTS, ec.Reader = ts, txn.ReaderAt(ts)
		}
		sp := txn.Savepoint()
		res, err := p.run(ec)
		if err == nil {
			txn.ReleaseSavepoint(sp)
			return res, nil
		}
		txn.RollbackTo(sp)
		if txn.Mode() == kv.Pessimistic && errors.Is(err, kv.ErrWriteConflict) && attempt < maxStmtRetries {
			eval.Warnings = eval.Warnings[:0]
			continue
		}
		if errors.Is(err, kv.ErrDeadlock) {
			s.rollback()
		}
		return res, err
	}
}

// dmlAutocommit runs a statement as its own optimistic transaction,
// retrying it whole after a write conflict at commit.
func (s *Session) dmlAutocommit(ctx context.Context, p *dmlPlan, eval *expression.Ctx, trig executor.Triggers) (executor.DMLResult, error) {
	// A plain INSERT leaves its duplicate checks to the commit, which
	// makes them anyway (TiDB's lazy constraint check): one read per key
	// instead of two. A duplicate found there runs the statement again
	// with the checks, which report it as MySQL does.
	lazy := p.insert != nil && !p.insert.Ignore && !p.insert.Replace && len(p.insert.OnDup) == 0
	for attempt := 0; ; attempt++ {
		txn, err := s.d.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
		if err != nil {
			return executor.DMLResult{}, err
		}
		ec := &executor.Ctx{Context: ctx, Eval: eval, Reader: txn, Txn: txn, ForUpdateTS: txn.StartTS(),
			LockWait: s.lockWait(), Catalog: s.d.catalog, Mem: s.stmtMem(txn), Triggers: trig,
			LazyUniqueChecks: lazy}
		executor.BindSubqueries(ec)
		res, err := p.run(ec)
		if err == nil {
			err = txn.Commit(ctx)
			if err == nil {
				metrics.TxnCommitted()
				return res, nil
			}
		} else {
			txn.Rollback()
		}
		metrics.TxnRolledBack()
		var dup *kv.KeyExistsError
		if lazy && errors.As(err, &dup) {
			lazy = false
			eval.Warnings = eval.Warnings[:0]
			continue
		}
		if errors.Is(err, kv.ErrWriteConflict) && attempt < maxStmtRetries {
			eval.Warnings = eval.Warnings[:0]
			time.Sleep(time.Duration(attempt) * time.Millisecond)
			continue
		}
		return res, err
	}
}

func (s *Session) execSet(ctx context.Context, x *ast.SetStmt) error {
	ec := s.evalCtx(ctx, nil)
	for _, v := range x.Variables {
		name := strings.ToLower(v.Name)
		if name == ast.SetNames || name == ast.SetCharset {
			continue
		}
		var val types.Datum
		if v.Value != nil {
			if _, isDefault := v.Value.(*ast.DefaultExpr); isDefault {
				if def, ok := sysVars[name]; ok {
					val = def.def
				}
			} else if cn, ok := v.Value.(*ast.ColumnNameExpr); ok && v.IsSystem {
				// SET autocommit = ON: a bare word is a string.
				val = types.NewString(cn.Name.Name.O)
			} else if hasSubquery(v.Value) {
				var err error
				if val, err = s.evalWithSubquery(ctx, v.Value); err != nil {
					return err
				}
			} else {
				b := &expression.Builder{Clause: "field list"}
				e, err := b.Build(v.Value)
				if err != nil {
					return err
				}
				if val, err = e.Eval(ec, nil); err != nil {
					return err
				}
			}
		}
		if !v.IsSystem {
			s.userVars[name] = val.Clone()
			continue
		}
		if name == "transaction_isolation" || name == "tx_isolation" {
			if v.IsGlobal {
				continue
			}
		}
		if err := s.setSysVar(name, val, v.IsGlobal); err != nil {
			return err
		}
		if name == "autocommit" && !v.IsGlobal && s.autocommit() && s.txn != nil {
			if err := s.commit(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
