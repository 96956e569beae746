package storenode

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/kvproto/pkg/errorpb"
)

// concurrencyManager is the store's part of TiKV's concurrency manager:
// max ts, and when it may be trusted.
//
// Max ts is at least every timestamp this store has served a read at, and
// every start ts it may have written a rollback record at (the callers of
// observe say which). An async-commit or 1PC prewrite commits above it
// (mvcc.Prewrite), so that no read served here misses the commit, and no
// commit lands on a rollback record.
//
// Order matters, and is the same as the embedded store's one-phase
// commits: a reader raises max ts and then waits for the commits in
// flight on its keys (mvcc.Latches.WaitRead, inside mvcc.Store's reads); a
// prewrite marks its keys committing and then reads max ts. Either the
// reader raised it first, and the commit ts is above the read, or the
// reader sees the mark and waits for the prewrite to be applied, and then
// meets its lock or commit. The latches are TiKV's in-memory lock table.
//
// Max ts covers only reads served by this store. A region whose leader
// moves here may have served reads elsewhere, at timestamps PD had issued
// by then, so before its first async-commit or 1PC prewrite in a term the
// new leader raises max ts to a fresh timestamp from PD (syncRegion).
//
// All methods are safe for concurrent use.
type concurrencyManager struct {
	maxTS atomic.Uint64

	mu sync.Mutex
	// synced is, per region, the leader term for which max ts covers
	// every read of the region's former leaders.
	synced map[uint64]uint64
	// syncing is, per region, the PD call in flight for it.
	syncing map[uint64]*maxTSSync
}

// maxTSSync is a call to PD for a region's max ts; done closes when err
// and the synced term are set.
type maxTSSync struct {
	term uint64
	done chan struct{}
	err  error
}

// maxTSSyncTimeout bounds the call to PD a prewrite waits for: past it the
// client is told to back off and retry (max_timestamp_not_synced).
const maxTSSyncTimeout = 3 * time.Second

func newConcurrencyManager() *concurrencyManager {
	return &concurrencyManager{synced: map[uint64]uint64{}, syncing: map[uint64]*maxTSSync{}}
}

// observe raises max ts to ts. math.MaxUint64 (a read of the newest
// versions, or a resolver's "any time") is not a timestamp PD issues and
// is ignored, as TiKV does.
func (m *concurrencyManager) observe(ts uint64) {
	if ts == math.MaxUint64 {
		return
	}
	for {
		cur := m.maxTS.Load()
		if ts <= cur || m.maxTS.CompareAndSwap(cur, ts) {
			return
		}
	}
}

// MaxTS is the highest timestamp observed.
func (m *concurrencyManager) MaxTS() uint64 { return m.maxTS.Load() }

// syncRegion makes sure max ts covers the reads of the region's former
// leaders, for its leadership in term (Region.LeaderTerm; 0: this store
// no longer leads it): once per term it raises max ts to a timestamp from
// tso (nil: there is no PD to ask). Concurrent callers share one call. It
// fails with the region error client-go backs off on and retries.
func (m *concurrencyManager) syncRegion(ctx context.Context, region, term uint64, tso func(context.Context) (uint64, error)) *errorpb.Error {
	notSynced := func(why string) *errorpb.Error {
		return &errorpb.Error{Message: fmt.Sprintf("max ts of region %d not synced: %s", region, why),
			MaxTimestampNotSynced: &errorpb.MaxTimestampNotSynced{}}
	}
	switch {
	case term == 0:
		return notSynced("this store no longer leads it")
	case tso == nil:
		return notSynced("the store has no timestamp source")
	}
	for {
		m.mu.Lock()
		if m.synced[region] == term {
			m.mu.Unlock()
			return nil
		}
		if c := m.syncing[region]; c != nil {
			m.mu.Unlock()
			select {
			case <-c.done:
				if c.err != nil && c.term == term {
					return notSynced(c.err.Error())
				}
				continue
			case <-ctx.Done():
				return notSynced(ctx.Err().Error())
			}
		}
		c := &maxTSSync{term: term, done: make(chan struct{})}
		m.syncing[region] = c
		m.mu.Unlock()

		tctx, cancel := context.WithTimeout(ctx, maxTSSyncTimeout)
		ts, err := tso(tctx)
		cancel()
		m.mu.Lock()
		delete(m.syncing, region)
		if err == nil {
			// Raised before the term is recorded: whoever sees the term
			// synced sees max ts raised.
			m.observe(ts)
			m.synced[region] = term
		}
		c.err = err
		m.mu.Unlock()
		close(c.done)
		if err != nil {
			return notSynced(fmt.Sprintf("getting a timestamp from PD: %v", err))
		}
		return nil
	}
}
