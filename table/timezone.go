package table

// TIMESTAMP columns hold UTC in storage and the session's time zone
// (time_zone) everywhere else, as in MySQL; DATETIME columns are stored as
// given. The rows executors pass around are in the session's zone: a
// Decoder made with StorageZone converts what it reads, StoredRow what
// DML hands the Writer, and StoredKeyValue the values index keys are
// looked up by. Index builds and ANALYZE read and write stored values as
// they are.
//
// When the session's zone is UTC (or +00:00, or SYSTEM on a UTC machine)
// nothing is converted.

import (
	"errors"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// StorageZone returns the zone, ctx's session zone, that t's TIMESTAMP
// values convert from and to, or nil when there is nothing to convert.
func StorageZone(ctx *expression.Ctx, t *catalog.TableInfo) *time.Location {
	if ctx == nil || !hasTimestamp(t) {
		return nil
	}
	loc := ctx.Location()
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

// HasDST reports a zone whose offset changes during the year.
func HasDST(loc *time.Location) bool {
	y := time.Now().Year()
	_, jan := time.Date(y, 1, 1, 0, 0, 0, 0, loc).Zone()
	_, jul := time.Date(y, 7, 1, 0, 0, 0, 0, loc).Zone()
	return jan != jul
}

// TimestampToUTC converts a TIMESTAMP value read in loc to UTC; the zero
// timestamp and values that are not times stay as they are.
func TimestampToUTC(d types.Datum, loc *time.Location) types.Datum {
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

// StoredRow returns row, in ctx's session zone, with its TIMESTAMP values
// in UTC, for the Writer: row itself when there is nothing to convert,
// else a copy.
func StoredRow(ctx *expression.Ctx, t *catalog.TableInfo, row []types.Datum) []types.Datum {
	loc := StorageZone(ctx, t)
	if loc == nil {
		return row
	}
	out := append([]types.Datum(nil), row...)
	for _, c := range t.Columns {
		if c.Type.Tp == mysql.TypeTimestamp && c.Offset < len(out) {
			out[c.Offset] = TimestampToUTC(out[c.Offset], loc)
		}
	}
	return out
}

// StoredKeyValue converts a value, in ctx's session zone, that an index
// key of column col is looked up by to the stored form.
func StoredKeyValue(ctx *expression.Ctx, t *catalog.TableInfo, col *catalog.ColumnInfo, v types.Datum) types.Datum {
	if col.Type.Tp != mysql.TypeTimestamp {
		return v
	}
	if loc := StorageZone(ctx, t); loc != nil {
		return TimestampToUTC(v, loc)
	}
	return v
}

// SessionDupError shows a duplicate-key error's TIMESTAMP values in ctx's
// session zone: the Writer reports the stored values of the row it was
// given (stored), which is row converted.
func SessionDupError(ctx *expression.Ctx, t *catalog.TableInfo, err error, stored, row []types.Datum) error {
	if err == nil {
		return nil // before dup, which escapes: no allocation when all is well
	}
	var dup *errno.Error
	if !errors.As(err, &dup) || dup.Code != errno.ErDupEntry || StorageZone(ctx, t) == nil {
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
		if errors.As(DupEntry(t, ix, sv), &se) && se.Msg == dup.Msg {
			return DupEntry(t, ix, rv)
		}
	}
	return err
}
