package executor

import (
	"errors"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// rowDecoder turns a row key's handle and value into the row layout of a
// table source: the table's columns, then the handle.
type rowDecoder struct {
	t        *catalog.TableInfo
	ids      []int64
	present  []bool
	handleAt int // offset of the integer primary key column, or -1
	defaults []types.Datum
	// typed are the columns whose stored datums need their column's
	// type attached: a collation other than the default, ENUM, SET.
	typed []*catalog.ColumnInfo
	// zone, if not nil, is the session's zone that the TIMESTAMP columns
	// at timestamps are read in (see timezone.go).
	zone       *time.Location
	timestamps []int
}

func newRowDecoder(t *catalog.TableInfo) *rowDecoder {
	d := &rowDecoder{t: t, ids: t.ColumnIDs(), present: make([]bool, len(t.Columns)), handleAt: -1}
	if hc := t.HandleColumn(); hc != nil {
		d.handleAt = hc.Offset
	}
	for _, c := range t.Columns {
		if needsTyping(&c.Type) {
			d.typed = append(d.typed, c)
		}
	}
	d.defaults = originDefaults(t.Columns)
	return d
}

// originDefaults are the values columns have in rows written before the
// columns were added (NULL for columns the table was created with).
func originDefaults(cols []*catalog.ColumnInfo) []types.Datum {
	out := make([]types.Datum, len(cols))
	for i, c := range cols {
		if c.OriginDefault != nil {
			if v, err := ConvertForColumn(nil, types.NewString(*c.OriginDefault), c); err == nil {
				out[i] = v
			}
		}
	}
	return out
}

// decode fills row (len(columns)+1) from a handle and a row value.
func (d *rowDecoder) decode(h tablecodec.Handle, value []byte, row []types.Datum) error {
	cols := row[:len(d.t.Columns)]
	if err := tablecodec.DecodeRow(value, d.ids, cols, d.present); err != nil {
		return err
	}
	for _, c := range d.typed {
		cols[c.Offset] = typeStored(cols[c.Offset], c)
	}
	for _, off := range d.timestamps {
		cols[off] = timestampFromUTC(cols[off], d.zone)
	}
	for i, ok := range d.present {
		if !ok && i != d.handleAt && !d.defaults[i].IsNull() {
			cols[i] = d.defaults[i]
		}
	}
	if d.handleAt >= 0 {
		if d.t.Columns[d.handleAt].Type.Unsigned() {
			cols[d.handleAt] = types.NewUint(uint64(h.Int))
		} else {
			cols[d.handleAt] = types.NewInt(h.Int)
		}
	}
	row[len(cols)] = handleDatum(h)
	return nil
}

func handleDatum(h tablecodec.Handle) types.Datum {
	if h.Common != nil {
		return types.NewBytes(h.Common)
	}
	return types.NewInt(h.Int)
}

// HandleOf returns the handle stored in a table source row.
func HandleOf(t *catalog.TableInfo, row []types.Datum) tablecodec.Handle {
	d := row[len(t.Columns)]
	if t.CommonHandle {
		return tablecodec.Handle{Common: d.Bytes()}
	}
	return tablecodec.IntHandle(d.Int())
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

// pointGetExec reads at most one row.
type pointGetExec struct {
	p    *planner.PointGet
	dec  *rowDecoder
	row  []types.Datum
	done bool
}

func (e *pointGetExec) Open(ctx *Ctx) error {
	e.dec = newSessionRowDecoder(ctx, e.p.Table)
	e.row = make([]types.Datum, len(e.p.Table.Columns)+1)
	e.done = false
	return nil
}

func (e *pointGetExec) Next(ctx *Ctx) ([]types.Datum, error) {
	if e.done {
		return nil, nil
	}
	e.done = true
	t := e.p.Table
	var h tablecodec.Handle
	if e.p.Index == nil {
		v, err := e.p.Handle.Eval(ctx.Eval, nil)
		if err != nil || v.IsNull() {
			return nil, err
		}
		hv, ok := intHandleValue(v)
		if !ok {
			return nil, nil
		}
		h = tablecodec.IntHandle(hv)
	} else {
		keyExprs := make([]expressionLike, len(e.p.Key))
		for i, k := range e.p.Key {
			keyExprs[i] = k
		}
		vals, ok, err := evalIndexKey(ctx, t, e.p.Index, keyExprs)
		if err != nil || !ok {
			return nil, err
		}
		if e.p.Index.Primary && t.CommonHandle {
			enc, err := encodeDatums(vals)
			if err != nil {
				return nil, err
			}
			h = tablecodec.Handle{Common: enc}
		} else {
			key, err := tablecodec.IndexKey(t.ID, e.p.Index.ID, vals, tablecodec.Handle{}, false)
			if err != nil {
				return nil, err
			}
			hv, err := ctx.Reader.Get(ctx.Context, key)
			if errors.Is(err, kv.ErrNotFound) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			if h, err = tablecodec.DecodeHandle(hv, t.CommonHandle); err != nil {
				return nil, err
			}
		}
	}
	return readRow(ctx, t, e.dec, h, e.row, e.p.Lock)
}

// readRow reads the row of h into row, locking it first if asked.
func readRow(ctx *Ctx, t *catalog.TableInfo, dec *rowDecoder, h tablecodec.Handle, row []types.Datum, lock bool) ([]types.Datum, error) {
	if lock {
		if err := lockRow(ctx, t, h); err != nil {
			return nil, err
		}
	}
	val, err := ctx.Reader.Get(ctx.Context, tablecodec.RowKey(t.ID, h))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := dec.decode(h, val, row); err != nil {
		return nil, err
	}
	return row, nil
}

func (e *pointGetExec) Close() error { return nil }

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
		cv, err := ConvertForColumn(nil, v, col)
		if err != nil {
			return nil, false, nil
		}
		if types.Compare(cv, v) != 0 {
			return nil, false, nil
		}
		vals[i] = storedKeyValue(ctx, t, col, cv)
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

// batchPointGetExec reads the rows of a list of keys, in list order,
// without repeats.
type batchPointGetExec struct {
	p    *planner.BatchPointGet
	dec  *rowDecoder
	rows [][]types.Datum
	pos  int
}

func (e *batchPointGetExec) Open(ctx *Ctx) error {
	t := e.p.Table
	e.dec = newSessionRowDecoder(ctx, t)
	e.rows, e.pos = nil, 0
	seen := map[string]bool{}
	var handles []tablecodec.Handle
	for _, x := range e.p.Handles {
		if e.p.Index == nil {
			v, err := x.Eval(ctx.Eval, nil)
			if err != nil {
				return err
			}
			if v.IsNull() {
				continue
			}
			hv, ok := intHandleValue(v)
			if !ok {
				continue
			}
			handles = append(handles, tablecodec.IntHandle(hv))
			continue
		}
		vals, ok, err := evalIndexKey(ctx, t, e.p.Index, []expressionLike{x})
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		key, err := tablecodec.IndexKey(t.ID, e.p.Index.ID, vals, tablecodec.Handle{}, false)
		if err != nil {
			return err
		}
		hv, err := ctx.Reader.Get(ctx.Context, key)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		h, err := tablecodec.DecodeHandle(hv, t.CommonHandle)
		if err != nil {
			return err
		}
		handles = append(handles, h)
	}
	keys := make([][]byte, 0, len(handles))
	var uniq []tablecodec.Handle
	for _, h := range handles {
		k := tablecodec.RowKey(t.ID, h)
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		keys = append(keys, k)
		uniq = append(uniq, h)
	}
	var err error
	e.rows, err = fetchRows(ctx, e.dec, uniq, keys, e.p.Lock, e.rows[:0])
	return err
}

// fetchRows locks (if asked) and reads the rows of handles, whose row keys
// are keys, appending those that exist to out in handle order.
func fetchRows(ctx *Ctx, dec *rowDecoder, handles []tablecodec.Handle, keys [][]byte, lock bool, out [][]types.Datum) ([][]types.Datum, error) {
	if lock {
		if err := lockRead(ctx, keys...); err != nil {
			return nil, err
		}
	}
	vals, err := ctx.Reader.BatchGet(ctx.Context, keys)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		v, ok := vals[string(k)]
		if !ok {
			continue
		}
		row := make([]types.Datum, len(dec.t.Columns)+1)
		if err := dec.decode(handles[i], v, row); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

func (e *batchPointGetExec) Next(*Ctx) ([]types.Datum, error) {
	if e.pos >= len(e.rows) {
		return nil, nil
	}
	e.pos++
	return e.rows[e.pos-1], nil
}

func (e *batchPointGetExec) Close() error { return nil }

// tableScanExec reads rows in handle order over key ranges.
type tableScanExec struct {
	p      *planner.TableScan
	dec    *rowDecoder
	ranges []keyRange
	it     kv.Iterator
	row    []types.Datum
}

func (e *tableScanExec) Open(ctx *Ctx) error {
	t := e.p.Table
	e.dec = newSessionRowDecoder(ctx, t)
	e.row = make([]types.Datum, len(t.Columns)+1)
	if e.p.Ranges == nil {
		e.ranges = []keyRange{{start: tablecodec.RowPrefix(t.ID), end: kv.PrefixEnd(tablecodec.RowPrefix(t.ID))}}
	} else {
		ivs, err := evalRanges(ctx, e.p.Ranges, types.CollationGeneralCI)
		if err != nil {
			return err
		}
		e.ranges = handleKeyRanges(t.ID, ivs)
	}
	if e.p.Desc {
		for i, j := 0, len(e.ranges)-1; i < j; i, j = i+1, j-1 {
			e.ranges[i], e.ranges[j] = e.ranges[j], e.ranges[i]
		}
	}
	return nil
}

func (e *tableScanExec) Next(ctx *Ctx) ([]types.Datum, error) {
	for {
		if e.it == nil {
			if len(e.ranges) == 0 {
				return nil, nil
			}
			r := e.ranges[0]
			e.ranges = e.ranges[1:]
			var err error
			if e.p.Desc {
				e.it, err = ctx.Reader.IterReverse(r.start, r.end)
			} else {
				e.it, err = ctx.Reader.Iter(r.start, r.end)
			}
			if err != nil {
				return nil, err
			}
		}
		if !e.it.Valid() {
			e.it.Close()
			e.it = nil
			continue
		}
		if err := ctx.Context.Err(); err != nil {
			return nil, err
		}
		_, h, err := tablecodec.DecodeRowKey(e.it.Key(), e.p.Table.CommonHandle)
		if err != nil {
			return nil, err
		}
		if err := e.dec.decode(h, e.it.Value(), e.row); err != nil {
			return nil, err
		}
		if err := e.it.Next(); err != nil {
			return nil, err
		}
		if e.p.Lock {
			if err := lockRow(ctx, e.p.Table, h); err != nil {
				return nil, err
			}
		}
		return e.row, nil
	}
}

func (e *tableScanExec) Close() error {
	if e.it != nil {
		e.it.Close()
		e.it = nil
	}
	return nil
}

// indexScanExec reads index entries over ranges and looks up their rows in
// batches, keeping index order.
type indexScanExec struct {
	p      *planner.IndexScan
	dec    *rowDecoder
	ranges []keyRange
	it     kv.Iterator
	batch  [][]types.Datum
	pos    int
}

const lookupBatch = 256

func (e *indexScanExec) Open(ctx *Ctx) error {
	t := e.p.Table
	e.dec = newSessionRowDecoder(ctx, t)
	e.batch, e.pos = nil, 0
	ivs := []interval{{loInf: true, hiInf: true}}
	if e.p.Ranges != nil {
		var err error
		col := t.Columns[e.p.Index.Columns[0].Offset]
		if ivs, err = evalRanges(ctx, e.p.Ranges, col.Type.Collation()); err != nil {
			return err
		}
	}
	var err error
	if e.ranges, err = indexKeyRanges(ctx, t, e.p.Index, ivs); err != nil {
		return err
	}
	if e.p.Desc {
		for i, j := 0, len(e.ranges)-1; i < j; i, j = i+1, j-1 {
			e.ranges[i], e.ranges[j] = e.ranges[j], e.ranges[i]
		}
	}
	return nil
}

// fill reads up to lookupBatch entries and their rows.
func (e *indexScanExec) fill(ctx *Ctx) error {
	t := e.p.Table
	var handles []tablecodec.Handle
	var keys [][]byte
	for len(handles) < lookupBatch {
		if e.it == nil {
			if len(e.ranges) == 0 {
				break
			}
			r := e.ranges[0]
			e.ranges = e.ranges[1:]
			var err error
			if e.p.Desc {
				e.it, err = ctx.Reader.IterReverse(r.start, r.end)
			} else {
				e.it, err = ctx.Reader.Iter(r.start, r.end)
			}
			if err != nil {
				return err
			}
		}
		if !e.it.Valid() {
			e.it.Close()
			e.it = nil
			continue
		}
		h, err := indexEntryHandle(t, e.p.Index, e.it.Key(), e.it.Value())
		if err != nil {
			return err
		}
		handles = append(handles, h)
		keys = append(keys, tablecodec.RowKey(t.ID, h))
		if err := e.it.Next(); err != nil {
			return err
		}
	}
	e.pos = 0
	var err error
	e.batch, err = fetchRows(ctx, e.dec, handles, keys, e.p.Lock, e.batch[:0])
	return err
}

// indexEntryHandle returns the handle an index entry points to: its value
// for a unique entry without NULLs, else the key's suffix.
func indexEntryHandle(t *catalog.TableInfo, ix *catalog.IndexInfo, key, value []byte) (tablecodec.Handle, error) {
	if len(value) > 0 {
		return tablecodec.DecodeHandle(value, t.CommonHandle)
	}
	_, h, has, err := tablecodec.DecodeIndexKey(key, len(ix.Columns), t.CommonHandle)
	if err == nil && !has {
		err = tablecodec.ErrBadKey
	}
	return h, err
}

func (e *indexScanExec) Next(ctx *Ctx) ([]types.Datum, error) {
	for e.pos >= len(e.batch) {
		if e.it == nil && len(e.ranges) == 0 {
			return nil, nil
		}
		if err := ctx.Context.Err(); err != nil {
			return nil, err
		}
		if err := e.fill(ctx); err != nil {
			return nil, err
		}
	}
	e.pos++
	return e.batch[e.pos-1], nil
}

func (e *indexScanExec) Close() error {
	if e.it != nil {
		e.it.Close()
		e.it = nil
	}
	return nil
}
