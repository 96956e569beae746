package table

import (
	"strings"
	"unicode/utf8"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// An index entry's key is the index prefix and the encoded values of the
// index's columns (a column prefix index cuts strings to the prefix). A
// unique index's entry is keyed by the values alone and holds the handle
// as its value; an entry of a non-unique index, or of a unique one with a
// NULL value, which NULLs never collide in, has the handle at the end of
// its key and tablecodec.IndexNoValue as its value.

// indexEntry is one index entry of a row.
type indexEntry struct {
	ix     *catalog.IndexInfo
	key    []byte
	value  []byte
	unique bool // the key identifies the entry without the handle
	// deleteOnly entries belong to an index being created or dropped that
	// writers must not add to: they are deleted with their row, never
	// written or checked for duplicates.
	deleteOnly bool
	vals       []types.Datum
}

// entry computes ix's entry of a row (extended when an index reads hidden
// columns).
func (w *Writer) entry(ix *catalog.IndexInfo, row []types.Datum, h tablecodec.Handle) (indexEntry, error) {
	return w.appendEntry(nil, ix, row, h)
}

// appendEntry is entry with the key appended to dst (a scratch buffer of
// the Writer's, for a key only given to kv.Txn, which copies it), or in
// a new slice when dst is nil.
func (w *Writer) appendEntry(dst []byte, ix *catalog.IndexInfo, row []types.Datum, h tablecodec.Handle) (indexEntry, error) {
	vals := make([]types.Datum, len(ix.Columns))
	hasNull := indexValues(ix, row, vals)
	unique := ix.Unique && !hasNull
	var key []byte
	var err error
	if dst == nil {
		key, err = tablecodec.IndexKey(w.t.ID, ix.ID, vals, h, !unique)
	} else {
		key, err = tablecodec.AppendIndexKey(dst, w.t.ID, ix.ID, vals, h, !unique)
	}
	if err != nil {
		return indexEntry{}, err
	}
	e := indexEntry{ix: ix, key: key, unique: unique, vals: vals, deleteOnly: ix.State == catalog.StateDeleteOnly}
	e.value = indexValue(unique, h)
	return e, nil
}

// indexValues sets vals, of len(ix.Columns), to ix's values of row (a
// column prefix cuts a string), and reports whether one is NULL.
func indexValues(ix *catalog.IndexInfo, row, vals []types.Datum) (hasNull bool) {
	for i, ic := range ix.Columns {
		v := row[ic.Offset]
		if ic.Length > 0 && v.Kind() == types.KindString {
			b := v.Bytes()
			if utf8.RuneCount(b) > ic.Length {
				b = truncateRunes(b, ic.Length)
			}
			v = types.NewCollatedBytes(b, v.Collation())
		}
		hasNull = hasNull || v.IsNull()
		vals[i] = v
	}
	return hasNull
}

// indexValue is the value of an entry: the handle for one keyed by its
// values alone (unique), else tablecodec.IndexNoValue.
func indexValue(unique bool, h tablecodec.Handle) []byte {
	if unique {
		return h.Encoded()
	}
	return tablecodec.IndexNoValue
}

func (w *Writer) entries(row []types.Datum, h tablecodec.Handle) ([]indexEntry, error) {
	row = w.extended(row)
	out := make([]indexEntry, 0, len(w.indexes))
	for _, ix := range w.indexes {
		e, err := w.entry(ix, row, h)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// DupEntry is MySQL's 1062 for a value of an index.
func DupEntry(t *catalog.TableInfo, ix *catalog.IndexInfo, vals []types.Datum) error {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = v.String()
	}
	name := "PRIMARY"
	if ix != nil && !ix.Primary {
		name = ix.Name
	}
	return errno.New(errno.ErDupEntry, "Duplicate entry '%s' for key '%s.%s'", strings.Join(parts, "-"), t.Name, name)
}

// handleVals are the values shown in a duplicate primary key error.
func handleVals(t *catalog.TableInfo, row []types.Datum, h tablecodec.Handle) []types.Datum {
	if pk := t.PrimaryKey(); pk != nil {
		vals := make([]types.Datum, len(pk.Columns))
		for i, c := range pk.Columns {
			vals[i] = row[c.Offset]
		}
		return vals
	}
	return []types.Datum{types.NewInt(h.Int)}
}

// IndexEntry returns the index entry of a stored row, for an index build.
func IndexEntry(t *catalog.TableInfo, ix *catalog.IndexInfo, h tablecodec.Handle, rowValue []byte) (key, value []byte, err error) {
	return NewIndexEncoder(t, ix).Entry(h, rowValue)
}

// IndexEncoder computes one index's entries of stored rows, for an index
// build, reusing its decoder, row and values across rows (and, through
// AppendEntry, the caller's key buffer). It is not safe for concurrent
// use.
type IndexEncoder struct {
	ix   *catalog.IndexInfo
	w    *Writer
	dec  *Decoder
	row  []types.Datum
	vals []types.Datum // the index's values of the last row
	ext  bool          // the index reads hidden columns: decode all, then extend
}

// NewIndexEncoder returns an encoder of ix's entries of t's rows. It
// decodes only the index's columns, unless the index is on a hidden
// column (one being built by MODIFY COLUMN), which is derived from the
// whole row.
func NewIndexEncoder(t *catalog.TableInfo, ix *catalog.IndexInfo) *IndexEncoder {
	e := &IndexEncoder{ix: ix, w: &Writer{t: t}, row: make([]types.Datum, len(t.Columns)+1), vals: make([]types.Datum, len(ix.Columns))}
	cols := make([]int, 0, len(ix.Columns))
	for _, ic := range ix.Columns {
		if ic.Offset >= len(t.Columns) {
			e.ext = true
			break
		}
		cols = append(cols, ic.Offset)
	}
	if e.ext {
		e.w = NewWriter(t)
		e.dec = NewDecoder(t, nil, nil)
	} else {
		e.dec = NewDecoder(t, cols, nil)
	}
	return e
}

// Entry returns the index entry of the row stored as rowValue under
// handle h. The slices returned are the caller's.
func (e *IndexEncoder) Entry(h tablecodec.Handle, rowValue []byte) (key, value []byte, err error) {
	return e.AppendEntry(make([]byte, 0, 32+10*len(e.vals)+len(h.Common)), h, rowValue)
}

// AppendEntry is Entry with the key appended to dst: an index build that
// copies each entry away (into a sorter) passes the last key's buffer,
// [:0], and allocates nothing per row for an index on numbers. The value
// may be shared (tablecodec.IndexNoValue): the caller must not change it.
func (e *IndexEncoder) AppendEntry(dst []byte, h tablecodec.Handle, rowValue []byte) (key, value []byte, err error) {
	if err := e.dec.Decode(h, rowValue, e.row); err != nil {
		return nil, nil, err
	}
	full := e.row[:len(e.w.t.Columns)]
	if e.ext {
		full = e.w.extended(full)
	}
	hasNull := indexValues(e.ix, full, e.vals)
	unique := e.ix.Unique && !hasNull
	if key, err = tablecodec.AppendIndexKey(dst, e.w.t.ID, e.ix.ID, e.vals, h, !unique); err != nil {
		return nil, nil, err
	}
	return key, indexValue(unique, h), nil
}
