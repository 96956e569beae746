package executor

import (
	"errors"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// This file holds what the operators that read a table (point_get.go,
// batch_point_get.go, table_scan.go, index_scan.go) share: the rows they
// return are decoded by a table.Decoder of the columns the plan reads
// (planner.TableSource.Cols), in the session's time zone; locking reads
// lock before they read.

// newDecoder returns the decoder of src's rows: the columns the plan reads,
// TIMESTAMP values in the session's zone. It is made once per plan and
// zone, and kept in the plan (src.Exec) for the next executions of a
// cached plan.
func newDecoder(ctx *Ctx, src *planner.TableSource) *table.Decoder {
	zone := table.StorageZone(ctx.Eval, src.Table)
	if c, ok := src.Exec.Load().(*planDecoder); ok && c.zone == zone {
		return c.dec
	}
	d := table.NewDecoder(src.Table, src.Cols, zone)
	src.Exec.Store(&planDecoder{zone: zone, dec: d})
	return d
}

// planDecoder is a table source's decoder kept in its plan.
type planDecoder struct {
	zone *time.Location
	dec  *table.Decoder
}

// lockRead locks the row keys a locking read (SELECT ... FOR UPDATE, or
// the read of an UPDATE or DELETE) reads, before reading them. A
// pessimistic transaction takes the locks now. An optimistic one only
// records them for its commit to check (SELECT ... FOR UPDATE); an
// optimistic write checks the rows it writes anyway, so its reads lock
// nothing.
func lockRead(ctx *Ctx, keys ...[]byte) error {
	if ctx.Txn == nil || len(keys) == 0 || (ctx.Txn.Mode() == kv.Optimistic && !ctx.SelectForUpdate) {
		return nil
	}
	return ctx.Txn.LockKeys(ctx.Context, ctx.ForUpdateTS, ctx.LockWait, keys...)
}

func lockRow(ctx *Ctx, t *catalog.TableInfo, h tablecodec.Handle) error {
	return lockRead(ctx, tablecodec.RowKey(t.ID, h))
}

// readRow reads the row of h into row, locking it first if asked.
func readRow(ctx *Ctx, t *catalog.TableInfo, dec *table.Decoder, h tablecodec.Handle, row []types.Datum, lock bool) ([]types.Datum, error) {
	key := tablecodec.RowKey(t.ID, h)
	if lock {
		if err := lockRead(ctx, key); err != nil {
			return nil, err
		}
	}
	val, err := ctx.Reader.Get(ctx.Context, key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ctx.KeysRead++
	if err := dec.Decode(h, val, row); err != nil {
		return nil, err
	}
	return row, nil
}

// fetchRows locks (if asked) and reads the rows of handles, whose row keys
// are keys, appending those that exist to out in handle order.
func fetchRows(ctx *Ctx, dec *table.Decoder, handles []tablecodec.Handle, keys [][]byte, lock bool, out [][]types.Datum) ([][]types.Datum, error) {
	if lock {
		if err := lockRead(ctx, keys...); err != nil {
			return nil, err
		}
	}
	vals, err := ctx.Reader.BatchGet(ctx.Context, keys)
	if err != nil {
		return nil, err
	}
	ctx.KeysRead += int64(len(vals))
	for i, k := range keys {
		v, ok := vals[string(k)]
		if !ok {
			continue
		}
		row := make([]types.Datum, len(dec.Table().Columns)+1)
		if err := dec.Decode(handles[i], v, row); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

// intHandleValue converts a value compared with an integer key to the
// handle to look up; ok is false when no integer can equal it.
func intHandleValue(v types.Datum) (int64, bool) {
	switch v.Kind() {
	case types.KindInt:
		return v.Int(), true
	case types.KindUint:
		return int64(v.Uint()), true
	}
	f, _ := types.ToFloat(v)
	if f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// evalIndexKey evaluates the values of a unique index's columns, converted
// to the columns' types; ok is false if a value is NULL or cannot equal any
// stored value.
func evalIndexKey(ctx *Ctx, t *catalog.TableInfo, ix *catalog.IndexInfo, exprs []expressionLike) ([]types.Datum, bool, error) {
	vals := make([]types.Datum, len(exprs))
	for i, x := range exprs {
		v, err := x.Eval(ctx.Eval, nil)
		if err != nil {
			return nil, false, err
		}
		if v.IsNull() {
			return nil, false, nil
		}
		col := t.Columns[ix.Columns[i].Offset]
		cv, err := table.Convert(nil, v, col)
		if err != nil {
			return nil, false, nil
		}
		if types.Compare(cv, v) != 0 {
			return nil, false, nil
		}
		vals[i] = table.StoredKeyValue(ctx.Eval, t, col, cv)
	}
	return vals, true, nil
}

func encodeDatums(vals []types.Datum) ([]byte, error) {
	var b []byte
	var err error
	for _, v := range vals {
		if b, err = tablecodec.EncodeKeyDatum(b, v); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// rangeScan iterates over key ranges one after another: in order, or for
// a descending scan each range backwards, the last range first.
type rangeScan struct {
	ranges []keyRange
	desc   bool
	it     kv.Iterator // over the current range, or nil
}

func (s *rangeScan) start(ranges []keyRange, desc bool) {
	s.close()
	if desc {
		for i, j := 0, len(ranges)-1; i < j; i, j = i+1, j-1 {
			ranges[i], ranges[j] = ranges[j], ranges[i]
		}
	}
	s.ranges, s.desc = ranges, desc
}

// valid reports whether an entry is left, at s.it, opening the next
// ranges as the current one ends.
func (s *rangeScan) valid(ctx *Ctx) (bool, error) {
	for {
		if s.it == nil {
			if len(s.ranges) == 0 {
				return false, nil
			}
			r := s.ranges[0]
			s.ranges = s.ranges[1:]
			var err error
			if s.desc {
				s.it, err = ctx.Reader.IterReverse(r.start, r.end)
			} else {
				s.it, err = ctx.Reader.Iter(r.start, r.end)
			}
			if err != nil {
				return false, err
			}
		}
		if s.it.Valid() {
			return true, nil
		}
		s.it.Close()
		s.it = nil
	}
}

// done reports whether every range has been read to its end.
func (s *rangeScan) done() bool { return s.it == nil && len(s.ranges) == 0 }

func (s *rangeScan) close() {
	if s.it != nil {
		s.it.Close()
		s.it = nil
	}
}
