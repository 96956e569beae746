package catalog

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/basalt-db/basalt/kv"
)

// Auto-increment values, as TiDB's allocator hands them out.
//
// The stored counter of a table (Meta.AutoID) is the end of the last
// range any node reserved; a reservation moves it forward in a
// transaction of its own, committed at once, so that two reservations
// (of two nodes, or of one node before and after a restart) never share
// a value. A node hands out the values of its reserved range in order and
// keeps one allocator per table, each with its own mutex: a reservation
// for one table never holds up the inserts into another.
//
// Invariants of an autoAlloc (under its mu):
//   - next..end are reserved by this node and not yet handed out (none
//     when next > end); every value handed out so far is below next.
//   - A spare range (spareBase, spareEnd], when spareEnd > 0, was
//     reserved after the current one and lies wholly above end: it is
//     taken when the current range runs out, without a reservation.
//   - At most one reservation of a spare is under way (fetching), run by
//     the caller that crossed the refill mark, outside mu: the others go
//     on taking values meanwhile. Its range is kept only if it lies above
//     end when it arrives (a rebase may have moved past it).
//
// With AUTO_ID_CACHE 1 nothing is cached: every value comes from the
// stored counter, under the table's mu.

// autoIDBatch is how many auto-increment values one reservation takes; the
// unused part of a batch (and of a spare) is skipped after a restart, as
// in TiDB.
const autoIDBatch = 1000

// autoIDRefill is how few values left in the current range make the next
// allocation reserve the spare range.
const autoIDRefill = autoIDBatch / 2

// autoAlloc is one table's auto-increment values on this node.
type autoAlloc struct {
	mu                  sync.Mutex
	next, end           int64
	spareBase, spareEnd int64
	// fetching is closed when the spare's reservation under way ends
	// (whether or not it succeeded); nil when none is.
	fetching chan struct{}
}

// alloc returns the allocator of table id, creating it.
func (c *Catalog) alloc(id int64) *autoAlloc {
	if a, ok := c.autoIDs.Load(id); ok {
		return a.(*autoAlloc)
	}
	a, _ := c.autoIDs.LoadOrStore(id, &autoAlloc{next: 1})
	return a.(*autoAlloc)
}

// AllocAutoID reserves n consecutive auto-increment values of table and
// returns the first. Values are unique across the SQL nodes that share the
// store, and increasing per node: each node reserves a batch of
// autoIDBatch values from the stored counter at a time (TiDB's
// allocator), and the next batch once half of the current one is used,
// so the values of two nodes interleave in batches and a gap follows a
// restart. With AUTO_ID_CACHE 1, every value comes from the counter
// itself: values are consecutive across all nodes, in the order they
// were handed out, as MySQL's.
func (c *Catalog) AllocAutoID(ctx context.Context, t *TableInfo, n int64) (int64, error) {
	a := c.alloc(t.ID)
	a.mu.Lock()
	if t.AutoIDCache == 1 {
		defer a.mu.Unlock()
		base, _, err := c.reserve(ctx, t, n, 0)
		return base + 1, err
	}
	for {
		if a.next+n-1 <= a.end {
			first := a.next
			a.next += n
			if a.end-a.next+1 >= autoIDRefill || a.spareEnd > 0 || a.fetching != nil {
				a.mu.Unlock()
				return first, nil
			}
			// Reserve the spare now, outside mu, while the others go on
			// with the values left.
			done := make(chan struct{})
			a.fetching = done
			a.mu.Unlock()
			base, end, err := c.reserve(context.WithoutCancel(ctx), t, autoIDBatch, 0)
			a.mu.Lock()
			if err == nil && base >= a.end {
				a.spareBase, a.spareEnd = base, end
			}
			a.fetching = nil
			close(done)
			a.mu.Unlock()
			// An error here is not this value's: the next reservation
			// will meet it again, or not.
			return first, nil
		}
		if a.spareEnd > 0 {
			if a.next <= a.end && a.end == a.spareBase {
				a.end = a.spareEnd // continue the current range
			} else {
				a.next, a.end = a.spareBase+1, a.spareEnd
			}
			a.spareBase, a.spareEnd = 0, 0
			continue
		}
		if done := a.fetching; done != nil {
			a.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			a.mu.Lock()
			continue
		}
		// Nothing reserved (the first value since the start, a value
		// larger than a batch, or the spare's reservation failed): only
		// this table's inserts wait for this one.
		base, end, err := c.reserve(ctx, t, max(n, autoIDBatch), 0)
		if err != nil {
			a.mu.Unlock()
			return 0, err
		}
		if a.next <= a.end && a.end == base {
			a.end = end
		} else {
			a.next, a.end = base+1, end
		}
	}
}

// RebaseAutoID makes later auto-increment values of table exceed v (after
// an explicit value was inserted into the AUTO_INCREMENT column).
func (c *Catalog) RebaseAutoID(ctx context.Context, t *TableInfo, v int64) error {
	a := c.alloc(t.ID)
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.AutoIDCache == 1 {
		_, _, err := c.reserve(ctx, t, 0, v)
		return err
	}
	reserved := a.end > 0 // every reservation ends above 0
	switch {
	case reserved && v < a.next:
		// Below what this node hands out next: nothing to do (a value
		// another node handed out, or this node's, meets its duplicate
		// key check).
		return nil
	case reserved && v <= a.end:
		a.next = v + 1
		return nil
	case a.spareEnd > 0 && v < a.spareEnd:
		a.next, a.end = max(v, a.spareBase)+1, a.spareEnd
		a.spareBase, a.spareEnd = 0, 0
		return nil
	}
	base, end, err := c.reserve(ctx, t, autoIDBatch, v)
	if err != nil {
		return err
	}
	// base is at least v, and every value up to base may have been handed
	// out before (by an earlier process): start after both. A spare lies
	// below v: drop it.
	a.next, a.end = max(base, v)+1, end
	a.spareBase, a.spareEnd = 0, 0
	return nil
}

// reserve moves the stored counter of t forward by n (from at least
// floor), returning the old and new ends. It commits at once, outside the
// caller's transaction, so that values are never handed out twice.
func (c *Catalog) reserve(ctx context.Context, t *TableInfo, n, floor int64) (base, end int64, err error) {
	for attempt := 0; attempt < 100; attempt++ {
		txn, err := c.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
		if err != nil {
			return 0, 0, err
		}
		m := NewMeta(txn)
		base, err = m.AutoID(t.ID)
		if err == nil {
			base = max(base, floor, t.AutoIncStart-1)
			end = base + n
			err = m.SetAutoID(t.ID, end)
		}
		if err == nil {
			err = txn.Commit(ctx)
		} else {
			txn.Rollback()
		}
		if errors.Is(err, kv.ErrWriteConflict) {
			continue
		}
		return base, end, err
	}
	return 0, 0, fmt.Errorf("catalog: could not reserve auto-increment values for table %s", t.Name)
}

// ForgetAutoID drops the cached ranges of a dropped or truncated table.
func (c *Catalog) ForgetAutoID(tableID int64) { c.autoIDs.Delete(tableID) }
