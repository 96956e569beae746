// Package mvcc is Percolator's multi-version concurrency control over an
// ordered Engine with three column families (engine.go): a key's commit
// and rollback records in CFWrite (write.go), its lock in CFLock
// (lock.go), and values too long to inline in CFDefault, in the key layout
// drawn in keys.go. Timestamps are package tso's.
//
// The transaction commands (txn.go), the reads (reader.go) and GC (gc.go)
// are pure functions of the engine's state that return their writes in a
// Batch. Store (store.go) serves them as a storage node does: under key
// latches (latch.go), with lock waits and deadlock detection
// (lockwait.go).
//
// This is the shared core: the embedded store (store/local) runs it over
// one Pebble database, and each region of a storage node will run it over
// its replica's. What holds only for the embedded store is an Option of
// Store, off by default: one-phase-only commits, whose reads skip the lock
// column family, and the latest-version cache (latest.go) that relies on
// them.
package mvcc
