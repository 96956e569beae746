package pd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The ID allocator hands out the cluster's IDs (stores, regions, peers:
// one counter for all, as PD's). The leader reserves a batch by saving
// its end in etcd, guarded by its leadership, and hands the batch out
// from memory; a new leader starts after the saved end, so an ID is never
// handed out twice, at the cost of the unused rest of a batch.

const idBatch = 1000

type idAlloc struct {
	s         *Server
	mu        sync.Mutex
	base, end uint64 // handed out up to base; reserved up to end
}

func newIDAlloc(s *Server) *idAlloc { return &idAlloc{s: s} }

func (a *idAlloc) key() string { return a.s.rootPath + "/alloc_id" }

// reset makes the next allocation reserve a batch after the saved end
// (a new term).
func (a *idAlloc) reset() {
	a.mu.Lock()
	a.base, a.end = 0, 0
	a.mu.Unlock()
}

// alloc returns the first of count new consecutive IDs.
func (a *idAlloc) alloc(ctx context.Context, count uint64) (uint64, error) {
	count = max(count, 1)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.end == 0 || a.base+count > a.end {
		saved, err := a.s.getU64(ctx, a.key())
		if err != nil {
			return 0, err
		}
		if saved != a.end {
			// A new term, or another leader reserved IDs since: start
			// after everything reserved.
			a.base = saved
		}
		end := saved + max(count, idBatch)
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := a.s.leaderTxn(tctx, putU64(a.key(), end)); err != nil {
			return 0, err
		}
		a.end = end
	}
	first := a.base + 1
	a.base += count
	return first, nil
}

// putU64 is the op that stores v at key.
func putU64(key string, v uint64) clientv3.Op { return clientv3.OpPut(key, string(u64(v))) }
