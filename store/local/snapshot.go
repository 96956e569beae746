package local

import (
	"context"
	"errors"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
)

// snapshot reads the data committed at or before ts.
type snapshot struct {
	s  *Store
	ts uint64
}

func (sn *snapshot) TS() uint64 { return sn.ts }

func (sn *snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	return sn.s.mvcc.Get(ctx, key, sn.ts)
}

func (sn *snapshot) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	out := make(map[string][]byte, len(keys))
	for _, k := range keys {
		v, err := sn.s.mvcc.Get(ctx, k, sn.ts)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[string(k)] = v
	}
	return out, nil
}

func (sn *snapshot) Iter(start, end []byte) (kv.Iterator, error) {
	return sn.iter(start, end, false)
}

func (sn *snapshot) IterReverse(start, end []byte) (kv.Iterator, error) {
	return sn.iter(start, end, true)
}

func (sn *snapshot) iter(start, end []byte, reverse bool) (kv.Iterator, error) {
	sc, err := sn.s.mvcc.Scan(context.Background(), start, end, sn.ts, reverse)
	if err != nil {
		return nil, err
	}
	if err := sc.Err(); err != nil {
		sc.Close()
		return nil, err
	}
	return scanIter{sc}, nil
}

// scanIter adapts an mvcc.Scanner to kv.Iterator.
type scanIter struct{ *mvcc.Scanner }

func (it scanIter) Close() { it.Scanner.Close() }
