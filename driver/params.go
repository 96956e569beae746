package driver

import (
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
)

// datumOf converts a bound parameter to a datum, copying its bytes, which
// the server reuses.
func datumOf(v server.Value) types.Datum {
	switch v.Kind() {
	case server.KindInt:
		return types.NewInt(v.Int())
	case server.KindUint:
		return types.NewUint(v.Uint())
	case server.KindFloat32, server.KindFloat64:
		return types.NewFloat(v.Float())
	case server.KindDecimal:
		d, _, err := apd.NewFromString(string(v.Bytes()))
		if err != nil {
			return types.NewString(string(v.Bytes()))
		}
		return types.NewDecimal(d)
	case server.KindBytes:
		return types.NewBytes(append([]byte(nil), v.Bytes()...))
	case server.KindDate, server.KindDateTime, server.KindTimestamp:
		dt := v.DateTime()
		t := types.MakeTime(dt.Year, dt.Month, dt.Day, dt.Hour, dt.Minute, dt.Second, dt.Microsecond)
		tt := types.TimeDatetime
		if v.Kind() == server.KindDate {
			tt = types.TimeDate
		}
		fsp := 0
		if dt.Microsecond != 0 {
			fsp = 6
		}
		return types.NewTime(t, tt, fsp)
	case server.KindTime:
		return types.NewDuration(v.Duration().Microseconds(), 6)
	}
	return types.Null
}
