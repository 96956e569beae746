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
// it, and the logical counter carries on). Physical times stay below a
// window end saved in etcd, guarded by its leadership; a new leader
// starts above the saved end, so no timestamp is ever issued twice,
// across leader changes and restarts, whatever the clocks did. The next
// window (now + tsoSaveWindow) is saved tsoSaveAhead before the saved one
// ends, without holding the lock timestamps are taken under: requests go
// on below the saved end while etcd writes and syncs (with the save made
// when the physical time reached the end, every request waited for it,
// every 3 s; seconds when the disk is slow). Only if the window is used
// up before its successor is saved does a request wait for a save.
// Each request takes count timestamps: the logical values after the
// previous request's, up to the one returned.

const (
	tsoSaveWindow     = 3 * time.Second
	tsoSaveAhead      = time.Second
	tsoUpdateInterval = 50 * time.Millisecond
	// tsoGuard is how close (in ms) the physical time may come to the
	// saved window end.
	tsoGuard = 1
)

// errTSONotReady is returned while this member does not lead (or has not
// loaded its window yet); pd/client then asks GetMembers again.
var errTSONotReady = errors.New("not leader: timestamp oracle not serving")

type oracle struct {
	s *Server
	// put saves a window end in etcd, guarded by the leadership
	// (leaderTxn); tests replace it.
	put func(ctx context.Context, end int64) error
	// saveMu serializes window saves (held across the write, taken
	// before mu), so the saved end only grows.
	saveMu   sync.Mutex
	mu       sync.Mutex
	serving  bool
	gen      uint64 // terms started: a save begun in an earlier one does not apply
	physical int64  // ms
	logical  int64
	saved    int64 // ms: the window end saved in etcd
	stopLoop chan struct{}
	loopDone chan struct{}
}

func newTSO(s *Server) *oracle {
	t := &oracle{s: s}
	t.put = func(ctx context.Context, end int64) error {
		return s.leaderTxn(ctx, putU64(t.key(), uint64(end)))
	}
	return t
}

func (t *oracle) key() string { return t.s.rootPath + "/timestamp" }

func nowMs() int64 { return time.Now().UnixMilli() }

// start loads the saved window and starts serving above it.
func (t *oracle) start(ctx context.Context) error {
	// A save of the previous term still under way ends first.
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	saved, err := t.s.getU64(ctx, t.key())
	if err != nil {
		return err
	}
	next := nowMs()
	if next-int64(saved) <= tsoGuard {
		next = int64(saved) + tsoGuard + 1
	}
	end := next + tsoSaveWindow.Milliseconds()
	if err := t.put(ctx, end); err != nil {
		return err
	}
	t.mu.Lock()
	t.gen++
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
				if errors.Is(err, errNotLeader) || errors.Is(err, errTSONotReady) {
					return
				}
			}
		}
	}
}

// update moves the physical time to the wall clock when it is ahead (or
// by 1 ms when the logical counter is half used), within the saved
// window; it saves the next window first when the saved end is within
// tsoSaveAhead, with timestamps going on meanwhile.
func (t *oracle) update() error {
	t.mu.Lock()
	if !t.serving {
		t.mu.Unlock()
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
	ahead := t.saved-next <= tsoSaveAhead.Milliseconds()
	t.mu.Unlock()
	var err error
	if ahead {
		err = t.saveWindow(next + tsoSaveWindow.Milliseconds())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.serving && next > t.physical && t.saved-next > tsoGuard {
		t.physical, t.logical = next, 0
	}
	return err
}

// saveWindow saves end as the window's end, unless a later one is saved
// already. mu is not held across the write.
func (t *oracle) saveWindow(end int64) error {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	t.mu.Lock()
	serving, saved, gen := t.serving, t.saved, t.gen
	t.mu.Unlock()
	if !serving {
		return errTSONotReady
	}
	if saved >= end {
		return nil
	}
	ctx, cancel := context.WithTimeout(t.s.ctx, 3*time.Second)
	defer cancel()
	err := t.put(ctx, end)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen != gen || !t.serving {
		return errTSONotReady
	}
	if err != nil {
		if errors.Is(err, errNotLeader) {
			t.serving = false
		}
		return err
	}
	if end > t.saved {
		t.saved = end
	}
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
	for {
		if !t.serving {
			return 0, 0, errTSONotReady
		}
		if t.logical+int64(count) < tso.MaxLogical {
			t.logical += int64(count)
			return t.physical, t.logical, nil
		}
		// This millisecond is used up: take the next one, within the
		// saved window.
		next := t.physical + 1
		if t.saved-next > tsoGuard {
			t.physical, t.logical = next, 0
			continue
		}
		// The window is used up before its successor was saved: save
		// one now, and try again.
		t.mu.Unlock()
		err := t.saveWindow(next + tsoSaveWindow.Milliseconds())
		t.mu.Lock()
		if err != nil {
			return 0, 0, err
		}
	}
}
