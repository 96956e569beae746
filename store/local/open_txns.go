package local

import (
	"math/rand/v2"
	"sync"
)

// openTxns is the set of the store's open transactions, which hold the GC
// safe point below their start ts (Store.safePoint). A transaction
// registers in one of openShards shards, picked at random, under that
// shard's own lock, and unregisters from it when it ends; the safe point
// reads every shard. So concurrent Begins and ends rarely meet on a lock,
// and never on one that a reader of all shards holds for long.
//
// Each registered transaction carries a hold: a timestamp at or below its
// start ts - 1, fixed before it registers. The safe point is at or below
// every hold it sees (minHold). What makes a shard-by-shard read enough is
// the order Begin keeps (see Store.Begin): a transaction that takes its
// start ts from the oracle registers first, with the oracle's last ts as
// its hold, and asks for its ts after. A safe point takes its own ts from
// the oracle ("now") before it reads the shards, so a transaction the read
// misses registered after that read, asked for its ts after now, and got
// one above now, which is above the safe point. A transaction with a
// start ts of its own (a stale read) cannot be ordered by the oracle; it
// registers under Store.staleMu, which a recording safe point holds
// exclusively (Store.safePoint).
type openTxns struct {
	shards [openShards]openShard
}

const openShards = 32

// openShard is one shard: a doubly linked list through its transactions'
// prev and next, under mu. It fills a cache line of its own, so that
// shards used by different cores do not share one.
type openShard struct {
	mu   sync.Mutex
	head *txn
	_    [64 - 16]byte
}

// add registers t, whose hold must be set.
func (o *openTxns) add(t *txn) {
	sh := &o.shards[rand.Uint32()%openShards]
	sh.mu.Lock()
	t.shard = sh
	t.next = sh.head
	if sh.head != nil {
		sh.head.prev = t
	}
	sh.head = t
	sh.mu.Unlock()
}

// remove unregisters t; it does nothing if t is not registered.
func (o *openTxns) remove(t *txn) {
	sh := t.shard
	if sh == nil {
		return
	}
	sh.mu.Lock()
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		sh.head = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	}
	t.prev, t.next, t.shard = nil, nil, nil
	sh.mu.Unlock()
}

// minHold returns the smallest hold among the registered transactions
// that it sees, or limit if it is smaller. It locks one shard at a time.
func (o *openTxns) minHold(limit uint64) uint64 {
	for i := range o.shards {
		sh := &o.shards[i]
		sh.mu.Lock()
		for t := sh.head; t != nil; t = t.next {
			limit = min(limit, t.hold)
		}
		sh.mu.Unlock()
	}
	return limit
}
