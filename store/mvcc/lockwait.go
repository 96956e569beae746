package mvcc

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// Clock makes timers. Tests pass a manual clock so that lock wait timeouts
// fire when the test says, not when the machine gets round to it.
type Clock interface {
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that lock waiting uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

// NewTimer implements Clock.
func (RealClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// WaitManager parks transactions that wait for another transaction's lock
// and detects deadlocks among them.
//
// Each waiting transaction waits for exactly one holder at a time (a
// transaction runs one statement at a time and locks its keys one after
// another), so the wait-for graph has at most one edge out of each node and
// a cycle is found by walking from the holder. The transaction whose wait
// would close a cycle is refused with a *kv.DeadlockError and is the only
// victim: registration happens under one mutex, so no two transactions can
// close the same cycle.
//
// When a holder releases a key, every waiter on that key is woken and
// retries; a waiter that loses the race registers again with the new
// holder, so the graph's edges always name the current holder.
type WaitManager struct {
	clock    Clock
	detector Detector
	mu       sync.Mutex
	byKey    map[string][]*Waiter
	waitFor  map[uint64]*Waiter // by waiter start ts
	// count is the number of registered waiters, read without mu so that
	// releasing locks costs nothing when nobody waits.
	count atomic.Int64
}

// Detector joins a WaitManager's waits to a wider wait-for graph: a
// storage node's to the cluster's, whose cycles span stores. Its calls must
// not block; a cycle it finds comes back later through
// WaitManager.Deadlock.
type Detector interface {
	// Detect reports that txn waits for holder's lock on key.
	Detect(key []byte, txn, holder uint64)
	// CleanUpWaitFor reports that txn no longer waits for holder on key.
	CleanUpWaitFor(key []byte, txn, holder uint64)
}

// SetDetector makes m report its waits to d. Call it before any wait.
func (m *WaitManager) SetDetector(d Detector) { m.detector = d }

// Waiter is one transaction parked on one key.
type Waiter struct {
	m       *WaitManager
	key     string
	startTS uint64
	holder  uint64
	woken   chan struct{}
	err     error // why it was woken, if not because the lock was released
}

// NewWaitManager returns a WaitManager timing waits with clock.
func NewWaitManager(clock Clock) *WaitManager {
	return &WaitManager{clock: clock, byKey: make(map[string][]*Waiter), waitFor: make(map[uint64]*Waiter)}
}

// Register records that transaction startTS waits for holder's lock on key.
// Call it while holding the key's latch, so that the holder cannot release
// the key between the failed lock attempt and the registration. It fails
// with a *kv.DeadlockError if holder waits, directly or through others, for
// startTS.
func (m *WaitManager) Register(key []byte, startTS, holder uint64) (*Waiter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cycle := []uint64{startTS}
	for t := holder; ; {
		cycle = append(cycle, t)
		if t == startTS {
			return nil, &kv.DeadlockError{Key: slices.Clone(key), StartTS: startTS, Holder: holder, Cycle: cycle[:len(cycle)-1]}
		}
		w, ok := m.waitFor[t]
		if !ok {
			break
		}
		t = w.holder
	}
	w := &Waiter{m: m, key: string(key), startTS: startTS, holder: holder, woken: make(chan struct{})}
	m.byKey[w.key] = append(m.byKey[w.key], w)
	m.waitFor[startTS] = w
	m.count.Add(1)
	if m.detector != nil {
		m.detector.Detect(key, startTS, holder)
	}
	return w, nil
}

// Waits calls f for each wait registered now, with the key waited for,
// the waiting transaction and the lock's holder. f must not call m.
func (m *WaitManager) Waits(f func(key []byte, txn, holder uint64)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.waitFor {
		f([]byte(w.key), w.startTS, w.holder)
	}
}

// Deadlock wakes transaction txn, if it still waits for holder, with err:
// the detector found that its wait closes a cycle.
func (m *WaitManager) Deadlock(txn, holder uint64, err *kv.DeadlockError) {
	m.mu.Lock()
	w, ok := m.waitFor[txn]
	if !ok || w.holder != holder {
		m.mu.Unlock()
		return
	}
	w.err = err
	m.removeLocked(w)
	m.mu.Unlock()
	close(w.woken)
}

// Wait blocks until the lock is released (nil: retry), timeout passes
// (kv.ErrLockWaitTimeout) or ctx is done. A negative timeout waits forever.
// The waiter is unregistered when Wait returns.
func (w *Waiter) Wait(ctx context.Context, timeout time.Duration) error {
	defer w.m.remove(w)
	var expired <-chan time.Time
	if timeout >= 0 {
		t := w.m.clock.NewTimer(timeout)
		defer t.Stop()
		expired = t.C()
	}
	select {
	case <-w.woken:
		return w.err
	case <-expired:
		return kv.ErrLockWaitTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel unregisters a waiter that will not Wait.
func (w *Waiter) Cancel() { w.m.remove(w) }

func (m *WaitManager) remove(w *Waiter) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(w)
}

func (m *WaitManager) removeLocked(w *Waiter) {
	if m.waitFor[w.startTS] != w {
		return // already woken
	}
	if m.detector != nil {
		m.detector.CleanUpWaitFor([]byte(w.key), w.startTS, w.holder)
	}
	delete(m.waitFor, w.startTS)
	ws := m.byKey[w.key]
	if i := slices.Index(ws, w); i >= 0 {
		ws = slices.Delete(ws, i, i+1)
	}
	if len(ws) == 0 {
		delete(m.byKey, w.key)
	} else {
		m.byKey[w.key] = ws
	}
	m.count.Add(-1)
}

// WakeUp wakes every transaction waiting on one of keys: their holder has
// released them.
func (m *WaitManager) WakeUp(keys [][]byte) {
	if m.count.Load() == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		ws, ok := m.byKey[string(k)]
		if !ok {
			continue
		}
		delete(m.byKey, string(k))
		for _, w := range ws {
			if m.detector != nil {
				m.detector.CleanUpWaitFor(k, w.startTS, w.holder)
			}
			delete(m.waitFor, w.startTS)
			m.count.Add(-1)
			close(w.woken)
		}
	}
}

// WaitingFor returns the holder that transaction startTS waits for.
func (m *WaitManager) WaitingFor(startTS uint64) (holder uint64, ok bool) {
	_, holder, ok = m.WaitingOn(startTS)
	return holder, ok
}

// WaitingOn returns the key that transaction startTS waits on, and its
// holder.
func (m *WaitManager) WaitingOn(startTS uint64) (key []byte, holder uint64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.waitFor[startTS]
	if !ok {
		return nil, 0, false
	}
	return []byte(w.key), w.holder, true
}
