package executor

import (
	"errors"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
)

// batchPointGetExec reads the rows of a list of keys, in list order,
// without repeats.
type batchPointGetExec struct {
	p        *planner.BatchPointGet
	dec      *table.Decoder
	rowsExec // the rows, computed at Open
}

func (e *batchPointGetExec) Open(ctx *Ctx) error {
	t := e.p.Table
	e.dec = newDecoder(ctx, &e.p.TableSource)
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
		ctx.KeysRead++
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

func (e *batchPointGetExec) Close() error { return nil }
