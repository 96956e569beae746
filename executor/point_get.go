package executor

import (
	"errors"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// pointGetExec reads at most one row.
type pointGetExec struct {
	p    *planner.PointGet
	dec  *table.Decoder
	row  []types.Datum
	done bool
}

func (e *pointGetExec) Open(ctx *Ctx) error {
	e.dec = newDecoder(ctx, &e.p.TableSource)
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
			ctx.KeysRead++
			if h, err = tablecodec.DecodeHandle(hv, t.CommonHandle); err != nil {
				return nil, err
			}
		}
	}
	return readRow(ctx, t, e.dec, h, e.row, e.p.Lock)
}

func (e *pointGetExec) Close() error { return nil }
