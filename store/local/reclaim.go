package local

import "context"

// Reclaiming dropped ranges. DeleteRange (DROP TABLE, DROP DATABASE,
// TRUNCATE, a dropped index) writes Pebble range deletions: the keys are
// gone for readers at once, but their bytes stay on disk, in the memtable's
// WAL and in sstables, until a compaction reaches them, which on a quiet
// store may be never. So each deleted range is also queued here, and one
// goroutine compacts it (store/mvcc's CompactRange: flush the memtable,
// then a manual compaction of the range to the last level), as TiKV
// compacts after UnsafeDestroyRange. Compaction changes no data a reader
// sees; it runs in the background so that the DDL statement does not wait
// for it.
//
// Ranges queued when the store closes are not compacted; their deletions
// are durable and the space comes back when compactions reach them.

// reclaimer holds the ranges waiting for compaction; its goroutine runs
// until the store closes.
type reclaimer struct {
	wake   chan struct{} // capacity 1: a send means "look at pending"
	cancel context.CancelFunc
	done   chan struct{}
}

// startReclaimer starts the goroutine that compacts deleted ranges.
func (s *Store) startReclaimer() {
	ctx, cancel := context.WithCancel(context.Background())
	s.reclaim = reclaimer{wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go s.reclaimLoop(ctx)
}

// queueReclaim asks for [start, end) to be compacted.
func (s *Store) queueReclaim(start, end []byte) {
	s.mu.Lock()
	s.pendingReclaim = append(s.pendingReclaim, [2][]byte{start, end})
	s.mu.Unlock()
	select {
	case s.reclaim.wake <- struct{}{}:
	default:
	}
}

// stopReclaimer stops the goroutine, abandoning a compaction under way,
// and returns once it has stopped: before the database closes.
func (s *Store) stopReclaimer() {
	s.reclaim.cancel()
	<-s.reclaim.done
}

func (s *Store) reclaimLoop(ctx context.Context) {
	defer close(s.reclaim.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.reclaim.wake:
		}
		s.mu.Lock()
		ranges := s.pendingReclaim
		s.pendingReclaim = nil
		s.mu.Unlock()
		for _, r := range ranges {
			err := s.mvcc.CompactRange(ctx, r[0], r[1])
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.opts.Logger.Printf("compacting a deleted range: %v", err)
			}
		}
	}
}
