package mvcc

import (
	"bytes"
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
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
//
// Concurrency. The key latches are spread over latchShards shards by a
// hash of the key, each with its own mutex, so that commands and reads of
// different keys do not wait for one another (one mutex for all of them
// was most of the server's mutex wait under sysbench's write workloads). A
// command locks the shards of its keys in ascending order, checks and
// takes all its keys, and unlocks them: it takes all or nothing, and two
// commands cannot deadlock on shard mutexes. A guard marked committing is
// also listed in the shard of its first key, for range readers, which look
// at every shard that lists one (nCommitting).
//
// Range latches (AcquireRange) are rare and sit in one set under rangeMu;
// nRanges counts them so that key commands and reads skip the set when it
// is empty. A key command reads nRanges with its shards locked, and a range
// latch, once counted, locks every shard to look for keys held in its
// range: either the command sees the range, or the range's look comes
// after the command's shards were unlocked and sees its keys.
//
// A guard's committing, start ts and floor are atomics: readers read them
// under their key's shard mutex, writers set them without it. Marking a
// guard committing happens before its commit asks the oracle for a ts, and
// a reader asks the oracle for its ts before it looks, so a reader whose
// ts is above the commit's sees the mark.
type Latches struct {
	shards [latchShards]latchShard

	rangeMu sync.RWMutex
	ranges  map[*Guard]struct{} // under rangeMu
	nRanges atomic.Int32        // len(ranges), changed under rangeMu
}

// latchShards is the number of key latch shards.
const latchShards = 64

// latchSeed hashes keys to shards; it is the same for every Latches.
var latchSeed = maphash.MakeSeed()

func latchShardOf(key string) uint8 {
	return uint8(maphash.String(latchSeed, key) % latchShards)
}

// latchShard holds the latches of the keys that hash to it.
type latchShard struct {
	mu   sync.Mutex
	held map[string]*Guard // key -> its holder
	// committing holds the key guards marked committing whose first key
	// hashes here; nCommitting is its size, changed under mu.
	committing  map[*Guard]struct{}
	nCommitting atomic.Int32

	_ [64]byte // keep the shards' mutexes off each other's cache lines
}

// Guard is a command's hold on its keys' latches.
type Guard struct {
	keys    []string // sorted, distinct
	kshard  []uint8  // kshard[i] is the shard of keys[i]
	shards  []uint8  // the shards of keys, ascending, distinct
	startTS atomic.Uint64
	// committing: marked committing (MarkCommitting).
	committing atomic.Bool
	// floor: the commit will land at or above it (0: unknown yet).
	floor    atomic.Uint64
	released chan struct{}
	// isRange: a range latch, over [start, end) rather than keys.
	isRange    bool
	start, end []byte
	// keyArr and shardArr back keys, kshard and shards for commands of
	// up to guardInline keys (a single-row write's row key and index
	// entries), which then allocate the guard, its channel and one string
	// for their keys only.
	keyArr   [guardInline]string
	shardArr [2 * guardInline]uint8
}

// guardInline is how many keys a Guard holds without allocating slices.
const guardInline = 4

// setKeys sets g.keys (sorted, distinct), g.kshard and g.shards. The keys
// are copied into one string that they all share.
func (g *Guard) setKeys(keys [][]byte) {
	n := 0
	for _, k := range keys {
		n += len(k)
	}
	all := make([]byte, 0, n)
	for _, k := range keys {
		all = append(all, k...)
	}
	str := unsafe.String(unsafe.SliceData(all), len(all))
	if len(keys) <= guardInline {
		g.keys = g.keyArr[:len(keys)]
		g.kshard = g.shardArr[:0]
	} else {
		g.keys = make([]string, len(keys))
		g.kshard = make([]uint8, 0, 2*len(keys))
	}
	off := 0
	for i, k := range keys {
		g.keys[i] = str[off : off+len(k)]
		off += len(k)
	}
	slices.Sort(g.keys)
	g.keys = slices.Compact(g.keys)
	g.kshard = g.kshard[:len(g.keys)]
	for i, k := range g.keys {
		g.kshard[i] = latchShardOf(k)
	}
	g.shards = append(g.kshard[len(g.keys):len(g.keys)], g.kshard...)
	slices.Sort(g.shards)
	g.shards = slices.Compact(g.shards)
}

// holds reports whether g latches key.
func (g *Guard) holds(key string) bool {
	return g.isRange && key >= string(g.start) && (g.end == nil || key < string(g.end))
}

// mayLandBelow reports whether g's commit may become visible to a read at
// ts.
func (g *Guard) mayLandBelow(ts uint64) bool {
	return g.committing.Load() && g.startTS.Load() <= ts && g.floor.Load() <= ts
}

// home is the shard that lists g while it is committing.
func (g *Guard) home() uint8 {
	if len(g.shards) == 0 {
		return 0
	}
	return g.kshard[0]
}

// NewLatches returns an empty latch table.
func NewLatches() *Latches {
	l := &Latches{ranges: make(map[*Guard]struct{})}
	for i := range l.shards {
		l.shards[i].held = make(map[string]*Guard)
		l.shards[i].committing = make(map[*Guard]struct{})
	}
	return l
}

// Acquire takes latches on keys for transaction startTS, waiting for other
// holders to release theirs.
func (l *Latches) Acquire(ctx context.Context, startTS uint64, keys [][]byte) (*Guard, error) {
	g := &Guard{released: make(chan struct{})}
	g.startTS.Store(startTS)
	g.setKeys(keys)
	for {
		for _, i := range g.shards {
			l.shards[i].mu.Lock()
		}
		var busy *Guard
		for i, k := range g.keys {
			if h, ok := l.shards[g.kshard[i]].held[k]; ok {
				busy = h
				break
			}
		}
		if busy == nil && l.nRanges.Load() > 0 {
			busy = l.rangeHolding(g.keys)
		}
		if busy == nil {
			for i, k := range g.keys {
				l.shards[g.kshard[i]].held[k] = g
			}
		}
		for _, i := range g.shards {
			l.shards[i].mu.Unlock()
		}
		if busy == nil {
			return g, nil
		}
		select {
		case <-busy.released:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// rangeHolding returns a range latch that holds one of keys, or nil.
func (l *Latches) rangeHolding(keys []string) *Guard {
	l.rangeMu.RLock()
	defer l.rangeMu.RUnlock()
	for r := range l.ranges {
		for _, k := range keys {
			if r.holds(k) {
				return r
			}
		}
	}
	return nil
}

// AcquireRange takes a latch on every key in [start, end) (a nil end is
// open): it waits for other range latches that overlap it, then keeps
// new writers of the range out and waits for those that hold latches in
// it to release them. Its start ts is set later (setStart), before it is
// marked committing.
func (l *Latches) AcquireRange(ctx context.Context, start, end []byte) (*Guard, error) {
	g := &Guard{isRange: true, start: start, end: end, released: make(chan struct{})}
	for registered := false; ; {
		var busy *Guard
		if !registered {
			l.rangeMu.Lock()
			for r := range l.ranges {
				if rangesOverlap(r.start, r.end, start, end) {
					busy = r
					break
				}
			}
			if busy == nil {
				l.ranges[g] = struct{}{}
				l.nRanges.Add(1)
				registered = true
			}
			l.rangeMu.Unlock()
		}
		if registered {
			busy = l.keyHeldIn(g)
		}
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

// keyHeldIn returns a key command's guard holding a key in range latch
// r's range, or nil.
func (l *Latches) keyHeldIn(r *Guard) *Guard {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for k, h := range sh.held {
			if r.holds(k) {
				sh.mu.Unlock()
				return h
			}
		}
		sh.mu.Unlock()
	}
	return nil
}

// setStart sets the start ts of a range latch not yet committing.
func (l *Latches) setStart(g *Guard, ts uint64) {
	g.startTS.Store(ts)
}

func rangesOverlap(s1, e1, s2, e2 []byte) bool {
	return (e1 == nil || bytes.Compare(s2, e1) < 0) && (e2 == nil || bytes.Compare(s1, e2) < 0)
}

// MarkCommitting makes readers of g's keys at or above g's start ts wait
// for g's release. Call it before taking the commit timestamp.
func (l *Latches) MarkCommitting(g *Guard) {
	g.committing.Store(true)
	if g.isRange {
		return // range readers look at every range latch
	}
	sh := &l.shards[g.home()]
	sh.mu.Lock()
	sh.committing[g] = struct{}{}
	sh.nCommitting.Add(1)
	sh.mu.Unlock()
}

// SetCommitFloor says that g's commit, once marked committing, will land
// at or above ts: readers below ts need not wait for it.
func (l *Latches) SetCommitFloor(g *Guard, ts uint64) {
	g.floor.Store(ts)
}

// Release releases g's latches and wakes whoever waits for them.
func (l *Latches) Release(g *Guard) {
	if g.isRange {
		l.rangeMu.Lock()
		if _, ok := l.ranges[g]; ok {
			delete(l.ranges, g)
			l.nRanges.Add(-1)
		}
		l.rangeMu.Unlock()
		close(g.released)
		return
	}
	home := g.home()
	for _, i := range g.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for j, k := range g.keys {
			if g.kshard[j] == i && sh.held[k] == g {
				delete(sh.held, k)
			}
		}
		if i == home && g.committing.Load() {
			sh.unlist(g)
		}
		sh.mu.Unlock()
	}
	if len(g.shards) == 0 && g.committing.Load() {
		// No keys: home is shard 0, which the loop did not visit.
		sh := &l.shards[home]
		sh.mu.Lock()
		sh.unlist(g)
		sh.mu.Unlock()
	}
	close(g.released)
}

// unlist removes g from the shard's committing guards, if it is listed
// there. Call with sh.mu held.
func (sh *latchShard) unlist(g *Guard) {
	if _, ok := sh.committing[g]; ok {
		delete(sh.committing, g)
		sh.nCommitting.Add(-1)
	}
}

// WaitRead waits until no commit in flight can become visible to a read of
// key at ts.
func (l *Latches) WaitRead(ctx context.Context, key []byte, ts uint64) error {
	sh := &l.shards[latchShardOf(string(key))]
	for {
		sh.mu.Lock()
		g, ok := sh.held[string(key)]
		wait := ok && g.mayLandBelow(ts)
		sh.mu.Unlock()
		if !wait && l.nRanges.Load() > 0 {
			g, wait = l.rangeCommitting(ts, key, key, true)
		}
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

// rangeCommitting returns a range latch that may land below ts and covers
// key (point) or overlaps [start, end).
func (l *Latches) rangeCommitting(ts uint64, start, end []byte, point bool) (*Guard, bool) {
	l.rangeMu.RLock()
	defer l.rangeMu.RUnlock()
	for r := range l.ranges {
		if !r.mayLandBelow(ts) {
			continue
		}
		if point && r.holds(string(start)) || !point && r.overlaps(start, end) {
			return r, true
		}
	}
	return nil, false
}

// WaitReadRange is WaitRead for every key in [start, end) (nil bounds are
// open).
func (l *Latches) WaitReadRange(ctx context.Context, start, end []byte, ts uint64) error {
	for {
		wait := l.committingIn(start, end, ts)
		if wait == nil && l.nRanges.Load() > 0 {
			wait, _ = l.rangeCommitting(ts, start, end, false)
		}
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

// committingIn returns a key guard marked committing that may land below
// ts with a key in [start, end), or nil.
func (l *Latches) committingIn(start, end []byte, ts uint64) *Guard {
	for i := range l.shards {
		sh := &l.shards[i]
		if sh.nCommitting.Load() == 0 {
			continue
		}
		sh.mu.Lock()
		for g := range sh.committing {
			if g.mayLandBelow(ts) && g.overlaps(start, end) {
				sh.mu.Unlock()
				return g
			}
		}
		sh.mu.Unlock()
	}
	return nil
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
