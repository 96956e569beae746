package session

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/importer"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// LOAD DATA's fast path: a load into an empty table, in a statement of
// its own (autocommit), on a store that imports (kv.Importer, the
// embedded store), goes through the importer as IMPORT INTO does — its
// keys sorted in bounded memory and ingested as files at one commit ts —
// rather than through a transaction's write buffer and commit. It runs
// the same code over the same rows (executor.ExecLoad, INSERT's row
// writer), into an importer.LoadTxn that answers the duplicate checks as
// the transaction over the empty table would, so that the warnings,
// affected rows, "Records: Deleted: Skipped: Warnings:" and the rows
// loaded are the same: duplicates fail the load, are skipped with 1062
// (IGNORE, LOCAL) or replace the earlier row (REPLACE). A failed load
// leaves nothing, as the transaction's rollback does.
//
// Otherwise the load takes the transactional path: inside a transaction,
// into a table with rows, with triggers or foreign keys, while a DDL
// changes the table's columns or indexes, with a subquery in SET, on a
// cluster (--store tikv), or with Config.NoLoadDataIngest.
//
// A write into the table by another session while the load reads its
// input (a concurrent load of another part of the file, say) makes the
// table non-empty at the commit: the load's rows are then committed
// through a transaction, as the transactional path would have, which
// fails (1062, leaving nothing) if they conflict with the other's.

// loadIngester returns the store's importer if the load p can take the
// fast path, and nil if it must go through a transaction. It reads the
// table to see that it is empty; nothing of the input is read.
func (s *Session) loadIngester(ctx context.Context, x *ast.LoadDataStmt, p *planner.Load) (kv.Importer, error) {
	imp, ok := s.d.store.(kv.Importer)
	if !ok || s.d.cfg.NoLoadDataIngest || s.txn != nil || s.deferred {
		return nil, nil
	}
	t := p.Insert.Table
	if !ingestableTable(t) {
		return nil, nil
	}
	for _, a := range x.ColumnAssignments {
		// A subquery might read the table being loaded.
		if hasSubquery(a.Expr) {
			return nil, nil
		}
	}
	ts, err := s.d.store.CurrentTS()
	if err != nil {
		return nil, err
	}
	it, err := s.d.store.Snapshot(ts).Iter(tablecodec.TablePrefix(t.ID), tablecodec.TableEnd(t.ID))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if it.Valid() {
		return nil, nil
	}
	return imp, nil
}

// ingestableTable reports whether rows of t can be written through the
// importer: no triggers, no foreign keys, and every column and index
// public (no DDL in the middle of changing them).
func ingestableTable(t *catalog.TableInfo) bool {
	if len(t.Triggers) > 0 || len(t.ForeignKeys) > 0 || len(t.Hidden) > 0 || t.View != nil {
		return false
	}
	for _, ix := range t.Indexes {
		if ix.State != catalog.StatePublic {
			return false
		}
	}
	for _, c := range t.Columns {
		if c.State != catalog.StatePublic {
			return false
		}
	}
	return true
}

// ingestLoad runs the load through the importer: run writes the rows
// into the LoadTxn, then the job commits them.
func (s *Session) ingestLoad(ctx context.Context, imp kv.Importer, p *planner.Load,
	run func(txn kv.Txn) (executor.LoadResult, error)) (executor.LoadResult, error) {
	t := p.Insert.Table
	ts, err := s.d.store.CurrentTS()
	if err != nil {
		return executor.LoadResult{}, err
	}
	job, err := importer.NewLoadJob("", 0, s.d.store.Snapshot(ts), ts,
		tablecodec.TablePrefix(t.ID), tablecodec.TableEnd(t.ID), p.Insert.Replace)
	if err != nil {
		return executor.LoadResult{}, err
	}
	defer job.Close()
	began := time.Now()
	res, err := run(job.Txn())
	if err != nil {
		return res, err
	}
	read := time.Now()
	_, err = job.Commit(ctx, imp)
	slog.Default().Debug("LOAD DATA through the importer", "table", t.Name, "records", res.Records,
		"pairs", job.Sorter().Pairs, "runs", job.Sorter().Spilled, "read", read.Sub(began), "commit", time.Since(read), "err", err)
	if errors.Is(err, kv.ErrImportTargetNotEmpty) {
		// Another session wrote into the table meanwhile: commit through
		// a transaction, as the load would have, which fails if the
		// other's rows conflict with the load's (1062).
		return res, s.replayLoad(ctx, job)
	}
	if err != nil {
		return res, err
	}
	s.d.loadIngests.Add(1)
	return res, nil
}

// replayLoad commits a load's rows through a transaction.
func (s *Session) replayLoad(ctx context.Context, job *importer.LoadJob) error {
	txn, err := s.d.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return err
	}
	mem := s.stmtMem(txn)
	if err := job.Replay(ctx, txn, func() error { return mem.Consume(0) }); err != nil {
		txn.Rollback()
		return err
	}
	return txn.Commit(ctx)
}
