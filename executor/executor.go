// Package executor runs plans: Build (builder.go) turns a planner.Plan into
// a tree of operators, one file each, and the DML statements (dml.go,
// multidml.go) write through package table.
//
// Operators work a row at a time, not in batches (a Volcano iterator):
// Open prepares an operator, Next returns its next row (nil at the end) and
// Close releases it. A row returned by Next stays valid until the next
// call to Next on the same operator. Operators that must see all their
// input first (sort, aggregation, hash join's build side) count the memory
// they hold against the statement's quota (memory.go).
package executor

import (
	"context"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/table"
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
	// RuntimeStats, under EXPLAIN ANALYZE of a write, counts what the
	// operators that read its rows do; nil counts nothing.
	RuntimeStats *RuntimeStats
	// KeysRead counts the row and index entries the statement's reads
	// found in the store (the slow log's Process_keys).
	KeysRead int64
	// IS is the schema the statement runs under: where DML finds the
	// tables its rows' foreign keys refer to and are referred from
	// (foreignkey.go). NoFKChecks (foreign_key_checks off) skips them.
	IS         *catalog.InfoSchema
	NoFKChecks bool
	// AutoIDs keeps the auto-increment values the statement generates.
	// A caller that runs the statement again after an earlier run was
	// undone (a duplicate found at commit, a write conflict) passes the
	// earlier run's AutoIDs, rewound, so that the run again generates the
	// same values: a failing INSERT uses up one value per row, as MySQL's
	// single run does, not one per attempt.
	AutoIDs AutoIDs

	// work holds the rows each running recursive CTE's round reads.
	work map[int][][]types.Datum
	// wc is the context of the statement's row writes (write).
	wc table.WriteCtx
}

// write returns the context rows are written under, as ctx is now.
func (ctx *Ctx) write() *table.WriteCtx {
	ctx.wc = table.WriteCtx{Context: ctx.Context, Eval: ctx.Eval, Reader: ctx.Reader, Txn: ctx.Txn,
		LazyUniqueChecks: ctx.LazyUniqueChecks}
	return &ctx.wc
}

// AutoIDs are the auto-increment values one statement generated, in the
// order its first run generated them. The first is kept inline: most
// statements generate one at most, and a statement's record then costs
// no allocation.
type AutoIDs struct {
	n, next int      // values recorded; the one the run hands out next
	first   autoID   // the first value
	more    []autoID // the values after it
}

type autoID struct{ table, id int64 }

// Rewind makes the next run of the statement hand out the recorded values
// again.
func (a *AutoIDs) Rewind() { a.next = 0 }

func (a *AutoIDs) at(i int) autoID {
	if i == 0 {
		return a.first
	}
	return a.more[i-1]
}

func (a *AutoIDs) add(v autoID) {
	if a.n == 0 {
		a.first = v
	} else {
		a.more = append(a.more[:a.n-1], v)
	}
	a.n++
}

// allocAutoID returns the next auto-increment value of table t for the
// statement: the value an earlier run generated at this point, if it was
// for the same table (the values are this node's, and the run that took
// them was undone), else a new one.
func (ctx *Ctx) allocAutoID(t *catalog.TableInfo) (int64, error) {
	a := &ctx.AutoIDs
	if a.next < a.n {
		if v := a.at(a.next); v.table == t.ID {
			a.next++
			return v.id, nil
		}
		a.n = a.next // this run went another way: forget the rest
	}
	id, err := ctx.Catalog.AllocAutoID(ctx.Context, t, 1)
	if err == nil {
		a.add(autoID{t.ID, id})
		a.next++
	}
	return id, err
}

// Executor is a running operator.
type Executor interface {
	Open(ctx *Ctx) error
	Next(ctx *Ctx) ([]types.Datum, error)
	Close() error
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
