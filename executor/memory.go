package executor

import (
	"unsafe"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/types"
)

// MemTracker counts the memory one statement holds — rows buffered by
// sorts, hash aggregation groups, DISTINCT sets, rows read before a write,
// and what the statement added to its transaction's write buffer — and
// fails the statement with ErrMemQuotaExceeded once the count passes its
// quota (tidb_mem_quota_query), instead of letting one query exhaust the
// server's memory.
//
// Counts are estimates of heap bytes. Operators count in batches (memAcc),
// never per value through an interface, so tracking stays off the hot
// path; a quota is therefore enforced to within one batch per operator.
//
// A MemTracker belongs to one statement, which runs on one goroutine: it
// is not safe for concurrent use. A nil *MemTracker tracks nothing.
type MemTracker struct {
	quota int64 // bytes; <= 0 means no limit
	used  int64 // held by operators
	peak  int64 // most of used plus the write buffer's growth seen

	// txn is the transaction the statement writes to, and txnBase its
	// write buffer's size when the statement began.
	txn     kv.Txn
	txnBase int64
}

// ErrMemQuotaExceeded is TiDB's ER_MEMORY_EXCEED_FOR_QUERY.
var ErrMemQuotaExceeded = errno.New(errno.ErMemoryExceedForQuery, "Your query has been cancelled due to exceeding the allowed memory limit for a single SQL query. Please try narrowing your query scope or increase the tidb_mem_quota_query limit and try again.")

// Reset readies t for a statement with a quota of quota bytes (<= 0: no
// limit) that writes to txn (nil for none).
func (t *MemTracker) Reset(quota int64, txn kv.Txn) {
	*t = MemTracker{quota: quota, txn: txn}
	if txn != nil {
		t.txnBase = txnMem(txn)
	}
}

// Consume counts n more bytes held, and fails if the statement is now over
// its quota.
func (t *MemTracker) Consume(n int64) error {
	if t == nil {
		return nil
	}
	t.used += n
	return t.check()
}

// Release counts n bytes no longer held.
func (t *MemTracker) Release(n int64) {
	if t != nil {
		t.used -= n
	}
}

// Used is the bytes the statement holds now: its operators' and its
// growth of the write buffer.
func (t *MemTracker) Used() int64 {
	if t == nil {
		return 0
	}
	u := t.used
	if t.txn != nil {
		u += txnMem(t.txn) - t.txnBase
	}
	return u
}

// Peak is the most Used has been at a check.
func (t *MemTracker) Peak() int64 {
	if t == nil {
		return 0
	}
	return t.peak
}

// check fails if the statement is over its quota.
func (t *MemTracker) check() error {
	if t == nil {
		return nil
	}
	u := t.Used()
	t.peak = max(t.peak, u)
	if t.quota > 0 && u > t.quota {
		return ErrMemQuotaExceeded
	}
	return nil
}

// memBufferEntryOverhead estimates what the write buffer spends on each
// key beyond its bytes: the map entry, the entry struct, the order slice.
const memBufferEntryOverhead = 96

func txnMem(txn kv.Txn) int64 {
	return int64(txn.Size()) + int64(txn.Len())*memBufferEntryOverhead
}

// memBatch is how many bytes an operator gathers before passing them to
// its tracker.
const memBatch = 256 << 10

// memAcc is one operator's account with the statement's tracker: add
// gathers bytes locally and consumes them a batch at a time; release gives
// back everything consumed (at Close, or before a reopened operator counts
// again).
type memAcc struct {
	t              *MemTracker
	pending, total int64
	peak           int64 // the most total+pending has been, for EXPLAIN ANALYZE
}

func (a *memAcc) add(n int64) error {
	a.pending += n
	a.peak = max(a.peak, a.total+a.pending)
	if a.pending < memBatch {
		return nil
	}
	return a.flush()
}

// flush consumes what add gathered.
func (a *memAcc) flush() error {
	n := a.pending
	a.pending = 0
	a.total += n
	return a.t.Consume(n)
}

func (a *memAcc) release() {
	a.t.Release(a.total)
	a.total, a.pending = 0, 0
}

// Sizes of the estimates.
const (
	datumSize   = int64(unsafe.Sizeof(types.Datum{}))
	sliceHeader = int64(unsafe.Sizeof([]types.Datum{}))
	// decimalSize is an apd.Decimal with a small coefficient.
	decimalSize = 64
	// mapEntrySize is a map entry's share of its table beyond the key's
	// bytes: the string header, the value, hashing metadata and slack.
	mapEntrySize = 48
)

// rowMem estimates the bytes a buffered row holds: its slice header, its
// datums and the bytes they point to.
func rowMem(row []types.Datum) int64 {
	n := sliceHeader + datumSize*int64(len(row))
	for i := range row {
		n += int64(len(row[i].Bytes()))
		if row[i].Kind() == types.KindDecimal {
			n += decimalSize
		}
	}
	return n
}

// RowsMem estimates the bytes rows hold, for callers that buffer rows
// themselves and count them with MemTracker.Consume.
func RowsMem(rows [][]types.Datum) int64 {
	var n int64
	for _, r := range rows {
		n += rowMem(r)
	}
	return n
}

// checkpoint is called by the write loops once per row, with the row's
// index: every 64th row it stops the statement if it was cancelled (KILL
// QUERY) or its transaction's write buffer has grown past its memory
// quota.
func (ctx *Ctx) checkpoint(i int) error {
	if i&63 != 63 {
		return nil
	}
	if err := ctx.Context.Err(); err != nil {
		return err
	}
	return ctx.Mem.check()
}
