package executor

import (
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
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
//
// While a MODIFY COLUMN rewrites a column's values (ddl/modify.go), a
// hidden column derives from a visible one (catalog.ColumnInfo.ChangeFrom):
// writers store the visible value converted to the hidden column's type,
// and indexes being built on the hidden column (their columns' offsets
// point past the visible ones) get entries computed from it. The entries
// of old rows are computed the same way, so they are the ones that were
// written.
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
	// derived are the hidden columns that derive from a visible one;
	// extend says an index reads a hidden column, so index entries are
	// computed over the row extended with t.Hidden's values.
	derived []derivedCol
	extend  bool
}

// derivedCol is a hidden column whose value is a visible column's,
// converted (catalog.ColumnInfo.ChangeFrom).
type derivedCol struct {
	at     int                 // index in t.Hidden
	stored int                 // index in writer.hidden, or -1 (delete-only)
	src    int                 // offset of the visible column it converts
	col    *catalog.ColumnInfo // the hidden column, named for messages
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
	v, err := ConvertForColumn(ectx, row[dc.src], dc.col)
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
		v = zeroValue(dc.col)
	}
	return v, nil
}

// convCtx is the conversion context of a derived column's value stored
// by a write: the ALTER's sql_mode (in a strict one, errors fail the
// write).
func (w *writer) convCtx(dc *derivedCol) *expression.Ctx {
	m := expression.SQLMode(dc.col.ChangeMode)
	return &expression.Ctx{Strict: m.Strict(), Mode: m, Now: time.Now()}
}

// fillDerived sets the stored hidden columns that derive from a visible
// one to their values for row, failing where the ALTER's strict mode
// would. An update (old is the row it replaces) that leaves the visible
// value as it was does not fail on it: the value was there before the
// ALTER's backfill passed the row, which then fails the ALTER instead.
func (w *writer) fillDerived(row, old, hidden []types.Datum) error {
	for i := range w.derived {
		dc := &w.derived[i]
		if dc.stored < 0 {
			continue
		}
		ectx := w.convCtx(dc)
		if old != nil && sameValue(old[dc.src], row[dc.src]) {
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
func (w *writer) extended(row []types.Datum) []types.Datum {
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
		if c.ChangeFrom != 0 {
			continue // fillDerived
		}
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

// entry computes ix's entry of a row (extended when an index reads hidden
// columns).
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
	if err := w.fillDerived(new, old, hidden); err != nil {
		return err
	}
	return ctx.Txn.Set(tablecodec.RowKey(w.t.ID, h), w.rowValue(new, hidden))
}

// uniqueKeys returns the row key and the unique index keys of a row: what
// a pessimistic write locks.
func (w *writer) uniqueKeys(row []types.Datum, h tablecodec.Handle) ([][]byte, error) {
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

// IndexEntry returns the index entry of a stored row, for an index build.
func IndexEntry(t *catalog.TableInfo, ix *catalog.IndexInfo, h tablecodec.Handle, rowValue []byte) (key, value []byte, err error) {
	dec := newRowDecoder(t)
	row := make([]types.Datum, len(t.Columns)+1)
	if err := dec.decode(h, rowValue, row); err != nil {
		return nil, nil, err
	}
	w := &writer{t: t}
	full := row[:len(t.Columns)]
	for _, ic := range ix.Columns {
		if ic.Offset >= len(t.Columns) {
			// An index being built on a hidden column (MODIFY COLUMN).
			w = newWriter(t)
			full = w.extended(full)
			break
		}
	}
	e, err := w.entry(ix, full, h)
	return e.key, e.value, err
}

// Reorg rewrites the stored rows of one version of a table for the
// MODIFY COLUMN in progress (ddl/modify.go), one row at a time: Row
// gives the write-only hidden columns that derive from a visible one
// (catalog.ColumnInfo.ChangeFrom) its value converted, as an INSERT under
// the ALTER's sql_mode would convert it, and Entry the row's entry in an
// index being built. Not safe for concurrent use.
type Reorg struct {
	w      *writer
	dec    *rowDecoder
	row    []types.Datum
	hidden []types.Datum
	found  []bool
}

// NewReorg returns a Reorg for table t.
func NewReorg(t *catalog.TableInfo) *Reorg {
	w := newWriter(t)
	return &Reorg{w: w, dec: newRowDecoder(t), row: make([]types.Datum, len(t.Columns)+1),
		hidden: make([]types.Datum, len(w.hidden)), found: make([]bool, len(w.hidden))}
}

// Row returns the stored row rowValue rewritten. A value that does not fit
// fails in a strict mode, naming rowNum as MySQL's copying ALTER does (a
// NULL in a NOT NULL column is 1138); otherwise it is clipped, and the
// warnings say so.
func (r *Reorg) Row(h tablecodec.Handle, rowValue []byte, rowNum int) ([]byte, []*errno.Error, error) {
	w := r.w
	if err := r.dec.decode(h, rowValue, r.row); err != nil {
		return nil, nil, err
	}
	row := r.row[:len(w.t.Columns)]
	if err := tablecodec.DecodeRow(rowValue, w.hiddenIDs, r.hidden, r.found); err != nil {
		return nil, nil, err
	}
	for i, ok := range r.found {
		if !ok {
			r.hidden[i] = w.hiddenOrigin[i]
		}
	}
	var warnings []*errno.Error
	for i := range w.derived {
		dc := &w.derived[i]
		if dc.stored < 0 {
			continue
		}
		ectx := w.convCtx(dc)
		ectx.RowNum = rowNum
		v, err := derive(dc, row, ectx, func() error {
			return errno.New(errno.ErInvalidUseOfNull, "Invalid use of NULL value")
		})
		if err != nil {
			return nil, nil, err
		}
		r.hidden[dc.stored] = v
		warnings = append(warnings, ectx.Warnings...)
	}
	return w.rowValue(row, r.hidden), warnings, nil
}

// Entry returns the entry in index ix of the row Row rewrote last.
func (r *Reorg) Entry(ix *catalog.IndexInfo, h tablecodec.Handle) (key, value []byte, err error) {
	e, err := r.w.entry(ix, r.w.extended(r.row[:len(r.w.t.Columns)]), h)
	return e.key, e.value, err
}
