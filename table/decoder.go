package table

import (
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Decoder turns stored rows of a table (a row key's handle and its value)
// into the row layout of a table source: the table's columns, in order,
// then the handle. It decodes the columns it was made for and leaves the
// others NULL, so that a statement that reads one column of a wide row
// decodes one column. The integer primary key and the handle come from
// the key and are always filled.
//
// Decoded values have their column's type (typed.go): collated strings,
// ENUM and SET values with their numbers, the value of a column added
// after the row was written, and, for a Decoder with a zone, TIMESTAMP
// values in that zone (timezone.go).
//
// A Decoder does not change once made: concurrent and successive
// executions of one plan may share it.
type Decoder struct {
	t *catalog.TableInfo
	// ids are the column IDs to decode, by column offset; a column not
	// decoded has an ID no column has.
	ids      []int64
	handleAt int // offset of the integer primary key column, or -1
	// defaults are the values of decoded columns added later, by offset.
	defaults []types.Datum
	// typed are the decoded columns whose stored datums need their
	// column's type attached: a collation other than the default, ENUM,
	// SET.
	typed []*catalog.ColumnInfo
	// zone, if not nil, is the zone that the TIMESTAMP columns at
	// timestamps are read in.
	zone       *time.Location
	timestamps []int
}

// noColumn is the ID a Decoder looks for in place of a column it skips:
// column IDs start at 1.
const noColumn = -1

// NewDecoder returns a Decoder of t's rows that decodes the columns at
// offsets cols (all columns if cols is nil) and reads TIMESTAMP values in
// zone (as stored, in UTC, if zone is nil; see StorageZone).
func NewDecoder(t *catalog.TableInfo, cols []int, zone *time.Location) *Decoder {
	d := &Decoder{t: t, handleAt: -1, zone: zone}
	if hc := t.HandleColumn(); hc != nil {
		d.handleAt = hc.Offset
	}
	d.ids = make([]int64, len(t.Columns))
	if cols == nil {
		for i, c := range t.Columns {
			d.ids[i] = c.ID
		}
	} else {
		for i := range d.ids {
			d.ids[i] = noColumn
		}
		for _, off := range cols {
			d.ids[off] = t.Columns[off].ID
		}
	}
	for i, c := range t.Columns {
		if d.ids[i] == noColumn {
			continue
		}
		if needsTyping(&c.Type) {
			d.typed = append(d.typed, c)
		}
		if c.OriginDefault != nil {
			if d.defaults == nil {
				d.defaults = make([]types.Datum, len(t.Columns))
			}
			d.defaults[i] = originDefault(c)
		}
		if zone != nil && c.Type.Tp == mysql.TypeTimestamp {
			d.timestamps = append(d.timestamps, i)
		}
	}
	return d
}

// Table is the table whose rows d decodes.
func (d *Decoder) Table() *catalog.TableInfo { return d.t }

// Decode fills row, of len(columns)+1, from a handle and a row value.
func (d *Decoder) Decode(h tablecodec.Handle, value []byte, row []types.Datum) error {
	cols := row[:len(d.t.Columns)]
	// Which columns the value holds matters only for defaults.
	var scratch [64]bool
	var present []bool
	if d.defaults != nil {
		if len(cols) <= len(scratch) {
			present = scratch[:len(cols)]
		} else {
			present = make([]bool, len(cols))
		}
	}
	if err := tablecodec.DecodeRow(value, d.ids, cols, present); err != nil {
		return err
	}
	for _, c := range d.typed {
		cols[c.Offset] = typeStored(cols[c.Offset], c)
	}
	for _, off := range d.timestamps {
		cols[off] = timestampFromUTC(cols[off], d.zone)
	}
	if d.defaults != nil {
		for i, ok := range present {
			if !ok && i != d.handleAt && !d.defaults[i].IsNull() {
				cols[i] = d.defaults[i]
			}
		}
	}
	if d.handleAt >= 0 {
		if d.t.Columns[d.handleAt].Type.Unsigned() {
			cols[d.handleAt] = types.NewUint(uint64(h.Int))
		} else {
			cols[d.handleAt] = types.NewInt(h.Int)
		}
	}
	row[len(cols)] = HandleDatum(h)
	return nil
}

// HandleDatum is a handle as a table source row holds it: the integer, or
// a clustered primary key's encoded values as bytes.
func HandleDatum(h tablecodec.Handle) types.Datum {
	if h.Common != nil {
		return types.NewBytes(h.Common)
	}
	return types.NewInt(h.Int)
}

// HandleOf returns the handle stored in a table source row.
func HandleOf(t *catalog.TableInfo, row []types.Datum) tablecodec.Handle {
	d := row[len(t.Columns)]
	if t.CommonHandle {
		return tablecodec.Handle{Common: d.Bytes()}
	}
	return tablecodec.IntHandle(d.Int())
}
