package session

import (
	"context"
	"errors"
	"time"

	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// SELECT and set operations: where a query reads, running it as a stream
// of rows, and SELECT ... FOR UPDATE in a pessimistic transaction.

// readView returns where a query reads: the past, if tidb_snapshot is
// set; else the open transaction (started now if it has not, unless start
// is false), or a fresh snapshot.
// forUpdate reads the newest data of a pessimistic transaction.
func (s *Session) readView(ctx context.Context, forUpdate, start bool) (kv.Retriever, uint64, error) {
	if s.pastTxn != nil { // tidb_snapshot: pinPast began it
		return s.pastTxn, s.pastTxn.StartTS(), nil
	}
	if start {
		if err := s.startTxn(); err != nil {
			return nil, 0, err
		}
	}
	if s.txn != nil {
		if forUpdate && s.txn.Mode() == kv.Pessimistic {
			ts, err := s.freshForUpdateTS()
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
	s.obs.txnStartTS = ts
	return s.d.store.Snapshot(ts), ts, nil
}

func (s *Session) execSelect(ctx context.Context, node ast.ResultSetNode, params []types.Datum, cached *cachedPlan) (Result, error) {
	// A query that reads no table (SELECT 1, SELECT @@x) does not start
	// the open transaction: its snapshot is taken by the first that does.
	// A prepared statement walks its tree for it once.
	var start bool
	switch {
	case cached == nil:
		start = readsTables(node)
	case cached.reads != 0:
		start = cached.reads == 2
	default:
		start = readsTables(node)
		cached.reads = 1
		if start {
			cached.reads = 2
		}
	}
	// Pinned from the moment the schema is read until the rows are done
	// (see pinSchema), or until an early return.
	is, release, err := s.pinStmtStarting(start)
	if err != nil {
		return Result{}, err
	}
	registered := true
	defer func() {
		if registered {
			release()
		}
	}()
	var q *planner.Query
	stats := s.d.catalog.StatsGeneration()
	if cached != nil && cached.query != nil && cached.usable(s, is) {
		q = cached.query
		s.obs.fromCache = true
		s.binds.used = cached.fromBinding
	} else {
		var err error
		s.stmtIS = is
		start := time.Now()
		st, _ := node.(ast.StmtNode) // a SELECT or a UNION
		err = s.withBinding(st, func() (err error) {
			q, err = planner.BuildQuery(s.planContext(), node)
			return err
		})
		s.obs.compile = time.Since(start)
		s.stmtIS = nil
		if err != nil {
			return Result{}, err
		}
		if cached != nil {
			cached.query, cached.version, cached.stats = q, is.Version, stats
			cached.binds, cached.fromBinding = s.bindsVersion(), s.binds.used
		}
	}
	s.obs.plan = q.Plan
	sel, _ := node.(*ast.SelectStmt)
	forUpdate := sel != nil && sel.LockInfo != nil && sel.LockInfo.LockType != ast.SelectLockNone
	var reader kv.Retriever
	var ts uint64
	if snap, ok := s.latestRead(q.Plan, forUpdate); ok {
		// No version of the row it reads is ever collected: it need not
		// hold GC back (readingAt).
		reader, ts = snap, snap.TS()
		s.obs.txnStartTS = ts
	} else if reader, ts, err = s.readView(ctx, forUpdate, start); err != nil {
		return Result{}, err
	} else if s.txn == nil {
		// An autocommit read holds GC back as a transaction does, until
		// its rows are done (cluster.go).
		unread, unpin := s.d.readingAt(ts), release
		release = func() { unread(); unpin() }
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
	return Result{Rows: &rows{ctx: ec, exec: ex, fields: planner.ParamFields(q.Fields, params), counted: found, done: func() {
		s.obs.readKeys(ec)
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
			if ts, err = s.freshForUpdateTS(); err != nil {
				return Result{}, err
			}
		}
		ec := &executor.Ctx{Context: ctx, Eval: eval, Reader: txn.ReaderAt(ts), ForUpdateTS: ts,
			LockWait: s.lockWait(), Catalog: s.d.catalog, MemTable: s.memTableRows, Txn: txn, SelectForUpdate: true,
			Mem: s.stmtMem(nil)}
		executor.BindSubqueries(ec)
		data, err := drain(ec, q.Plan)
		s.obs.readKeys(ec)
		if err == nil {
			s.warnings = append(s.warnings, eval.Warnings...)
			s.foundRows = uint64(len(data))
			return Result{Rows: &staticRows{fields: planner.ParamFields(q.Fields, params), data: data}}, nil
		}
		if errors.Is(err, kv.ErrWriteConflict) && attempt < s.d.pessimisticRetries() {
			eval.Warnings = eval.Warnings[:0]
			continue
		}
		if errors.Is(err, kv.ErrDeadlock) {
			s.rollback()
		}
		return Result{}, err
	}
}

// readsTables reports whether a query names a table (or view) anywhere,
// subqueries included.
func readsTables(node ast.Node) bool {
	v := &tableFinder{}
	node.Accept(v)
	return v.found
}

type tableFinder struct{ found bool }

func (v *tableFinder) Enter(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.TableName); ok {
		v.found = true
	}
	return n, v.found
}

func (v *tableFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

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

func (s *Session) selectStmt(ctx context.Context, x *ast.SelectStmt, a stmtArgs) (Result, error) {
	return s.execSelect(ctx, x, a.params, a.cached)
}

func (s *Session) setOprStmt(ctx context.Context, x *ast.SetOprStmt, a stmtArgs) (Result, error) {
	return s.execSelect(ctx, x, a.params, a.cached)
}
