package mvcc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"

	"github.com/basalt-db/basalt/kv"
)

// TestWriteFilterSkipsEngine checks that with the write filter a commit
// and a pessimistic lock on keys nobody wrote since their transaction
// started read no CFWrite record, and that they still do where the filter
// cannot tell: below its floor, on a key written since, and for an
// insert, which must know whether the key exists.
func TestWriteFilterSkipsEngine(t *testing.T) {
	ctx := context.Background()
	for _, filter := range []bool{false, true} {
		t.Run(fmt.Sprintf("filter=%t", filter), func(t *testing.T) {
			eng := &cfWriteReads{Engine: NewMemEngine()}
			opts := Options{Sync: true, OnePhaseOnly: true}
			if filter {
				opts.WriteFilterFloor = 100
			}
			s, err := NewStore(eng, &manualClock{}, opts)
			if err != nil {
				t.Fatal(err)
			}
			commit := func(start, commit uint64, op kv.Op, keys ...string) error {
				req := &PrewriteRequest{StartTS: start, LockTTL: 3000}
				for _, k := range keys {
					req.Mutations = append(req.Mutations, kv.Mutation{Op: op, Key: []byte(k), Value: []byte("v")})
				}
				req.Primary = req.Mutations[0].Key
				_, err := s.OnePhaseCommit(ctx, req, func() (uint64, error) { return commit, nil }, 0)
				return err
			}
			reads := func(what string, want int, f func() error) {
				t.Helper()
				if !filter {
					want = max(want, 1) // every check reads without the filter
				}
				eng.expect(t, what, want, f)
			}
			reads("commit of an unwritten key", 0, func() error { return commit(110, 111, kv.OpPut, "a") })
			reads("commit of two unwritten keys", 0, func() error { return commit(112, 113, kv.OpPut, "b", "c") })
			reads("commit of a key written since the start", 1, func() error {
				err := commit(110, 114, kv.OpPut, "a")
				if !errors.Is(err, kv.ErrWriteConflict) {
					return fmt.Errorf("want a write conflict, got %v", err)
				}
				return nil
			})
			reads("commit below the floor", 1, func() error { return commit(90, 115, kv.OpPut, "d") })
			reads("insert", 1, func() error { return commit(116, 117, kv.OpInsert, "e") })
			reads("pessimistic lock", 0, func() error {
				return s.PessimisticLock(ctx, &PessimisticLockRequest{Keys: [][]byte{[]byte("f"), []byte("g")},
					Primary: []byte("f"), StartTS: 118, ForUpdateTS: 118, LockTTL: 3000}, 0)
			})
		})
	}
}

// cfWriteReads counts the CFWrite iterators and gets an engine serves.
type cfWriteReads struct {
	Engine
	n int
}

func (e *cfWriteReads) NewIter(cf CF, lower, upper []byte) (EngineIter, error) {
	if cf == CFWrite {
		e.n++
	}
	return e.Engine.NewIter(cf, lower, upper)
}

// expect runs f and checks that it read want CFWrite records.
func (e *cfWriteReads) expect(t *testing.T, what string, want int, f func() error) {
	t.Helper()
	e.n = 0
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if e.n != want {
		t.Errorf("%s: %d CFWrite reads, want %d", what, e.n, want)
	}
}

func (e *cfWriteReads) Get(cf CF, key []byte) ([]byte, error) {
	if cf == CFWrite {
		e.n++
	}
	return e.Engine.Get(cf, key)
}

// TestWriteFilterPrewrite checks the write filter of a storage node's
// region (Options.WriteTable, WriteFloor): a 1PC prewrite of a pessimistic
// transaction reads no CFWrite record for a key nobody wrote since it
// started, neither the conflict check of the key it did not lock nor the
// rollback lookup at its commit ts of the key it did, while the floor its
// owner set is below the start; with the floor at math.MaxUint64 it reads
// them. Stores sharing the table see each other's writes as possible
// conflicts.
func TestWriteFilterPrewrite(t *testing.T) {
	ctx := context.Background()
	table := NewWriteTable()
	var floor atomic.Uint64
	floor.Store(math.MaxUint64)
	eng := &cfWriteReads{Engine: NewMemEngine()}
	s, err := NewStore(eng, &manualClock{}, Options{WriteTable: table, WriteFloor: &floor})
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewStore(NewMemEngine(), &manualClock{}, Options{WriteTable: table, WriteFloor: &floor})
	if err != nil {
		t.Fatal(err)
	}
	// txn locks row key r, then commits it in one phase with index key i.
	txn := func(s *Store, start uint64, r, i string) error {
		err := s.PessimisticLock(ctx, &PessimisticLockRequest{Keys: [][]byte{[]byte(r)}, Primary: []byte(r),
			StartTS: start, ForUpdateTS: start, LockTTL: 3000}, 0)
		if err != nil {
			return err
		}
		req := &PrewriteRequest{StartTS: start, ForUpdateTS: start, LockTTL: 3000, TryOnePC: true, Primary: []byte(r),
			Mutations: []kv.Mutation{
				{Op: kv.OpPut, Key: []byte(r), Value: []byte("v")},
				{Op: kv.OpPut, Key: []byte(i), Value: []byte("v")},
			},
			Pessimistic: []bool{true, false}}
		res, err := s.Prewrite(ctx, req, func() uint64 { return start })
		if err == nil && res.OnePCCommitTS == 0 {
			err = errors.New("not committed in one phase")
		}
		return err
	}
	reads := func(what string, want int, f func() error) {
		t.Helper()
		eng.expect(t, what, want, f)
	}
	// The lock's check, the index key's check, the row key's rollback lookup.
	reads("floor off", 3, func() error { return txn(s, 110, "r1", "i1") })
	floor.Store(100)
	reads("floor below the start", 0, func() error { return txn(s, 120, "r2", "i2") })
	if err := txn(other, 130, "r3", "i3"); err != nil {
		t.Fatal(err)
	}
	reads("keys another store of the table wrote since the start", 3, func() error { return txn(s, 125, "r3", "i3") })
	floor.Store(math.MaxUint64)
	reads("floor off again", 3, func() error { return txn(s, 140, "r4", "i4") })
}
