package tikv

import (
	"context"
	"fmt"
	"math"
	"sync"

	tikvkv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv/rangetask"
	"github.com/tikv/pd/client/constants"
)

// What the SQL layer's GC leader (package gcworker) needs of the storage,
// as TiDB's GC worker asks it of client-go: the start of this node's
// oldest open transaction, lock resolution below a safe point, and PD's
// GC safe point.

// openTxns is the start timestamps of a storage's open transactions.
type openTxns struct {
	mu sync.Mutex
	m  map[*txn]uint64
}

func (o *openTxns) add(t *txn, startTS uint64) {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[*txn]uint64{}
	}
	o.m[t] = startTS
	o.mu.Unlock()
}

func (o *openTxns) remove(t *txn) {
	o.mu.Lock()
	delete(o.m, t)
	o.mu.Unlock()
}

// MinStartTS is the start timestamp of the oldest transaction begun on
// this storage and not yet committed or rolled back, 0 if none is open.
func (s *Storage) MinStartTS() uint64 {
	s.open.mu.Lock()
	defer s.open.mu.Unlock()
	min := uint64(0)
	for _, ts := range s.open.m {
		if min == 0 || ts < min {
			min = ts
		}
	}
	return min
}

// gcResolveConcurrency is how many regions lock resolution works on at
// once (TiDB's GC default is one per store; client-go's GC uses 8).
const gcResolveConcurrency = 4

// ResolveLocks resolves every lock of the cluster at or below safePoint:
// each lock's transaction is committed or rolled back according to its
// primary, so that GC below safePoint removes no version a committed
// transaction still needs (client-go's KVStore.GC, without its advance of
// the transaction safe point, which Basalt's PD keeps equal to the GC
// safe point).
func (s *Storage) ResolveLocks(ctx context.Context, safePoint uint64) error {
	resolver := tikv.NewRegionLockResolver("gc-worker", s.store)
	handler := func(ctx context.Context, r tikvkv.KeyRange) (rangetask.TaskStat, error) {
		return tikv.ResolveLocksForRange(ctx, resolver, safePoint, r.StartKey, r.EndKey,
			tikv.NewGcResolveLockMaxBackoffer, tikv.GCScanLockLimit)
	}
	runner := rangetask.NewRangeTaskRunnerWithID("resolve-locks-runner",
		fmt.Sprintf("resolve-locks-runner-%d", safePoint), s.store, gcResolveConcurrency, handler)
	return mapErr(runner.RunOnRange(ctx, nil, nil))
}

// GCSafePoint is PD's GC safe point.
func (s *Storage) GCSafePoint(ctx context.Context) (uint64, error) {
	st, err := s.store.GetPDClient().GetGCStatesClient(constants.NullKeyspaceID).GetGCState(ctx)
	if err != nil {
		return 0, mapErr(err)
	}
	return st.GCSafePoint, nil
}

// UpdateGCSafePoint moves PD's GC safe point forward to safePoint (an
// older one changes nothing) and returns it as it now is; the stores
// then remove the versions below it.
func (s *Storage) UpdateGCSafePoint(ctx context.Context, safePoint uint64) (uint64, error) {
	//nolint:staticcheck // Basalt's PD keeps the GC safe point of PD's v1 API (UpdateGCSafePoint), which its stores poll.
	sp, err := s.store.GetPDClient().UpdateGCSafePoint(ctx, safePoint)
	return sp, mapErr(err)
}

// gcWorkerService is the service ID of TiDB's GC worker in PD's service
// safe points.
const gcWorkerService = "gc_worker"

// BoundBySafePoints saves safePoint as the GC worker's service safe point
// and returns the smallest of all services' (a backup or changefeed may
// hold GC back below the GC worker's), which is what GC may go to.
func (s *Storage) BoundBySafePoints(ctx context.Context, safePoint uint64) (uint64, error) {
	//nolint:staticcheck // PD's v1 service safe points, as TiDB's GC worker sets them.
	min, err := s.store.GetPDClient().UpdateServiceGCSafePoint(ctx, gcWorkerService, math.MaxInt64, safePoint)
	if err != nil {
		return 0, mapErr(err)
	}
	if min != 0 && min < safePoint {
		return min, nil
	}
	return safePoint, nil
}
