package mvcc

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// proposingEngine is a MemEngine behind a Raft-like front: a write is
// ordered (proposed called) at once and applied when the test lets it, if
// held. It records, for each write, whether the scheduler slot was held
// and whether the write carried a proposed hook.
type proposingEngine struct {
	*MemEngine
	sched *countingScheduler

	mu     sync.Mutex
	hold   chan struct{} // non-nil: writes wait for it to close
	writes []proposedWrite
	queued chan struct{} // a write was ordered and waits for hold
}

type proposedWrite struct {
	slotHeld, hooked bool
}

func (e *proposingEngine) WriteProposed(b *Batch, sync bool, proposed func()) error {
	e.mu.Lock()
	e.writes = append(e.writes, proposedWrite{slotHeld: e.sched.held() > 0, hooked: proposed != nil})
	hold := e.hold
	e.mu.Unlock()
	if proposed != nil {
		proposed()
	}
	if hold != nil {
		e.queued <- struct{}{}
		<-hold
	}
	return e.MemEngine.Write(b, sync)
}

// await waits for a write to be held.
func (e *proposingEngine) await(t *testing.T, what string) {
	t.Helper()
	select {
	case <-e.queued:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// holdWrites makes the writes from now on wait until the channel it
// returns is closed.
func (e *proposingEngine) holdWrites() chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hold = make(chan struct{})
	return e.hold
}

// openWrites lets the writes from now on through.
func (e *proposingEngine) openWrites() {
	e.mu.Lock()
	e.hold = nil
	e.mu.Unlock()
}

func (e *proposingEngine) recorded() []proposedWrite {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]proposedWrite(nil), e.writes...)
}

// countingScheduler is a Scheduler of one slot that counts.
type countingScheduler struct {
	slot     chan struct{}
	mu       sync.Mutex
	acquired int
}

func newCountingScheduler() *countingScheduler {
	return &countingScheduler{slot: make(chan struct{}, 1)}
}

func (c *countingScheduler) Acquire(ctx context.Context) error {
	select {
	case c.slot <- struct{}{}:
		c.mu.Lock()
		c.acquired++
		c.mu.Unlock()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *countingScheduler) Release() { <-c.slot }

func (c *countingScheduler) held() int { return len(c.slot) }

func (c *countingScheduler) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acquired
}

func newProposingStore(t *testing.T) (*Store, *proposingEngine) {
	t.Helper()
	eng := &proposingEngine{MemEngine: NewMemEngine(), sched: newCountingScheduler(), queued: make(chan struct{})}
	s, err := NewStore(eng, RealClock{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, eng
}

// A command decides in a slot of its context's scheduler and gives it
// back before its write goes to the engine: a command whose write waits
// for replication holds no slot, and one that waits for latches takes
// none until it has them.
func TestStoreSchedulerSlot(t *testing.T) {
	s, eng := newProposingStore(t)
	ctx := WithHooks(context.Background(), &Hooks{Scheduler: eng.sched})
	lock := func(txn uint64, keys ...string) *PessimisticLockRequest {
		req := &PessimisticLockRequest{StartTS: txn, ForUpdateTS: txn, LockTTL: 3000}
		for _, k := range keys {
			req.Keys = append(req.Keys, []byte(k))
		}
		req.Primary = req.Keys[0]
		return req
	}
	if err := s.PessimisticLock(ctx, lock(10, "a"), 0); err != nil {
		t.Fatal(err)
	}
	res, err := s.Prewrite(ctx, &PrewriteRequest{Primary: []byte("a"), StartTS: 10, ForUpdateTS: 10, LockTTL: 3000,
		Mutations: []kv.Mutation{{Op: kv.OpPut, Key: []byte("a"), Value: []byte("1")}}, Pessimistic: []bool{true}}, nil)
	if err != nil {
		t.Fatal(err, res)
	}
	for i, w := range eng.recorded() {
		if w.slotHeld {
			t.Errorf("write %d went to the engine with the command's slot held", i)
		}
	}
	if n := eng.sched.count(); n != 2 {
		t.Errorf("%d slots taken, want one per command", n)
	}

	// A commit whose write is held: another command decides meanwhile,
	// and a third, on the held command's keys, waits for its latches
	// without a slot.
	hold := eng.holdWrites()
	commitDone := make(chan error, 1)
	go func() { commitDone <- s.Commit(ctx, [][]byte{[]byte("a")}, 10, 11) }()
	eng.await(t, "the commit's write")
	otherDone := make(chan error, 1)
	go func() { otherDone <- s.PessimisticLock(ctx, lock(20, "b"), 0) }()
	eng.await(t, "another command's write, decided while the commit's is held")
	behind := make(chan error, 1)
	go func() { behind <- s.Rollback(ctx, [][]byte{[]byte("a")}, 30) }()
	waitUntil(t, "the rollback waits for the commit's latches", func() bool {
		busy, cancel := context.WithCancel(context.Background())
		cancel()
		g, err := s.latches.Acquire(busy, 30, [][]byte{[]byte("a")})
		if err == nil {
			s.latches.Release(g)
		}
		return err != nil
	})
	if n, held := eng.sched.count(), eng.sched.held(); n != 4 || held != 0 {
		t.Errorf("%d slots taken and %d held while writes wait; want 4 (the rollback has none yet) and 0", n, held)
	}
	eng.openWrites()
	close(hold)
	for name, ch := range map[string]chan error{"commit": commitDone, "lock": otherDone, "rollback": behind} {
		if err := <-ch; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := eng.sched.count(); n != 5 {
		t.Errorf("%d slots taken, want 5", n)
	}
}

// Hooks.Proposed is called for the batch that holds the last of a
// pessimistic lock request's locks, not for one that a lock wait follows,
// and the command keeps its latches until the batch applies.
func TestStoreProposedHook(t *testing.T) {
	s, eng := newProposingStore(t)
	var mu sync.Mutex
	var proposed int
	hooks := &Hooks{Proposed: func() {
		mu.Lock()
		proposed++
		mu.Unlock()
	}}
	calls := func() int {
		mu.Lock()
		defer mu.Unlock()
		return proposed
	}
	ctx := WithHooks(context.Background(), hooks)
	keys := func(ks ...string) [][]byte {
		out := make([][]byte, len(ks))
		for i, k := range ks {
			out[i] = []byte(k)
		}
		return out
	}
	if err := s.PessimisticLock(ctx, &PessimisticLockRequest{Keys: keys("b"), Primary: []byte("b"), StartTS: 10, ForUpdateTS: 10, LockTTL: 3000}, 0); err != nil {
		t.Fatal(err)
	}
	if calls() != 1 {
		t.Fatalf("proposed called %d times for one lock", calls())
	}
	// Txn 20 locks a, then waits for b: the batch of a is written without
	// the hook; once txn 10 lets b go, the batch of b carries it.
	done := make(chan error, 1)
	go func() {
		done <- s.PessimisticLock(ctx, &PessimisticLockRequest{Keys: keys("a", "b"), Primary: []byte("a"), StartTS: 20, ForUpdateTS: 20, LockTTL: 3000}, 5*time.Second)
	}()
	waitUntil(t, "txn 20 waits for txn 10", func() bool {
		h, ok := s.waits.WaitingFor(20)
		return ok && h == 10
	})
	if calls() != 1 {
		t.Errorf("proposed called for a batch that a lock wait follows")
	}
	first := eng.holdWrites()
	rolledBack := make(chan error, 1)
	go func() { rolledBack <- s.PessimisticRollback(context.Background(), keys("b"), 10, 10) }()
	eng.await(t, "the rollback's write")
	second := eng.holdWrites()
	close(first)
	if err := <-rolledBack; err != nil {
		t.Fatal(err)
	}
	eng.await(t, "txn 20's last batch") // ordered, not applied
	if calls() != 2 {
		t.Errorf("proposed called %d times; want once more, for the last batch", calls())
	}
	busy, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.latches.Acquire(busy, 30, keys("b")); !errors.Is(err, context.Canceled) {
		t.Errorf("b's latch is free before the lock applied (%v)", err)
	}
	eng.openWrites()
	close(second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A retry finds its locks in place: nothing to write, no hook.
	if err := s.PessimisticLock(ctx, &PessimisticLockRequest{Keys: keys("a", "b"), Primary: []byte("a"), StartTS: 20, ForUpdateTS: 20, LockTTL: 3000}, 0); err != nil {
		t.Fatal(err)
	}
	if calls() != 2 {
		t.Errorf("proposed called for a request that wrote nothing")
	}
	var hooked []bool
	for _, w := range eng.recorded() {
		hooked = append(hooked, w.hooked)
	}
	if want := []bool{true, false, false, true}; !slices.Equal(hooked, want) {
		t.Errorf("writes carried the hook %v, want %v (lock b, lock a, rollback b, lock b)", hooked, want)
	}
}

// waitUntil polls cond for up to 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out: %s", what)
}
