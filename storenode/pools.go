package storenode

import (
	"context"
	"sync/atomic"
)

// workerPool bounds how many tasks run at once, as a TiKV thread pool of
// that size does: a task takes a slot before it runs and gives it back
// when done; tasks beyond the bound queue until a slot frees or their
// context ends. The store has two (see Config): the read pool, whose
// slots reads hold from the moment their data may be read (past the read
// index and any commit in flight on their keys) until they are answered,
// and the scheduler, whose slots transaction commands hold while they
// decide their writes (mvcc.Scheduler), not while those replicate.
//
// It implements mvcc.Scheduler. All methods are safe for concurrent use.
type workerPool struct {
	slots chan struct{}
	// waiting counts the tasks queued for a slot.
	waiting atomic.Int64
}

func newWorkerPool(size int) *workerPool {
	return &workerPool{slots: make(chan struct{}, max(size, 1))}
}

// Acquire waits for a slot, or for ctx to end.
func (p *workerPool) Acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	default:
	}
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryAcquire takes a slot if one is free at once.
func (p *workerPool) TryAcquire() bool {
	select {
	case p.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release gives back a slot taken by Acquire.
func (p *workerPool) Release() { <-p.slots }

// running is how many slots are taken.
func (p *workerPool) running() int { return len(p.slots) }
