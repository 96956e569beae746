package raftstore

import (
	"context"
	"sync"

	"github.com/basalt-db/basalt/store/mvcc"
)

// Reclaiming deleted ranges. A DeleteRange a replica applies (a dropped or
// truncated table's keys, through KvDeleteRange) is a Pebble range
// deletion: readers see the keys gone at once, but their bytes stay on
// disk until a compaction reaches them, which on a quiet store may be
// never. So each replica queues the range once its batch is committed, and
// one goroutine of the store compacts it, as TiKV compacts after a range
// is destroyed and as the embedded store does (store/local/reclaim.go).
// Ranges still queued when the store stops are dropped: the deletions are
// durable, and normal compactions give the space back later.

// deletedRange is a range of one column family that a DeleteRange emptied.
type deletedRange struct {
	cf         mvcc.CF
	start, end []byte
}

type reclaimer struct {
	mu      sync.Mutex
	pending []deletedRange
	wake    chan struct{} // capacity 1
	cancel  context.CancelFunc
	done    chan struct{}
}

// startReclaimer starts the goroutine that compacts deleted ranges.
func (s *Store) startReclaimer() {
	ctx, cancel := context.WithCancel(context.Background())
	s.reclaim.wake, s.reclaim.cancel, s.reclaim.done = make(chan struct{}, 1), cancel, make(chan struct{})
	go s.reclaimLoop(ctx)
}

// stopReclaimer abandons a compaction under way and returns once the
// goroutine has stopped.
func (s *Store) stopReclaimer() {
	if s.reclaim.cancel != nil {
		s.reclaim.cancel()
		<-s.reclaim.done
	}
}

// queueReclaim asks for ranges, committed deleted, to be compacted.
func (s *Store) queueReclaim(ranges []deletedRange) {
	if len(ranges) == 0 || s.reclaim.wake == nil {
		return
	}
	s.reclaim.mu.Lock()
	s.reclaim.pending = append(s.reclaim.pending, ranges...)
	s.reclaim.mu.Unlock()
	select {
	case s.reclaim.wake <- struct{}{}:
	default:
	}
}

func (s *Store) reclaimLoop(ctx context.Context) {
	defer close(s.reclaim.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.reclaim.wake:
		}
		s.reclaim.mu.Lock()
		ranges := s.reclaim.pending
		s.reclaim.pending = nil
		s.reclaim.mu.Unlock()
		for _, r := range ranges {
			err := s.eng.CompactRange(ctx, r.cf, r.start, r.end)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Warn("cannot compact a deleted range", "err", err)
			}
		}
	}
}
