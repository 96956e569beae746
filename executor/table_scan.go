package executor

import (
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// tableScanExec reads rows in handle order over key ranges.
type tableScanExec struct {
	p    *planner.TableScan
	dec  *table.Decoder
	scan rangeScan
	row  []types.Datum
}

func (e *tableScanExec) Open(ctx *Ctx) error {
	t := e.p.Table
	e.dec = newDecoder(ctx, &e.p.TableSource)
	e.row = make([]types.Datum, len(t.Columns)+1)
	ranges := []keyRange{{start: tablecodec.RowPrefix(t.ID), end: kv.PrefixEnd(tablecodec.RowPrefix(t.ID))}}
	if e.p.Ranges != nil {
		ivs, err := evalRanges(ctx, e.p.Ranges, types.CollationGeneralCI)
		if err != nil {
			return err
		}
		ranges = handleKeyRanges(t.ID, ivs)
	} else if e.p.KeyRanges != nil {
		var err error
		if ranges, err = compositeKeyRanges(ctx, t, t.PrimaryKey(), e.p.KeyRanges); err != nil {
			return err
		}
	}
	e.scan.start(ranges, e.p.Desc)
	return nil
}

func (e *tableScanExec) Next(ctx *Ctx) ([]types.Datum, error) {
	ok, err := e.scan.valid(ctx)
	if err != nil || !ok {
		return nil, err
	}
	if err := ctx.Context.Err(); err != nil {
		return nil, err
	}
	it := e.scan.it
	ctx.KeysRead++
	_, h, err := tablecodec.DecodeRowKey(it.Key(), e.p.Table.CommonHandle)
	if err != nil {
		return nil, err
	}
	if err := e.dec.Decode(h, it.Value(), e.row); err != nil {
		return nil, err
	}
	if err := it.Next(); err != nil {
		return nil, err
	}
	if e.p.Lock {
		if err := lockRow(ctx, e.p.Table, h); err != nil {
			return nil, err
		}
	}
	return e.row, nil
}

func (e *tableScanExec) Close() error {
	e.scan.close()
	return nil
}
