package executor

import (
	"time"

	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// What EXPLAIN ANALYZE shows beside the estimates: per operator, the rows
// it returned, the time spent in it and the calls of its Next, and the
// memory it held. BuildAnalyzed wraps each operator in an analyzedExec
// that counts them; the plain Build does not, so that statements pay
// nothing for it.

// OpStats is what one operator (one plan node) did.
type OpStats struct {
	// Rows is the rows it returned, over every time it was opened (an
	// index join's inner side is opened once per outer row).
	Rows int64
	// Loops is the calls of its Next (one per row, plus one per opening
	// at the end), TiDB's loops.
	Loops int64
	// Opens is how often it was opened.
	Opens int64
	// Time is the wall time spent in its Open, Next and Close, its
	// children's included, as TiDB's time.
	Time time.Duration
	// Mem is the most memory it held at once, as counted against the
	// statement's quota; -1 for an operator that holds none it counts.
	Mem int64
}

// RuntimeStats collects the OpStats of one statement's operators. It is
// used by the statement's goroutine only.
type RuntimeStats struct {
	ops map[planner.Plan]*OpStats
}

// NewRuntimeStats returns empty stats.
func NewRuntimeStats() *RuntimeStats { return &RuntimeStats{ops: map[planner.Plan]*OpStats{}} }

func (r *RuntimeStats) of(p planner.Plan) *OpStats {
	st := r.ops[p]
	if st == nil {
		st = &OpStats{Mem: -1}
		r.ops[p] = st
	}
	return st
}

// Of returns what the operator of plan node p did; nil if it never ran
// (the inner side of a join whose outer side was empty is still opened,
// but a subquery's plan is not part of the tree).
func (r *RuntimeStats) Of(p planner.Plan) *OpStats { return r.ops[p] }

// memHolder is an operator that holds rows it counts against the quota.
type memHolder interface {
	memPeak() int64
}

func (e *aggExec) memPeak() int64      { return e.mem.peak }
func (e *sortExec) memPeak() int64     { return e.mem.peak }
func (e *distinctExec) memPeak() int64 { return e.mem.peak }
func (e *joinExec) memPeak() int64     { return e.mem.peak }

// analyzedExec counts what the operator it wraps does.
type analyzedExec struct {
	Executor
	st *OpStats
}

func (e *analyzedExec) Open(ctx *Ctx) error {
	start := time.Now()
	err := e.Executor.Open(ctx)
	e.st.Time += time.Since(start)
	e.st.Opens++
	return err
}

func (e *analyzedExec) Next(ctx *Ctx) ([]types.Datum, error) {
	start := time.Now()
	row, err := e.Executor.Next(ctx)
	e.st.Time += time.Since(start)
	e.st.Loops++
	if row != nil {
		e.st.Rows++
	}
	return row, err
}

func (e *analyzedExec) Close() error {
	start := time.Now()
	if m, ok := e.Executor.(memHolder); ok {
		// Before Close, which gives the memory back.
		e.st.Mem = max(e.st.Mem, m.memPeak())
	}
	err := e.Executor.Close()
	e.st.Time += time.Since(start)
	return err
}
