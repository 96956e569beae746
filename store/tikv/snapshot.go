package tikv

import (
	"context"
	"errors"
	"math"

	"github.com/basalt-db/basalt/kv"
	tikverr "github.com/tikv/client-go/v2/error"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"
)

// snapshot is kv.Snapshot over a client-go snapshot.
type snapshot struct {
	snap *txnsnapshot.KVSnapshot
	ts   uint64
	// store, if set, lets Iter read a scan's first batch itself
	// (scan.go).
	store *Storage
}

func (sn *snapshot) TS() uint64 { return sn.ts }

// latestSnapshot is kv.Snapshot at math.MaxUint64 (Storage.LatestSnapshot).
// It is the storage's own pointer, converted: an autocommit point get,
// which makes one per statement, allocates no snapshot for it; a
// client-go snapshot is made only when the read needs one (a get that
// get.go does not answer, a batch get, a scan).
type latestSnapshot Storage

func (l *latestSnapshot) storage() *Storage { return (*Storage)(l) }

// kvSnapshot is a client-go snapshot at math.MaxUint64.
func (l *latestSnapshot) kvSnapshot() *txnsnapshot.KVSnapshot {
	s := l.storage()
	snap := s.store.GetSnapshot(math.MaxUint64)
	snap.SetVars(s.variables())
	return snap
}

func (l *latestSnapshot) wrapped() *snapshot {
	return &snapshot{snap: l.kvSnapshot(), ts: math.MaxUint64}
}

func (l *latestSnapshot) TS() uint64 { return math.MaxUint64 }

func (l *latestSnapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	if v, ok := l.storage().directGet(ctx, key, math.MaxUint64); ok {
		return found(v)
	}
	return get(ctx, l.kvSnapshot(), key)
}

func (l *latestSnapshot) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	return l.wrapped().BatchGet(ctx, keys)
}

func (l *latestSnapshot) Iter(start, end []byte) (kv.Iterator, error) {
	return l.wrapped().Iter(start, end)
}

func (l *latestSnapshot) IterReverse(start, end []byte) (kv.Iterator, error) {
	return l.wrapped().IterReverse(start, end)
}

func (sn *snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	if sn.store != nil {
		if v, ok := sn.store.directGet(ctx, key, sn.ts); ok {
			return found(v)
		}
	}
	return get(ctx, sn.snap, key)
}

// found is a value read by directGet as kv's Get answers it: client-go
// reads an empty value as no value.
func found(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, kv.ErrNotFound
	}
	return v, nil
}

// get is snap's value of key, with client-go's errors mapped to kv's.
func get(ctx context.Context, snap *txnsnapshot.KVSnapshot, key []byte) ([]byte, error) {
	e, err := snap.Get(ctx, key)
	if errors.Is(err, tikverr.ErrNotExist) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return e.Value, nil
}

func (sn *snapshot) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	got, err := sn.snap.BatchGet(ctx, keys)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make(map[string][]byte, len(got))
	for k, e := range got {
		out[k] = e.Value
	}
	return out, nil
}

// Iter walks [start, end) up: the first batch of a bounded range read
// with one RPC here (scan.go), the rest by client-go's scanner.
func (sn *snapshot) Iter(start, end []byte) (kv.Iterator, error) {
	if it, err := sn.firstBatch(start, end); err != nil || it != nil {
		if err != nil {
			return nil, mapErr(err)
		}
		return iterator{it}, nil
	}
	it, err := sn.snap.Iter(start, end)
	if err != nil {
		return nil, mapErr(err)
	}
	return iterator{it}, nil
}

// IterReverse walks [start, end) down: client-go's reverse scan starts
// below its first argument and stops at its lower bound.
func (sn *snapshot) IterReverse(start, end []byte) (kv.Iterator, error) {
	it, err := sn.snap.IterReverse(end, start)
	if err != nil {
		return nil, mapErr(err)
	}
	return iterator{it}, nil
}

// iterator maps a client-go iterator's errors to kv's.
type iterator struct {
	kvIter
}

type kvIter interface {
	Valid() bool
	Key() []byte
	Value() []byte
	Next() error
	Close()
}

func (it iterator) Next() error { return mapErr(it.kvIter.Next()) }
