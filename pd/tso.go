package pd

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/basalt-db/basalt/tso"
)

// The timestamp oracle, as PD's: a timestamp is physical ms << 18 |
// logical (package tso). The leader keeps the current physical time in
// memory and moves it forward every tsoUpdateInterval to the wall clock
// (never back: if the clock goes backwards the physical time waits for
// it, and the logical counter carries on). Before using physical times up
// to T it saves T + tsoSaveWindow in etcd, guarded by its leadership; a
// new leader starts above the saved time, so no timestamp is ever issued
// twice, across leader changes and restarts, whatever the clocks did.
// Each request takes count timestamps: the logical values after the
// previous request's, up to the one returned.

const (
	tsoSaveWindow     = 3 * time.Second
	tsoUpdateInterval = 50 * time.Millisecond
	// tsoGuard is how close (in ms) the physical time may come to the
	// saved window before the window moves.
	tsoGuard = 1
)

// errTSONotReady is returned while this member does not lead (or has not
// loaded its window yet); pd/client then asks GetMembers again.
var errTSONotReady = errors.New("not leader: timestamp oracle not serving")

type oracle struct {
	s        *Server
	mu       sync.Mutex
	serving  bool
	physical int64 // ms
	logical  int64
	saved    int64 // ms: the window end saved in etcd
	stopLoop chan struct{}
	loopDone chan struct{}
}

func newTSO(s *Server) *oracle { return &oracle{s: s} }

func (t *oracle) key() string { return t.s.rootPath + "/timestamp" }

func nowMs() int64 { return time.Now().UnixMilli() }

// start loads the saved window and starts serving above it.
func (t *oracle) start(ctx context.Context) error {
	saved, err := t.s.getU64(ctx, t.key())
	if err != nil {
		return err
	}
	next := nowMs()
	if next-int64(saved) <= tsoGuard {
		next = int64(saved) + tsoGuard + 1
	}
	end := next + tsoSaveWindow.Milliseconds()
	if err := t.s.leaderTxn(ctx, putU64(t.key(), uint64(end))); err != nil {
		return err
	}
	t.mu.Lock()
	t.physical, t.logical, t.saved, t.serving = next, 0, end, true
	t.stopLoop, t.loopDone = make(chan struct{}), make(chan struct{})
	t.mu.Unlock()
	go t.updateLoop(t.stopLoop, t.loopDone)
	return nil
}

// stop stops serving (the term ended).
func (t *oracle) stop() {
	t.mu.Lock()
	stop, done := t.stopLoop, t.loopDone
	t.serving, t.stopLoop, t.loopDone = false, nil, nil
	t.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (t *oracle) updateLoop(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(tsoUpdateInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if err := t.update(); err != nil {
				t.s.log.Warn("pd: tso update", "err", err)
				if errors.Is(err, errNotLeader) {
					return
				}
			}
		}
	}
}

// update moves the physical time to the wall clock when it is ahead (or
// by 1 ms when the logical counter is half used), saving a new window
// first when the physical time nears the saved one.
func (t *oracle) update() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.serving {
		return nil
	}
	now := nowMs()
	next := t.physical
	switch {
	case now-t.physical > tsoGuard:
		next = now
	case t.logical > tso.MaxLogical/2:
		next = t.physical + 1
	}
	if t.saved-next <= tsoGuard {
		if err := t.saveLocked(next + tsoSaveWindow.Milliseconds()); err != nil {
			return err
		}
	}
	if next > t.physical {
		t.physical, t.logical = next, 0
	}
	return nil
}

func (t *oracle) saveLocked(end int64) error {
	ctx, cancel := context.WithTimeout(t.s.ctx, 3*time.Second)
	defer cancel()
	if err := t.s.leaderTxn(ctx, putU64(t.key(), uint64(end))); err != nil {
		if errors.Is(err, errNotLeader) {
			t.serving = false
		}
		return err
	}
	t.saved = end
	return nil
}

// next takes count timestamps and returns the largest: the caller hands
// out (physical, logical-count+1) ... (physical, logical).
func (t *oracle) next(count uint32) (physical, logical int64, err error) {
	if count == 0 {
		return 0, 0, errors.New("tso: count is 0")
	}
	if count >= tso.MaxLogical {
		return 0, 0, errors.New("tso: count exceeds the logical range")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.serving {
		return 0, 0, errTSONotReady
	}
	if t.logical+int64(count) >= tso.MaxLogical {
		// This millisecond is used up: take the next one, within the
		// saved window.
		next := t.physical + 1
		if t.saved-next <= tsoGuard {
			if err := t.saveLocked(next + tsoSaveWindow.Milliseconds()); err != nil {
				return 0, 0, err
			}
		}
		t.physical, t.logical = next, 0
	}
	t.logical += int64(count)
	return t.physical, t.logical, nil
}
