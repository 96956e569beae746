package table

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// Reorg rewrites the stored rows of one version of a table for the
// MODIFY COLUMN in progress (ddl/modify.go), one row at a time: Row
// gives the write-only hidden columns that derive from a visible one
// (catalog.ColumnInfo.ChangeFrom) its value converted, as an INSERT under
// the ALTER's sql_mode would convert it, and Entry the row's entry in an
// index being built. Not safe for concurrent use.
type Reorg struct {
	w      *Writer
	dec    *Decoder
	row    []types.Datum
	hidden []types.Datum
	found  []bool
}

// NewReorg returns a Reorg for table t.
func NewReorg(t *catalog.TableInfo) *Reorg {
	w := NewWriter(t)
	return &Reorg{w: w, dec: NewDecoder(t, nil, nil), row: make([]types.Datum, len(t.Columns)+1),
		hidden: make([]types.Datum, len(w.hidden)), found: make([]bool, len(w.hidden))}
}

// Row returns the stored row rowValue rewritten. A value that does not fit
// fails in a strict mode, naming rowNum as MySQL's copying ALTER does (a
// NULL in a NOT NULL column is 1138); otherwise it is clipped, and the
// warnings say so.
func (r *Reorg) Row(h tablecodec.Handle, rowValue []byte, rowNum int) ([]byte, []*errno.Error, error) {
	w := r.w
	if err := r.dec.Decode(h, rowValue, r.row); err != nil {
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
