package executor

// TIMESTAMP columns hold UTC in storage and the session's time zone
// (time_zone) everywhere else, as in MySQL; DATETIME columns are stored as
// given. The rows executors pass around are in the session's zone: a
// session rowDecoder converts what it reads, storedRow what DML hands the
// writer, and storedKeyValue the values index keys are looked up by. Index
// builds and ANALYZE read and write stored values as they are.
//
// When the session's zone is UTC (or +00:00, or SYSTEM on a UTC machine)
// nothing is converted.

import (
	"errors"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// storageZone returns the zone t's TIMESTAMP values convert from, or nil
// when there is nothing to convert.
func storageZone(ctx *Ctx, t *catalog.TableInfo) *time.Location {
	if ctx == nil || ctx.Eval == nil || !hasTimestamp(t) {
		return nil
	}
	loc := ctx.Eval.Location()
	if isUTC(loc) {
		return nil
	}
	return loc
}

func hasTimestamp(t *catalog.TableInfo) bool {
	for _, c := range t.Columns {
		if c.Type.Tp == mysql.TypeTimestamp {
			return true
		}
	}
	return false
}

// isUTC reports a zone whose clock is UTC's, in winter and in summer.
func isUTC(loc *time.Location) bool {
	if loc == time.UTC {
		return true
	}
	y := time.Now().Year()
	_, jan := time.Date(y, 1, 1, 0, 0, 0, 0, loc).Zone()
	_, jul := time.Date(y, 7, 1, 0, 0, 0, 0, loc).Zone()
	return jan == 0 && jul == 0
}

// hasDST reports a zone whose offset changes during the year.
func hasDST(loc *time.Location) bool {
	y := time.Now().Year()
	_, jan := time.Date(y, 1, 1, 0, 0, 0, 0, loc).Zone()
	_, jul := time.Date(y, 7, 1, 0, 0, 0, 0, loc).Zone()
	return jan != jul
}

// timestampToUTC converts a TIMESTAMP value read in loc to UTC; the zero
// timestamp and values that are not times stay as they are.
func timestampToUTC(d types.Datum, loc *time.Location) types.Datum {
	return shiftTimestamp(d, loc, time.UTC)
}

// timestampFromUTC converts a stored TIMESTAMP value to loc.
func timestampFromUTC(d types.Datum, loc *time.Location) types.Datum {
	return shiftTimestamp(d, time.UTC, loc)
}

func shiftTimestamp(d types.Datum, from, to *time.Location) types.Datum {
	if d.Kind() != types.KindTime {
		return d
	}
	t, tt, fsp := d.Time()
	if t == 0 || t.Month() == 0 || t.Day() == 0 {
		return d
	}
	return types.NewTime(types.FromGoTime(t.GoTime(from).In(to)), tt, fsp)
}

// storedRow returns row with its TIMESTAMP values in UTC, for the writer:
// row itself when there is nothing to convert, else a copy.
func storedRow(ctx *Ctx, t *catalog.TableInfo, row []types.Datum) []types.Datum {
	loc := storageZone(ctx, t)
	if loc == nil {
		return row
	}
	out := append([]types.Datum(nil), row...)
	for _, c := range t.Columns {
		if c.Type.Tp == mysql.TypeTimestamp && c.Offset < len(out) {
			out[c.Offset] = timestampToUTC(out[c.Offset], loc)
		}
	}
	return out
}

// newSessionRowDecoder is a rowDecoder whose rows are in the session's
// zone.
func newSessionRowDecoder(ctx *Ctx, t *catalog.TableInfo) *rowDecoder {
	d := newRowDecoder(t)
	if d.zone = storageZone(ctx, t); d.zone != nil {
		for _, c := range t.Columns {
			if c.Type.Tp == mysql.TypeTimestamp {
				d.timestamps = append(d.timestamps, c.Offset)
			}
		}
	}
	return d
}

// storedKeyValue converts a value an index key of column col is looked up
// by to the stored form.
func storedKeyValue(ctx *Ctx, t *catalog.TableInfo, col *catalog.ColumnInfo, v types.Datum) types.Datum {
	if col.Type.Tp != mysql.TypeTimestamp {
		return v
	}
	if loc := storageZone(ctx, t); loc != nil {
		return timestampToUTC(v, loc)
	}
	return v
}

// sessionDupError shows a duplicate-key error's TIMESTAMP values in the
// session's zone: the writer reports the stored values of the row it was
// given (stored), which is row converted.
func sessionDupError(ctx *Ctx, t *catalog.TableInfo, err error, stored, row []types.Datum) error {
	var dup *errno.Error
	if err == nil || !errors.As(err, &dup) || dup.Code != errno.ErDupEntry || storageZone(ctx, t) == nil {
		return err
	}
	for _, ix := range t.Indexes {
		if !ix.Unique {
			continue
		}
		sv, rv := make([]types.Datum, len(ix.Columns)), make([]types.Datum, len(ix.Columns))
		for i, c := range ix.Columns {
			sv[i], rv[i] = stored[c.Offset], row[c.Offset]
		}
		var se *errno.Error
		if errors.As(dupEntry(t, ix, sv), &se) && se.Msg == dup.Msg {
			return dupEntry(t, ix, rv)
		}
	}
	return err
}
