package importer

import (
	"context"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// Collector is the kv.Txn that IMPORT INTO's rows are written to by
// INSERT's code (executor.ExecLoad): it reads nothing (the target is
// empty, so nothing is found) and passes every key written to a Sorter.
// Duplicates are found later, when the sorted keys are merged (Job.Commit).
// It serves one statement of one goroutine.
type Collector struct {
	s       *Sorter
	startTS uint64
	n, size int
}

var _ kv.Txn = (*Collector)(nil)

// Get implements kv.Retriever: nothing is found.
func (c *Collector) Get(context.Context, []byte) ([]byte, error) { return nil, kv.ErrNotFound }

// BatchGet implements kv.Retriever: nothing is found.
func (c *Collector) BatchGet(context.Context, [][]byte) (map[string][]byte, error) {
	return map[string][]byte{}, nil
}

// Iter implements kv.Retriever: an empty iterator.
func (c *Collector) Iter([]byte, []byte) (kv.Iterator, error) { return emptyIter{}, nil }

// IterReverse implements kv.Retriever: an empty iterator.
func (c *Collector) IterReverse([]byte, []byte) (kv.Iterator, error) { return emptyIter{}, nil }

// StartTS implements kv.Txn: the timestamp the Job was made with.
func (c *Collector) StartTS() uint64 { return c.startTS }

// Mode implements kv.Txn.
func (c *Collector) Mode() kv.Mode { return kv.Optimistic }

// Set implements kv.Txn: the pair goes to the sorter.
func (c *Collector) Set(key, value []byte) error {
	if err := kv.CheckEntry(key, value, kv.OpPut); err != nil {
		return err
	}
	c.n++
	c.size += len(key) + len(value)
	return c.s.Add(key, value)
}

// Insert implements kv.Txn as Set: uniqueness is checked at the merge.
func (c *Collector) Insert(key, value []byte) error { return c.Set(key, value) }

// Delete implements kv.Txn: an insert into an empty table deletes
// nothing, so a deletion is a bug.
func (c *Collector) Delete([]byte) error { return errDelete }

// Cover implements kv.Txn: nothing to do.
func (c *Collector) Cover([]byte) {}

// Len and Size implement kv.Txn: the keys and bytes held in a write
// buffer, which the statement's memory quota (tidb_mem_quota_query)
// counts. The Collector holds none: what it collected is in the sorter,
// whose memory is bounded apart (Collected says how much went through).
func (c *Collector) Len() int  { return 0 }
func (c *Collector) Size() int { return 0 }

// Collected is the number of keys and of their bytes collected so far.
func (c *Collector) Collected() (keys, bytes int) { return c.n, c.size }

// Savepoint implements kv.Txn. A statement's writes cannot be undone one
// by one: a failed import fails whole, so nothing needs to be.
func (c *Collector) Savepoint() int { return 0 }

// RollbackTo implements kv.Txn: see Savepoint.
func (c *Collector) RollbackTo(int) {}

// ReleaseSavepoint implements kv.Txn.
func (c *Collector) ReleaseSavepoint(int) {}

// LockKeys implements kv.Txn: no one else writes the range meanwhile (the
// store's import latches it), so there is nothing to lock.
func (c *Collector) LockKeys(context.Context, uint64, time.Duration, ...[]byte) error { return nil }

// ReaderAt implements kv.Txn.
func (c *Collector) ReaderAt(uint64) kv.Retriever { return c }

// Commit implements kv.Txn: Job.Commit commits.
func (c *Collector) Commit(context.Context) error { return errCommit }

// Rollback implements kv.Txn.
func (c *Collector) Rollback() error { return nil }

type emptyIter struct{}

func (emptyIter) Valid() bool   { return false }
func (emptyIter) Key() []byte   { return nil }
func (emptyIter) Value() []byte { return nil }
func (emptyIter) Next() error   { return nil }
func (emptyIter) Close()        {}
