package table

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// WriteCtx is what writing rows needs of a statement.
type WriteCtx struct {
	Context context.Context
	// Eval converts values (the defaults of hidden columns) and collects
	// warnings.
	Eval *expression.Ctx
	// Reader is where duplicates are looked for and hidden values read
	// back; Txn is where rows and entries are written.
	Reader kv.Retriever
	Txn    kv.Txn
	// LazyUniqueChecks skips reading for duplicates before adding a row to
	// an optimistic transaction: its keys are written with kv.Txn.Insert,
	// so the commit fails with kv.KeyExistsError on a duplicate.
	LazyUniqueChecks bool
}

// Writer turns row changes of one table into KV writes: the row and one
// entry per writable index. Rows are in table column order and in their
// stored form (StoredRow); the handle is passed separately. A Writer
// serves one statement.
//
// While an online ADD or DROP COLUMN runs, the table has write-only hidden
// columns (catalog.TableInfo.Hidden) that readers do not see but writers
// keep: a new row gets their default, an updated row keeps the values it
// had (read back from the stored row, so that writers under the next
// schema version, which see the column, lose nothing).
//
// While a MODIFY COLUMN rewrites a column's values (ddl/modify.go), a
// hidden column derives from a visible one (catalog.ColumnInfo.ChangeFrom):
// writers store the visible value converted to the hidden column's type,
// and indexes being built on the hidden column (their columns' offsets
// point past the visible ones) get entries computed from it. The entries
// of old rows are computed the same way, so they are the ones that were
// written.
type Writer struct {
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
	// derived are the hidden columns that derive from a visible one;
	// extend says an index reads a hidden column, so index entries are
	// computed over the row extended with t.Hidden's values.
	derived []derivedCol
	extend  bool
	// unique says a maintained index is unique and written (UniqueKeys
	// returns more than the row key).
	unique bool
	// value is the scratch buffer of the row values Add and Update
	// encode, key and key2 those of the keys Update and Remove write or
	// delete (kv.Txn copies what it is given).
	value, key, key2 []byte
}

// maxKeptScratch is the largest scratch buffer a Writer kept for reuse
// (Reset) holds on to.
const maxKeptScratch = 64 << 10

// Reset readies w, done with, for another statement on the same table
// (a Writer kept in a cached plan): all it holds of the last one is its
// scratch buffer, dropped when a large row grew it past maxKeptScratch.
func (w *Writer) Reset() {
	if cap(w.value) > maxKeptScratch {
		w.value = nil
	}
	if cap(w.key) > maxKeptScratch || cap(w.key2) > maxKeptScratch {
		w.key, w.key2 = nil, nil
	}
}

// derivedCol is a hidden column whose value is a visible column's,
// converted (catalog.ColumnInfo.ChangeFrom).
type derivedCol struct {
	at     int                 // index in t.Hidden
	stored int                 // index in Writer.hidden, or -1 (delete-only)
	src    int                 // offset of the visible column it converts
	col    *catalog.ColumnInfo // the hidden column, named for messages
}

// NewWriter returns a Writer of t's rows.
func NewWriter(t *catalog.TableInfo) *Writer {
	w := &Writer{t: t, ids: t.ColumnIDs(), skip: -1, indexes: t.MaintainedIndexes()}
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
	for i, c := range t.Hidden {
		if c.ChangeFrom == 0 {
			continue
		}
		src := -1
		for _, v := range t.Columns {
			if v.ID == c.ChangeFrom {
				src = v.Offset
			}
		}
		if src < 0 {
			continue
		}
		cc := *c
		// Messages name the column as the ALTER does.
		cc.Name = strings.TrimPrefix(c.Name, catalog.ChangingPrefix)
		dc := derivedCol{at: i, stored: -1, src: src, col: &cc}
		for j, h := range w.hidden {
			if h.ID == c.ID {
				dc.stored = j
			}
		}
		w.derived = append(w.derived, dc)
	}
	for _, ix := range w.indexes {
		w.unique = w.unique || (ix.Unique && ix.State != catalog.StateDeleteOnly)
		for _, ic := range ix.Columns {
			if ic.Offset >= len(t.Columns) {
				w.extend = true
			}
		}
	}
	return w
}

// derive converts row's value of the column dc derives from, under ectx:
// in a strict mode a value that does not fit fails (notNull is the error
// for a NULL in a NOT NULL column); otherwise it is clipped, with
// warnings in ectx. A nil ectx clips without warnings.
func derive(dc *derivedCol, row []types.Datum, ectx *expression.Ctx, notNull func() error) (types.Datum, error) {
	v, err := Convert(ectx, row[dc.src], dc.col)
	if err != nil {
		return types.Null, err
	}
	if v.IsNull() && dc.col.Type.NotNull() {
		if ectx != nil && ectx.Strict {
			return types.Null, notNull()
		}
		if ectx != nil {
			ectx.Warn(errno.New(errno.WarnDataTruncated, "Data truncated for column '%s' at row %d", dc.col.Name, max(ectx.RowNum, 1)))
		}
		v = ZeroValue(dc.col)
	}
	return v, nil
}

// convCtx is the conversion context of a derived column's value stored
// by a write: the ALTER's sql_mode (in a strict one, errors fail the
// write).
// Table is the table w writes.
func (w *Writer) Table() *catalog.TableInfo { return w.t }

func (w *Writer) convCtx(dc *derivedCol) *expression.Ctx {
	m := expression.SQLMode(dc.col.ChangeMode)
	return &expression.Ctx{Strict: m.Strict(), Mode: m, Now: time.Now()}
}

// fillDerived sets the stored hidden columns that derive from a visible
// one to their values for row, failing where the ALTER's strict mode
// would. An update (old is the row it replaces) that leaves the visible
// value as it was does not fail on it: the value was there before the
// ALTER's backfill passed the row, which then fails the ALTER instead.
func (w *Writer) fillDerived(row, old, hidden []types.Datum) error {
	for i := range w.derived {
		dc := &w.derived[i]
		if dc.stored < 0 {
			continue
		}
		ectx := w.convCtx(dc)
		if old != nil && SameValue(old[dc.src], row[dc.src]) {
			ectx = nil
		}
		v, err := derive(dc, row, ectx, func() error {
			return errno.New(errno.ErBadNull, "Column '%s' cannot be null", dc.col.Name)
		})
		if err != nil {
			return err
		}
		hidden[dc.stored] = v
	}
	return nil
}

// extended returns row with the values of t.Hidden after it when an
// index reads a hidden column (else row itself). Derived columns get
// their converted values, clipped where they do not fit: a value that
// does not fit never reaches the store (fillDerived fails its write), so
// the entries of stored rows are the ones computed here.
func (w *Writer) extended(row []types.Datum) []types.Datum {
	if !w.extend {
		return row
	}
	full := make([]types.Datum, len(w.t.Columns)+len(w.t.Hidden))
	copy(full, row[:len(w.t.Columns)])
	for i := range w.derived {
		dc := &w.derived[i]
		full[len(w.t.Columns)+dc.at], _ = derive(dc, row, nil, nil)
	}
	return full
}

// rowValue encodes a row, with the values of the hidden columns (nil when
// there are none), in a new slice.
func (w *Writer) rowValue(row, hidden []types.Datum) []byte {
	return w.appendRowValue(nil, row, hidden)
}

// scratchValue is rowValue in w's scratch buffer, valid until the next
// call.
func (w *Writer) scratchValue(row, hidden []types.Datum) []byte {
	w.value = w.appendRowValue(w.value[:0], row, hidden)
	return w.value
}

// appendRowValue appends rowValue's encoding to dst.
func (w *Writer) appendRowValue(dst []byte, row, hidden []types.Datum) []byte {
	var v []byte
	if w.skip < 0 {
		v = tablecodec.EncodeRow(dst, w.ids, row)
	} else {
		saved := row[w.skip]
		row[w.skip] = types.Null
		v = tablecodec.EncodeRow(dst, w.ids, row)
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
func (w *Writer) newHidden(ctx *WriteCtx) []types.Datum {
	if len(w.hidden) == 0 {
		return nil
	}
	out := make([]types.Datum, len(w.hidden))
	for i, c := range w.hidden {
		if c.ChangeFrom != 0 {
			continue // fillDerived
		}
		v, err := DefaultValue(ctx.Eval, c)
		if err != nil || (v.IsNull() && c.Type.NotNull()) {
			v = ZeroValue(c)
		}
		out[i] = v
	}
	return out
}

// OldHidden returns the hidden columns' values of a stored row, read back
// from the store (nil when there are no hidden columns), for AddHidden.
// The row is locked or its write will be checked for conflicts.
func (w *Writer) OldHidden(ctx *WriteCtx, h tablecodec.Handle) ([]types.Datum, error) {
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

// exists reports whether key is present for the statement's reads.
func exists(ctx *WriteCtx, key []byte) (bool, error) {
	_, err := ctx.Reader.Get(ctx.Context, key)
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Add writes a new row and its index entries, failing with 1062 if its
// handle or a unique key is taken. The keys (UniqueKeys) must already be
// locked in a pessimistic transaction.
func (w *Writer) Add(ctx *WriteCtx, row []types.Datum, h tablecodec.Handle) error {
	return w.AddHidden(ctx, row, w.newHidden(ctx), h)
}

// AddHidden is Add with the hidden columns' values (OldHidden of the row
// being moved to a new handle).
func (w *Writer) AddHidden(ctx *WriteCtx, row, hidden []types.Datum, h tablecodec.Handle) error {
	if err := w.fillDerived(row, nil, hidden); err != nil {
		return err
	}
	rk := tablecodec.RowKey(w.t.ID, h)
	insert := ctx.Txn.Mode() == kv.Optimistic
	lazy := insert && ctx.LazyUniqueChecks
	if !lazy {
		if ok, err := exists(ctx, rk); err != nil {
			return err
		} else if ok {
			return DupEntry(w.t, w.t.PrimaryKey(), handleVals(w.t, row, h))
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
			return DupEntry(w.t, e.ix, e.vals)
		}
	}
	if insert {
		err = ctx.Txn.Insert(rk, w.scratchValue(row, hidden))
	} else {
		err = ctx.Txn.Set(rk, w.scratchValue(row, hidden))
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
				return DupEntry(w.t, e.ix, e.vals)
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
func coverEntry(ctx *WriteCtx, e indexEntry) {
	if !e.unique {
		ctx.Txn.Cover(e.key)
	}
}

func mapBufferErr(t *catalog.TableInfo, err error, row []types.Datum, h tablecodec.Handle) error {
	var ke *kv.KeyExistsError
	if errors.As(err, &ke) {
		return DupEntry(t, t.PrimaryKey(), handleVals(t, row, h))
	}
	return err
}

// Remove deletes a row and its index entries.
func (w *Writer) Remove(ctx *WriteCtx, row []types.Datum, h tablecodec.Handle) error {
	w.key = tablecodec.AppendRowKey(w.key[:0], w.t.ID, h)
	if err := ctx.Txn.Delete(w.key); err != nil {
		return err
	}
	row = w.extended(row)
	for _, ix := range w.indexes {
		e, err := w.appendEntry(w.key[:0], ix, row, h)
		if err != nil {
			return err
		}
		w.key = e.key
		if err := ctx.Txn.Delete(e.key); err != nil {
			return err
		}
		coverEntry(ctx, e)
	}
	return nil
}

// Update replaces a row, keeping the index entries that did not change. A
// changed unique key is checked for duplicates. An index none of whose
// columns changed (identical values in old and new) keeps its entry
// without computing it: the entry is a function of the index's values and
// the handle alone.
func (w *Writer) Update(ctx *WriteCtx, old, new []types.Datum, h tablecodec.Handle) error {
	oldExt, newExt := w.extended(old), w.extended(new)
	for _, ix := range w.indexes {
		if !w.extend && sameIndexValues(ix, old, new) {
			continue
		}
		o, err := w.appendEntry(w.key[:0], ix, oldExt, h)
		if err != nil {
			return err
		}
		w.key = o.key
		n, err := w.appendEntry(w.key2[:0], ix, newExt, h)
		if err != nil {
			return err
		}
		w.key2 = n.key
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
				return DupEntry(w.t, n.ix, n.vals)
			}
		}
		if err := ctx.Txn.Set(n.key, n.value); err != nil {
			return err
		}
		coverEntry(ctx, n)
	}
	hidden, err := w.OldHidden(ctx, h)
	if err != nil {
		return err
	}
	if err := w.fillDerived(new, old, hidden); err != nil {
		return err
	}
	w.key = tablecodec.AppendRowKey(w.key[:0], w.t.ID, h)
	return ctx.Txn.Set(w.key, w.scratchValue(new, hidden))
}

// sameIndexValues reports whether old and new hold identical values in
// every column of ix (of the visible ones: an index on a hidden column is
// never the same, conservatively).
func sameIndexValues(ix *catalog.IndexInfo, old, new []types.Datum) bool {
	for _, ic := range ix.Columns {
		if ic.Offset >= len(old) || ic.Offset >= len(new) || !identical(old[ic.Offset], new[ic.Offset]) {
			return false
		}
	}
	return true
}

// identical reports whether a and b are the same value with the same
// encoding, so that every key and value computed from them is the same:
// integers and floats by their bits, strings by their bytes and
// collation, other kinds by SameValue (same kind, equal, printed alike).
func identical(a, b types.Datum) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case types.KindNull:
		return true
	case types.KindInt, types.KindUint, types.KindFloat:
		return a.Int() == b.Int()
	case types.KindString:
		return a.Collation() == b.Collation() && bytes.Equal(a.Bytes(), b.Bytes())
	}
	return SameValue(a, b)
}

// HasUniqueIndex reports whether UniqueKeys returns unique index keys
// besides the row key (for some rows: not those with a NULL in the index).
func (w *Writer) HasUniqueIndex() bool { return w.unique }

// UniqueKeys returns the row key and the unique index keys of a row: what
// a pessimistic write locks.
func (w *Writer) UniqueKeys(row []types.Datum, h tablecodec.Handle) ([][]byte, error) {
	keys := [][]byte{tablecodec.RowKey(w.t.ID, h)}
	row = w.extended(row)
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
