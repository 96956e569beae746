package executor

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// writer turns row changes of one table into KV writes: the row and one
// entry per writable index. Rows are in table column order (the handle is
// passed separately).
//
// While an online ADD or DROP COLUMN runs, the table has write-only hidden
// columns (catalog.TableInfo.Hidden) that readers do not see but writers
// keep: a new row gets their default, an updated row keeps the values it
// had (read back from the stored row, so that writers under the next
// schema version, which see the column, lose nothing).
type writer struct {
	t       *catalog.TableInfo
	ids     []int64
	skip    int                  // column not stored in the value (the integer handle), or -1
	indexes []*catalog.IndexInfo // catalog.TableInfo.MaintainedIndexes
	// nullMark lists the offsets of columns whose NULL must be stored
	// explicitly: columns added later with a default, which a missing
	// value would read as.
	nullMark []int
	hidden   []*catalog.ColumnInfo // write-only hidden columns
	// hiddenIDs and hiddenOrigin describe hidden.
	hiddenIDs    []int64
	hiddenOrigin []types.Datum
}

func newWriter(t *catalog.TableInfo) *writer {
	w := &writer{t: t, ids: t.ColumnIDs(), skip: -1, indexes: t.MaintainedIndexes()}
	if hc := t.HandleColumn(); hc != nil {
		w.skip = hc.Offset
	}
	for i, c := range t.Columns {
		if c.OriginDefault != nil {
			w.nullMark = append(w.nullMark, i)
		}
	}
	if w.hidden = t.WriteOnlyColumns(); len(w.hidden) > 0 {
		for _, c := range w.hidden {
			w.hiddenIDs = append(w.hiddenIDs, c.ID)
		}
		w.hiddenOrigin = originDefaults(w.hidden)
	}
	return w
}

// rowValue encodes a row, with the values of the hidden columns (nil when
// there are none).
func (w *writer) rowValue(row, hidden []types.Datum) []byte {
	var v []byte
	if w.skip < 0 {
		v = tablecodec.EncodeRow(nil, w.ids, row)
	} else {
		saved := row[w.skip]
		row[w.skip] = types.Null
		v = tablecodec.EncodeRow(nil, w.ids, row)
		row[w.skip] = saved
	}
	for _, i := range w.nullMark {
		if row[i].IsNull() {
			v = tablecodec.AppendNull(v, w.ids[i])
		}
	}
	if len(hidden) > 0 {
		// EncodeRow starts with the version byte; the rest appends.
		v = append(v, tablecodec.EncodeRow(nil, w.hiddenIDs, hidden)[1:]...)
		for i, c := range w.hidden {
			if c.OriginDefault != nil && hidden[i].IsNull() {
				v = tablecodec.AppendNull(v, c.ID)
			}
		}
	}
	return v
}

// newHidden returns the hidden columns' values for a new row: their
// defaults (nil when there are no hidden columns).
func (w *writer) newHidden(ctx *Ctx) []types.Datum {
	if len(w.hidden) == 0 {
		return nil
	}
	out := make([]types.Datum, len(w.hidden))
	for i, c := range w.hidden {
		v, err := defaultValue(ctx, c)
		if err != nil || (v.IsNull() && c.Type.NotNull()) {
			v = zeroValue(c)
		}
		out[i] = v
	}
	return out
}

// oldHidden returns the hidden columns' values of a stored row, read back
// from the store (nil when there are no hidden columns). The row is
// locked or its write will be checked for conflicts.
func (w *writer) oldHidden(ctx *Ctx, h tablecodec.Handle) ([]types.Datum, error) {
	if len(w.hidden) == 0 {
		return nil, nil
	}
	out := make([]types.Datum, len(w.hidden))
	present := make([]bool, len(w.hidden))
	raw, err := ctx.Reader.Get(ctx.Context, tablecodec.RowKey(w.t.ID, h))
	if errors.Is(err, kv.ErrNotFound) {
		return w.newHidden(ctx), nil
	}
	if err != nil {
		return nil, err
	}
	if err := tablecodec.DecodeRow(raw, w.hiddenIDs, out, present); err != nil {
		return nil, err
	}
	for i, ok := range present {
		if !ok {
			out[i] = w.hiddenOrigin[i]
		}
	}
	return out, nil
}

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

func (w *writer) entry(ix *catalog.IndexInfo, row []types.Datum, h tablecodec.Handle) (indexEntry, error) {
	vals := make([]types.Datum, len(ix.Columns))
	hasNull := false
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
	unique := ix.Unique && !hasNull
	key, err := tablecodec.IndexKey(w.t.ID, ix.ID, vals, h, !unique)
	if err != nil {
		return indexEntry{}, err
	}
	e := indexEntry{ix: ix, key: key, unique: unique, vals: vals, deleteOnly: ix.State == catalog.StateDeleteOnly}
	if unique {
		e.value = h.Encoded()
	}
	return e, nil
}

func (w *writer) entries(row []types.Datum, h tablecodec.Handle) ([]indexEntry, error) {
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

// dupEntry is MySQL's 1062 for a value of an index.
func dupEntry(t *catalog.TableInfo, ix *catalog.IndexInfo, vals []types.Datum) error {
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

// exists reports whether key is present for the statement's reads.
func exists(ctx *Ctx, key []byte) (bool, error) {
	_, err := ctx.Reader.Get(ctx.Context, key)
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// addRecord writes a new row and its index entries, failing with 1062 if
// its handle or a unique key is taken. The keys must already be locked in
// a pessimistic transaction.
func (w *writer) addRecord(ctx *Ctx, row []types.Datum, h tablecodec.Handle) error {
	return w.addRecordHidden(ctx, row, w.newHidden(ctx), h)
}

// addRecordHidden is addRecord with the hidden columns' values.
func (w *writer) addRecordHidden(ctx *Ctx, row, hidden []types.Datum, h tablecodec.Handle) error {
	rk := tablecodec.RowKey(w.t.ID, h)
	insert := ctx.Txn.Mode() == kv.Optimistic
	lazy := insert && ctx.LazyUniqueChecks
	if !lazy {
		if ok, err := exists(ctx, rk); err != nil {
			return err
		} else if ok {
			return dupEntry(w.t, w.t.PrimaryKey(), handleVals(w.t, row, h))
		}
	}
	ents, err := w.entries(row, h)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.unique || e.deleteOnly || lazy {
			continue
		}
		if ok, err := exists(ctx, e.key); err != nil {
			return err
		} else if ok {
			return dupEntry(w.t, e.ix, e.vals)
		}
	}
	if insert {
		err = ctx.Txn.Insert(rk, w.rowValue(row, hidden))
	} else {
		err = ctx.Txn.Set(rk, w.rowValue(row, hidden))
	}
	if err != nil {
		return mapBufferErr(w.t, err, row, h)
	}
	for _, e := range ents {
		if e.deleteOnly {
			continue
		}
		if e.unique && insert {
			err = ctx.Txn.Insert(e.key, e.value)
		} else {
			err = ctx.Txn.Set(e.key, e.value)
		}
		if err != nil {
			var ke *kv.KeyExistsError
			if errors.As(err, &ke) {
				return dupEntry(w.t, e.ix, e.vals)
			}
			return err
		}
		coverEntry(ctx, e)
	}
	return nil
}

// coverEntry marks a just-written entry of a non-unique index as covered
// by its row (kv.Txn.Cover): its key holds the row's handle, so whoever
// writes it writes or locks that row too, and the commit need not check
// it. Unique entries are keyed by value alone, and checked.
func coverEntry(ctx *Ctx, e indexEntry) {
	if !e.unique {
		ctx.Txn.Cover(e.key)
	}
}

func mapBufferErr(t *catalog.TableInfo, err error, row []types.Datum, h tablecodec.Handle) error {
	var ke *kv.KeyExistsError
	if errors.As(err, &ke) {
		return dupEntry(t, t.PrimaryKey(), handleVals(t, row, h))
	}
	return err
}

// removeRecord deletes a row and its index entries.
func (w *writer) removeRecord(ctx *Ctx, row []types.Datum, h tablecodec.Handle) error {
	if err := ctx.Txn.Delete(tablecodec.RowKey(w.t.ID, h)); err != nil {
		return err
	}
	ents, err := w.entries(row, h)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := ctx.Txn.Delete(e.key); err != nil {
			return err
		}
		coverEntry(ctx, e)
	}
	return nil
}

// updateRecord replaces a row, keeping the index entries that did not
// change. A changed unique key is checked for duplicates.
func (w *writer) updateRecord(ctx *Ctx, old, new []types.Datum, h tablecodec.Handle) error {
	oldEnts, err := w.entries(old, h)
	if err != nil {
		return err
	}
	newEnts, err := w.entries(new, h)
	if err != nil {
		return err
	}
	for i := range newEnts {
		o, n := oldEnts[i], newEnts[i]
		if string(o.key) == string(n.key) && string(o.value) == string(n.value) {
			continue
		}
		if err := ctx.Txn.Delete(o.key); err != nil {
			return err
		}
		coverEntry(ctx, o)
		if n.deleteOnly {
			continue
		}
		if n.unique {
			if ok, err := exists(ctx, n.key); err != nil {
				return err
			} else if ok {
				return dupEntry(w.t, n.ix, n.vals)
			}
		}
		if err := ctx.Txn.Set(n.key, n.value); err != nil {
			return err
		}
		coverEntry(ctx, n)
	}
	hidden, err := w.oldHidden(ctx, h)
	if err != nil {
		return err
	}
	return ctx.Txn.Set(tablecodec.RowKey(w.t.ID, h), w.rowValue(new, hidden))
}

// uniqueKeys returns the row key and the unique index keys of a row: what
// a pessimistic write locks.
func (w *writer) uniqueKeys(row []types.Datum, h tablecodec.Handle) ([][]byte, error) {
	keys := [][]byte{tablecodec.RowKey(w.t.ID, h)}
	for _, ix := range w.indexes {
		if !ix.Unique || ix.State == catalog.StateDeleteOnly {
			continue
		}
		e, err := w.entry(ix, row, h)
		if err != nil {
			return nil, err
		}
		if e.unique {
			keys = append(keys, e.key)
		}
	}
	return keys, nil
}

// IndexEntry returns the index entry of a stored row, for an index build.
func IndexEntry(t *catalog.TableInfo, ix *catalog.IndexInfo, h tablecodec.Handle, rowValue []byte) (key, value []byte, err error) {
	dec := newRowDecoder(t)
	row := make([]types.Datum, len(t.Columns)+1)
	if err := dec.decode(h, rowValue, row); err != nil {
		return nil, nil, err
	}
	w := &writer{t: t}
	e, err := w.entry(ix, row[:len(t.Columns)], h)
	return e.key, e.value, err
}
