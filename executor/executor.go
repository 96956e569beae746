// Package executor runs plans. Every operator follows one contract:
// Open prepares it, Next returns the next row (nil at the end) and Close
// releases it. A row returned by Next stays valid until the next call to
// Next on the same operator.
package executor

import (
	"context"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// Ctx is one statement's execution context.
type Ctx struct {
	Context context.Context
	Eval    *expression.Ctx
	// Reader is where the statement reads: a snapshot, the transaction, or
	// the transaction at its for-update timestamp (a pessimistic DML's
	// current read).
	Reader kv.Retriever
	// Txn is the transaction writes and locks go to; nil for a read-only
	// statement outside a transaction.
	Txn         kv.Txn
	ForUpdateTS uint64
	LockWait    time.Duration
	Catalog     *catalog.Catalog
	// SelectForUpdate: the statement is a SELECT ... FOR UPDATE, whose
	// locks an optimistic transaction records for its commit.
	SelectForUpdate bool
	// MemTable computes the rows of a virtual table (information_schema).
	MemTable func(name string) ([][]types.Datum, error)
	// Mem counts the memory the statement holds against its quota; nil
	// counts nothing.
	Mem *MemTracker
	// LazyUniqueChecks skips reading for duplicates before adding a row to
	// an optimistic transaction: its keys are written with Insert, so the
	// commit fails with kv.KeyExistsError on a duplicate, and the caller
	// runs the statement again without it to report MySQL's error.
	LazyUniqueChecks bool
	// Triggers runs the row triggers of the tables a write statement
	// changes; nil runs none.
	Triggers Triggers

	// work holds the rows each running recursive CTE's round reads.
	work map[int][][]types.Datum
}

// Executor is a running operator.
type Executor interface {
	Open(ctx *Ctx) error
	Next(ctx *Ctx) ([]types.Datum, error)
	Close() error
}

// Build returns the executor of a plan.
func Build(p planner.Plan) (Executor, error) {
	switch x := p.(type) {
	case *planner.PointGet:
		return &pointGetExec{p: x}, nil
	case *planner.BatchPointGet:
		return &batchPointGetExec{p: x}, nil
	case *planner.TableScan:
		return &tableScanExec{p: x}, nil
	case *planner.IndexScan:
		return &indexScanExec{p: x}, nil
	case *planner.Selection:
		c, err := Build(x.Child)
		return &selectionExec{child: c, cond: x.Cond}, err
	case *planner.Projection:
		c, err := Build(x.Child)
		return &projectionExec{child: c, exprs: x.Exprs, row: make([]types.Datum, len(x.Exprs))}, err
	case *planner.Aggregation:
		c, err := Build(x.Child)
		return &aggExec{child: c, p: x}, err
	case *planner.Sort:
		c, err := Build(x.Child)
		return &sortExec{child: c, items: x.Items}, err
	case *planner.Limit:
		c, err := Build(x.Child)
		return &limitExec{child: c, p: x}, err
	case *planner.Distinct:
		c, err := Build(x.Child)
		return &distinctExec{child: c}, err
	case *planner.MemTable:
		return &memTableExec{p: x}, nil
	case *planner.Dual:
		return &dualExec{none: x.NoRow}, nil
	case *planner.Trim:
		c, err := Build(x.Child)
		return &trimExec{child: c, n: x.N}, err
	default:
		return buildMore(p)
	}
}

// Drain runs e to the end and returns copies of its rows, which count
// against the statement's memory quota until it ends.
func Drain(ctx *Ctx, e Executor) ([][]types.Datum, error) {
	if err := e.Open(ctx); err != nil {
		e.Close()
		return nil, err
	}
	defer e.Close()
	var rows [][]types.Datum
	mem := memAcc{t: ctx.Mem}
	for {
		r, err := e.Next(ctx)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return rows, mem.flush()
		}
		rows = append(rows, append([]types.Datum(nil), r...))
		if err := mem.add(rowMem(r)); err != nil {
			return nil, err
		}
	}
}

// expressionLike is what range and key evaluation need of an expression.
type expressionLike = interface {
	Eval(ctx *expression.Ctx, row []types.Datum) (types.Datum, error)
}
