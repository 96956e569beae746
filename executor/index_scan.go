package executor

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// indexScanExec reads index entries over ranges and looks up their rows in
// batches, keeping index order.
type indexScanExec struct {
	p     *planner.IndexScan
	dec   *table.Decoder
	scan  rangeScan
	batch [][]types.Datum
	pos   int
	// size is how many entries the next lookup reads: the statement's
	// LIMIT at first, where it has one, doubling up to lookupBatch.
	size int
}

const lookupBatch = 256

func (e *indexScanExec) Open(ctx *Ctx) error {
	t := e.p.Table
	e.dec = newDecoder(ctx, &e.p.TableSource)
	e.batch, e.pos = nil, 0
	krs := e.p.Ranges
	if krs == nil {
		krs = []planner.KeyRange{{Last: []planner.Range{{}}}}
	}
	ranges, err := compositeKeyRanges(ctx, t, e.p.Index, krs)
	if err != nil {
		return err
	}
	e.scan.start(ranges, e.p.Desc)
	e.size = lookupBatch
	if e.p.Limit != nil {
		v, err := e.p.Limit.Eval(ctx.Eval, nil)
		if err != nil {
			return err
		}
		if n, _, _ := types.ToInt(v); !v.IsNull() && n >= 0 && n < lookupBatch {
			e.size = max(int(n), 1)
		}
	}
	return nil
}

// fill reads up to lookupBatch entries and their rows.
func (e *indexScanExec) fill(ctx *Ctx) error {
	t := e.p.Table
	var handles []tablecodec.Handle
	var keys [][]byte
	size := e.size
	e.size = min(e.size*2, lookupBatch)
	for len(handles) < size {
		ok, err := e.scan.valid(ctx)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		h, err := indexEntryHandle(t, e.p.Index, e.scan.it.Key(), e.scan.it.Value())
		if err != nil {
			return err
		}
		handles = append(handles, h)
		keys = append(keys, tablecodec.RowKey(t.ID, h))
		ctx.KeysRead++
		if err := e.scan.it.Next(); err != nil {
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
	if tablecodec.IndexValueHasHandle(value) {
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
		if e.scan.done() {
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
	e.scan.close()
	return nil
}
