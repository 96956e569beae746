package kv

import "context"

// BufferedReader reads a transaction's own writes (Buf) over a snapshot
// (Snap): a buffered key hides the snapshot's, a buffered deletion hides
// the key, and a key buffered only as locked reads through. Every store's
// transactions read this way.
type BufferedReader struct {
	Buf  *MemBuffer
	Snap Retriever
}

func (r BufferedReader) Get(ctx context.Context, key []byte) ([]byte, error) {
	if v, op, ok := r.Buf.Get(key); ok {
		if op == OpDelete {
			return nil, ErrNotFound
		}
		if op != OpLock {
			return v, nil
		}
	}
	return r.Snap.Get(ctx, key)
}

func (r BufferedReader) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	out := make(map[string][]byte, len(keys))
	var rest [][]byte
	for _, k := range keys {
		v, op, ok := r.Buf.Get(k)
		switch {
		case !ok || op == OpLock:
			rest = append(rest, k)
		case op != OpDelete:
			out[string(k)] = v
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	got, err := r.Snap.BatchGet(ctx, rest)
	if err != nil {
		return nil, err
	}
	for k, v := range got {
		out[k] = v
	}
	return out, nil
}

func (r BufferedReader) Iter(start, end []byte) (Iterator, error) {
	return r.iter(start, end, false)
}

func (r BufferedReader) IterReverse(start, end []byte) (Iterator, error) {
	return r.iter(start, end, true)
}

func (r BufferedReader) iter(start, end []byte, reverse bool) (Iterator, error) {
	iter := r.Snap.Iter
	if reverse {
		iter = r.Snap.IterReverse
	}
	snapIt, err := iter(start, end)
	if err != nil {
		return nil, err
	}
	if r.Buf.Len() == 0 {
		return snapIt, nil
	}
	return NewUnionIter(snapIt, r.Buf.Iter(start, end, reverse), reverse)
}
