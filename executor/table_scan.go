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
	p      *planner.TableScan
	dec    *table.Decoder
	ranges []keyRange
	it     kv.Iterator
	row    []types.Datum
}

func (e *tableScanExec) Open(ctx *Ctx) error {
	t := e.p.Table
	e.dec = newDecoder(ctx, &e.p.TableSource)
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
		if err := e.dec.Decode(h, e.it.Value(), e.row); err != nil {
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
