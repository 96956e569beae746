package executor

import (
	"encoding/binary"

	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
)

// rowKey encodes a row's values for hashing (DISTINCT, GROUP BY).
func rowKey(buf []byte, vals []types.Datum) []byte {
	for _, v := range vals {
		// Numbers that compare equal must hash equal: normalize exact
		// numbers through their decimal text, and floats too.
		switch v.Kind() {
		case types.KindInt, types.KindUint, types.KindDecimal, types.KindFloat:
			d, _ := types.ToDecimal(v)
			r := new(apd.Decimal)
			r.Reduce(d)
			buf = append(buf, 'n')
			buf = types.AppendDecimal(buf, r) // -0 is 0
			buf = append(buf, 0)
		case types.KindString, types.KindEnum, types.KindSet:
			// ENUM and SET values equal strings by their text.
			buf = appendStringKey(buf, v.Bytes(), v.Collation())
		default:
			buf, _ = tablecodec.EncodeKeyDatum(buf, v)
		}
	}
	return buf
}

// appendStringKey appends a string's hash key: a tag (general_ci's
// weights, one byte or two each, or bytes), the length of its collation's
// sort key in 4 bytes, then the sort key, which types.AppendSortKey (or,
// when every general_ci weight fits in a byte, types.AppendShortSortKey)
// writes straight into buf. Strings that compare equal have equal keys, and
// the length makes a key end where it says, so a row's keys cannot run
// into each other.
func appendStringKey(buf, b []byte, c types.Collation) []byte {
	at := len(buf)
	if c == types.CollationGeneralCI {
		var ok bool
		if buf, ok = types.AppendShortSortKey(append(buf, 'v', 0, 0, 0, 0), b); ok {
			binary.BigEndian.PutUint32(buf[at+1:], uint32(len(buf)-at-5))
			return buf
		}
		buf = buf[:at]
	}
	tag := byte('b')
	if c == types.CollationGeneralCI {
		tag = 'w'
	}
	buf = append(buf, tag, 0, 0, 0, 0)
	buf = types.AppendSortKey(buf, b, c)
	binary.BigEndian.PutUint32(buf[at+1:], uint32(len(buf)-at-5))
	return buf
}

// distinctExec passes on the first row of each set of equal rows.
type distinctExec struct {
	child Executor
	seen  map[string]struct{}
	buf   []byte
	mem   memAcc
}

func (e *distinctExec) Open(ctx *Ctx) error {
	e.seen = map[string]struct{}{}
	e.mem.release()
	e.mem.t = ctx.Mem
	return e.child.Open(ctx)
}

func (e *distinctExec) Close() error {
	e.mem.release()
	return e.child.Close()
}

func (e *distinctExec) Next(ctx *Ctx) ([]types.Datum, error) {
	for {
		row, err := e.child.Next(ctx)
		if row == nil || err != nil {
			return nil, err
		}
		e.buf = rowKey(e.buf[:0], row)
		if _, ok := e.seen[string(e.buf)]; ok {
			continue
		}
		e.seen[string(e.buf)] = struct{}{}
		if err := e.mem.add(int64(len(e.buf)) + mapEntrySize); err != nil {
			return nil, err
		}
		return row, nil
	}
}
