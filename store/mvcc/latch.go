package mvcc

import (
	"bytes"
	"context"
	"slices"
	"sync"
)

// Latches serialize the commands that write the same keys, and tell readers
// about commits in flight.
//
// Every command that reads keys and then writes them (a lock, a commit, a
// rollback) holds a latch on each of those keys from its first read to the
// moment its batch is applied. A latch is taken on all of a command's keys
// at once or not at all, so commands cannot deadlock on latches.
//
// A one-phase commit marks its latches committing before it asks the oracle
// for a commit timestamp. A reader at ts first waits out every committing
// latch on its keys whose transaction started at or below ts: such a commit
// may get a commit ts below ts yet not be applied when the reader looks. A
// commit that is not yet marked when the reader checks will take its commit
// ts after the reader's ts was issued, so the reader may ignore it.
//
// On a storage node the same holds for async-commit and 1PC prewrites,
// whose commit ts the store chooses above its max ts: the prewrite marks
// its latches committing and then reads max ts; a reader raises max ts to
// its ts and then waits. Either the prewrite's ts is above the reader's,
// or the reader finds the latch marked and waits for the lock or commit
// to be applied. Once the writer knows its commit ts it says so
// (SetCommitFloor), and readers below it stop waiting.
type Latches struct {
	mu   sync.Mutex
	held map[string]*Guard
	// committing holds the guards marked committing, for range readers.
	committing map[*Guard]struct{}
	// ranges holds the range latches (AcquireRange): every key in their
	// ranges is latched by them.
	ranges map[*Guard]struct{}
}

// Guard is a command's hold on its keys' latches.
type Guard struct {
	keys       []string // sorted, distinct
	startTS    uint64
	committing bool
	// floor: the commit will land at or above it (0: unknown yet).
	floor    uint64
	released chan struct{}
	// isRange: a range latch, over [start, end) rather than keys.
	isRange    bool
	start, end []byte
}

// holds reports whether g latches key.
func (g *Guard) holds(key string) bool {
	return g.isRange && key >= string(g.start) && (g.end == nil || key < string(g.end))
}

// mayLandBelow reports whether g's commit may become visible to a read at
// ts. Call with the latches' mu held.
func (g *Guard) mayLandBelow(ts uint64) bool {
	return g.committing && g.startTS <= ts && g.floor <= ts
}

// NewLatches returns an empty latch table.
func NewLatches() *Latches {
	return &Latches{held: make(map[string]*Guard), committing: make(map[*Guard]struct{}),
		ranges: make(map[*Guard]struct{})}
}

// Acquire takes latches on keys for transaction startTS, waiting for other
// holders to release theirs.
func (l *Latches) Acquire(ctx context.Context, startTS uint64, keys [][]byte) (*Guard, error) {
	g := &Guard{startTS: startTS, released: make(chan struct{})}
	g.keys = make([]string, len(keys))
	for i, k := range keys {
		g.keys[i] = string(k)
	}
	slices.Sort(g.keys)
	g.keys = slices.Compact(g.keys)
	for {
		l.mu.Lock()
		var busy *Guard
		for _, k := range g.keys {
			if h, ok := l.held[k]; ok {
				busy = h
				break
			}
		}
		for r := range l.ranges {
			if busy != nil {
				break
			}
			for _, k := range g.keys {
				if r.holds(k) {
					busy = r
					break
				}
			}
		}
		if busy == nil {
			for _, k := range g.keys {
				l.held[k] = g
			}
			l.mu.Unlock()
			return g, nil
		}
		l.mu.Unlock()
		select {
		case <-busy.released:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// AcquireRange takes a latch on every key in [start, end) (a nil end is
// open): it waits for other range latches that overlap it, then keeps
// new writers of the range out and waits for those that hold latches in
// it to release them. Its start ts is set later (setStart), before it is
// marked committing.
func (l *Latches) AcquireRange(ctx context.Context, start, end []byte) (*Guard, error) {
	g := &Guard{isRange: true, start: start, end: end, released: make(chan struct{})}
	for registered := false; ; {
		l.mu.Lock()
		var busy *Guard
		if !registered {
			for r := range l.ranges {
				if rangesOverlap(r.start, r.end, start, end) {
					busy = r
					break
				}
			}
			if busy == nil {
				l.ranges[g] = struct{}{}
				registered = true
			}
		}
		if registered {
			for k, h := range l.held {
				if g.holds(k) {
					busy = h
					break
				}
			}
		}
		l.mu.Unlock()
		if busy == nil {
			return g, nil
		}
		select {
		case <-busy.released:
		case <-ctx.Done():
			if registered {
				l.Release(g)
			}
			return nil, ctx.Err()
		}
	}
}

// setStart sets the start ts of a range latch not yet committing.
func (l *Latches) setStart(g *Guard, ts uint64) {
	l.mu.Lock()
	g.startTS = ts
	l.mu.Unlock()
}

func rangesOverlap(s1, e1, s2, e2 []byte) bool {
	return (e1 == nil || bytes.Compare(s2, e1) < 0) && (e2 == nil || bytes.Compare(s1, e2) < 0)
}

// MarkCommitting makes readers of g's keys at or above g's start ts wait
// for g's release. Call it before taking the commit timestamp.
func (l *Latches) MarkCommitting(g *Guard) {
	l.mu.Lock()
	g.committing = true
	l.committing[g] = struct{}{}
	l.mu.Unlock()
}

// SetCommitFloor says that g's commit, once marked committing, will land
// at or above ts: readers below ts need not wait for it.
func (l *Latches) SetCommitFloor(g *Guard, ts uint64) {
	l.mu.Lock()
	g.floor = ts
	l.mu.Unlock()
}

// Release releases g's latches and wakes whoever waits for them.
func (l *Latches) Release(g *Guard) {
	l.mu.Lock()
	for _, k := range g.keys {
		if l.held[k] == g {
			delete(l.held, k)
		}
	}
	delete(l.committing, g)
	delete(l.ranges, g)
	l.mu.Unlock()
	close(g.released)
}

// WaitRead waits until no commit in flight can become visible to a read of
// key at ts.
func (l *Latches) WaitRead(ctx context.Context, key []byte, ts uint64) error {
	for {
		l.mu.Lock()
		g, ok := l.held[string(key)]
		wait := ok && g.mayLandBelow(ts) // its fields are written under mu
		if !wait {
			for r := range l.ranges {
				if r.holds(string(key)) && r.mayLandBelow(ts) {
					g, wait = r, true
					break
				}
			}
		}
		l.mu.Unlock()
		if !wait {
			return nil
		}
		select {
		case <-g.released:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitReadRange is WaitRead for every key in [start, end) (nil bounds are
// open).
func (l *Latches) WaitReadRange(ctx context.Context, start, end []byte, ts uint64) error {
	for {
		var wait *Guard
		l.mu.Lock()
		for g := range l.committing {
			if g.mayLandBelow(ts) && g.overlaps(start, end) {
				wait = g
				break
			}
		}
		l.mu.Unlock()
		if wait == nil {
			return nil
		}
		select {
		case <-wait.released:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// overlaps reports whether any of g's keys lies in [start, end). It
// looks for the keys themselves, not the span from the first to the last:
// a transaction's keys spread over its tables' rows and indexes, and a
// range read between two of them must not wait for its WAL sync.
func (g *Guard) overlaps(start, end []byte) bool {
	if g.isRange {
		return rangesOverlap(g.start, g.end, start, end)
	}
	i, _ := slices.BinarySearch(g.keys, string(start)) // the first key >= start
	return i < len(g.keys) && (end == nil || g.keys[i] < string(end))
}
