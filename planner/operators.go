package planner

// This file lists the operators a physical plan is made of. The executor
// builds one operator per node (executor.Build); EXPLAIN names them
// (explain.go).

import (
	"sync/atomic"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
)

// Plan is a node of a physical plan. Schema describes its output rows.
type Plan interface {
	Schema() *expression.Schema
	Children() []Plan
}

type base struct {
	schema *expression.Schema
	// est is the estimated number of rows, where planning recorded one
	// (estimate.go); 0 means derive it.
	est float64
}

func (b *base) Schema() *expression.Schema { return b.schema }
func (b *base) estRows() float64           { return b.est }
func (b *base) setEst(n float64)           { b.est = n }

// TableSource is a plan that reads one table. Its rows are the table's
// columns followed by the row handle (an integer, or for a clustered
// primary key the encoded key as a string).
type TableSource struct {
	base
	DB    string
	Table *catalog.TableInfo
	Alias string
	// Cols are the offsets of the table's columns that the plan reads, in
	// order; the others are left NULL in the rows (the handle is always
	// there). Nil means all columns. See prune.go.
	Cols []int
	// colsAll: pruning found every column read.
	colsAll bool
	// hints restrict the keys the access path may read (index_hints.go).
	hints *indexHints
	// Exec is where the executor keeps what it makes once per plan for
	// this source (its row decoder), for the next executions of a cached
	// plan; opaque to the planner. Safe for concurrent use.
	Exec atomic.Value
}

// HandleCol is the position of the handle in a table source's rows.
func (t *TableSource) HandleCol() int { return len(t.Table.Columns) }

// PointGet reads at most one row: by handle, or by a unique index's full key.
type PointGet struct {
	TableSource
	// Handle computes the handle when Index is nil.
	Handle expression.Expr
	// Index and Key: a unique index and the values of all its columns.
	Index *catalog.IndexInfo
	Key   []expression.Expr
	// Lock: SELECT ... FOR UPDATE.
	Lock bool
}

// BatchPointGet reads the rows of a list of handles (or unique keys of a
// one-column unique index).
type BatchPointGet struct {
	TableSource
	Handles []expression.Expr
	Index   *catalog.IndexInfo
	Lock    bool
}

// Range is an interval of one column's values, computed at execution.
// A nil Low or High is unbounded.
type Range struct {
	Low, High         expression.Expr
	LowExcl, HighExcl bool
	// And lists further unions of ranges that this range is intersected
	// with (several conditions on one column).
	And [][]Range
}

// TableScan reads rows in handle order, over Ranges of an integer handle,
// or over KeyRanges of a clustered primary key's columns (all rows if
// both are nil).
type TableScan struct {
	TableSource
	Ranges    []Range
	KeyRanges []KeyRange
	// Desc reads backwards (ORDER BY ... DESC served by the key's order).
	Desc bool
	Lock bool
}

// IndexScan reads an index over Ranges of its columns (key_ranges.go), and
// the rows its entries point to, in index order.
type IndexScan struct {
	TableSource
	Index  *catalog.IndexInfo
	Ranges []KeyRange
	Desc   bool
	Lock   bool
	// Limit, if set, is how many rows the statement needs at most (its
	// LIMIT, the scan's order serving its ORDER BY): the first lookups
	// read only that many entries, so that a locking read locks no
	// more rows than it returns.
	Limit expression.Expr
}

// Selection keeps the rows for which Cond is true.
type Selection struct {
	base
	Child Plan
	Cond  expression.Expr
}

// Projection computes Exprs over each row.
type Projection struct {
	base
	Child Plan
	Exprs []expression.Expr
}

// AggFunc is one aggregate of an Aggregation.
type AggFunc struct {
	Name     string // count, sum, avg, min, max, group_concat, first_row
	Args     []expression.Expr
	Distinct bool
	Star     bool // COUNT(*)
	// Separator is GROUP_CONCAT's.
	Separator string
	// Order is GROUP_CONCAT's ORDER BY, over the aggregation's input rows.
	Order []SortItem
}

// Aggregation groups rows by GroupBy and computes Aggs per group. Its rows
// are the aggregates followed by the group-by values.
type Aggregation struct {
	base
	Child   Plan
	GroupBy []expression.Expr
	Aggs    []*AggFunc
}

// SortItem is one ORDER BY key.
type SortItem struct {
	Expr expression.Expr
	Desc bool
}

// Sort orders rows by Items.
type Sort struct {
	base
	Child Plan
	Items []SortItem
}

// Limit skips Offset rows and returns at most Count (expressions, for
// parameters).
type Limit struct {
	base
	Child         Plan
	Offset, Count expression.Expr
}

// Distinct removes duplicate rows.
type Distinct struct {
	base
	Child Plan
}

// Dual produces one empty row (SELECT without FROM), or none.
type Dual struct {
	base
	NoRow bool
}

// Hidden: a projection keeps extra columns for ORDER BY beyond the select
// list; Trim cuts rows back to the first N columns.
type Trim struct {
	base
	Child Plan
	N     int
}

func (p *TableSource) Children() []Plan { return nil }
func (p *MemTable) Children() []Plan    { return nil }
func (p *Selection) Children() []Plan   { return []Plan{p.Child} }
func (p *Projection) Children() []Plan  { return []Plan{p.Child} }
func (p *Aggregation) Children() []Plan { return []Plan{p.Child} }
func (p *Sort) Children() []Plan        { return []Plan{p.Child} }
func (p *Limit) Children() []Plan       { return []Plan{p.Child} }
func (p *Distinct) Children() []Plan    { return []Plan{p.Child} }
func (p *Dual) Children() []Plan        { return nil }
func (p *Trim) Children() []Plan        { return []Plan{p.Child} }
