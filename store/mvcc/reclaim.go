package mvcc

import (
	"context"
	"sync"
)

// Reclaimer gives back the disk space of deleted ranges. A range deletion
// (DROP TABLE, TRUNCATE, a dropped index) hides the keys from readers at
// once, but their bytes stay on disk until a compaction reaches them,
// which on a quiet store may be never. So a store queues a compaction of
// each range it deleted, once the deletion is written, and the
// Reclaimer's goroutine runs them one after another, as TiKV compacts a
// destroyed range. Compaction changes nothing a reader sees. What is
// still queued at Stop is dropped: the deletions are durable, and normal
// compactions give the space back later.
type Reclaimer struct {
	onError func(error)

	mu      sync.Mutex
	pending []func(context.Context) error
	wake    chan struct{} // capacity 1: a send means "look at pending"
	cancel  context.CancelFunc
	done    chan struct{}
}

// StartReclaimer starts the goroutine that runs the queued compactions;
// onError, if not nil, is told of each that fails.
func StartReclaimer(onError func(error)) *Reclaimer {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Reclaimer{onError: onError, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go r.loop(ctx)
	return r
}

// Queue adds compactions (of ranges whose deletion is written). A nil
// Reclaimer (a store not started) drops them.
func (r *Reclaimer) Queue(compactions ...func(context.Context) error) {
	if r == nil || len(compactions) == 0 {
		return
	}
	r.mu.Lock()
	r.pending = append(r.pending, compactions...)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Stop abandons a compaction under way and returns once the goroutine has
// stopped: call it before the engine closes.
func (r *Reclaimer) Stop() {
	r.cancel()
	<-r.done
}

func (r *Reclaimer) loop(ctx context.Context) {
	defer close(r.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		jobs := r.pending
		r.pending = nil
		r.mu.Unlock()
		for _, compact := range jobs {
			err := compact(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil && r.onError != nil {
				r.onError(err)
			}
		}
	}
}
