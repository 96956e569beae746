package executor

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// intRange is the range of each integer column type.
func intRange(tp byte, unsigned bool) (lo int64, hi uint64) {
	var bits uint
	switch tp {
	case mysql.TypeTiny:
		bits = 8
	case mysql.TypeShort:
		bits = 16
	case mysql.TypeInt24:
		bits = 24
	case mysql.TypeLong:
		bits = 32
	case mysql.TypeYear:
		return 0, 2155
	default:
		bits = 64
	}
	if unsigned {
		if bits == 64 {
			return 0, math.MaxUint64
		}
		return 0, 1<<bits - 1
	}
	return -1 << (bits - 1), 1<<(bits-1) - 1
}

// ConvertForColumn converts d to a value of col's type for storing, as an
// INSERT or UPDATE does. In strict mode a value that does not fit fails
// (1264, 1406, 1366, 1292); otherwise it is clipped or truncated with a
// warning.
func ConvertForColumn(ctx *expression.Ctx, d types.Datum, col *catalog.ColumnInfo) (types.Datum, error) {
	if d.IsNull() {
		return d, nil
	}
	ft := &col.Type
	strict := ctx != nil && ctx.Strict
	warnOrFail := func(e *errno.Error) error {
		if strict {
			return e
		}
		if ctx != nil {
			ctx.Warn(e)
		}
		return nil
	}
	outOfRange := func() *errno.Error {
		return errno.New(errno.ErWarnDataOutOfRange, "Out of range value for column '%s' at row 1", col.Name)
	}
	badValue := func(kind string) *errno.Error {
		return errno.New(errno.ErTruncatedWrongValueFor, "Incorrect %s value: '%s' for column '%s' at row 1", kind, d.String(), col.Name)
	}
	switch {
	case ft.IsInteger():
		lo, hi := intRange(ft.Tp, ft.Unsigned())
		if d.Kind() == types.KindString {
			s := strings.TrimSpace(d.Str())
			if _, tr := types.ToFloat(d); tr || s == "" {
				if err := warnOrFail(badValue("integer")); err != nil {
					return types.Null, err
				}
			}
		}
		if ft.Unsigned() {
			u, neg, over, _ := types.ToUint(d)
			if neg || over || u > hi {
				if err := warnOrFail(outOfRange()); err != nil {
					return types.Null, err
				}
				if neg {
					u = 0
				} else {
					u = hi
				}
			}
			return types.NewUint(u), nil
		}
		v, over, _ := types.ToInt(d)
		if d.Kind() == types.KindUint && d.Uint() > math.MaxInt64 {
			over = true
		}
		if over || v < lo || (v > 0 && uint64(v) > hi) {
			if err := warnOrFail(outOfRange()); err != nil {
				return types.Null, err
			}
			if v < lo || (over && v < 0) {
				v = lo
			} else {
				v = int64(hi)
			}
		}
		return types.NewInt(v), nil
	case ft.Tp == mysql.TypeDouble || ft.Tp == mysql.TypeFloat:
		f, tr := types.ToFloat(d)
		if tr {
			if err := warnOrFail(badValue("double")); err != nil {
				return types.Null, err
			}
		}
		if ft.Tp == mysql.TypeFloat {
			if math.Abs(f) > math.MaxFloat32 {
				if err := warnOrFail(outOfRange()); err != nil {
					return types.Null, err
				}
				f = math.Copysign(math.MaxFloat32, f)
			}
			f = float64(float32(f))
		}
		if ft.Unsigned() && f < 0 {
			if err := warnOrFail(outOfRange()); err != nil {
				return types.Null, err
			}
			f = 0
		}
		return types.NewFloat(f), nil
	case ft.Tp == mysql.TypeNewDecimal:
		dec, tr := types.ToDecimal(d)
		if tr {
			if err := warnOrFail(badValue("decimal")); err != nil {
				return types.Null, err
			}
		}
		r := new(apd.Decimal)
		if _, err := types.DecimalContext().Quantize(r, dec, -int32(ft.Decimal)); err != nil {
			return types.Null, outOfRange()
		}
		// Precision: digits before the point at most Flen-Decimal.
		intDigits := int64(r.NumDigits()) + int64(r.Exponent)
		if ft.Flen > 0 && intDigits > int64(ft.Flen-ft.Decimal) && !r.IsZero() {
			if err := warnOrFail(outOfRange()); err != nil {
				return types.Null, err
			}
			max := strings.Repeat("9", ft.Flen-ft.Decimal)
			if ft.Decimal > 0 {
				max += "." + strings.Repeat("9", ft.Decimal)
			}
			r, _ = types.ParseDecimal(max)
			if dec.Negative {
				r.Negative = true
			}
		}
		if ft.Unsigned() && r.Negative && !r.IsZero() {
			if err := warnOrFail(outOfRange()); err != nil {
				return types.Null, err
			}
			r = apd.New(0, -int32(ft.Decimal))
		}
		return types.NewDecimal(r), nil
	case ft.IsString():
		b := types.ToText(d)
		if ft.Tp == mysql.TypeEnum || ft.Tp == mysql.TypeSet {
			return types.NewBytes(b), nil
		}
		limit := ft.Flen
		if limit > 0 {
			n := len(b)
			if !ft.IsBinary() {
				n = utf8.RuneCount(b)
			}
			if n > limit {
				if err := warnOrFail(errno.New(errno.ErDataTooLong, "Data too long for column '%s' at row 1", col.Name)); err != nil {
					return types.Null, err
				}
				if ft.IsBinary() {
					b = b[:limit]
				} else {
					b = truncateRunes(b, limit)
				}
			}
		}
		if ft.Tp == mysql.TypeString && !ft.IsBinary() {
			// CHAR drops trailing spaces on read; store it trimmed.
			b = []byte(strings.TrimRight(string(b), " "))
		}
		return types.NewCollatedBytes(b, ft.Collation()), nil
	case ft.Tp == mysql.TypeDate || ft.Tp == mysql.TypeDatetime || ft.Tp == mysql.TypeTimestamp:
		tt := types.TimeDatetime
		switch ft.Tp {
		case mysql.TypeDate:
			tt = types.TimeDate
		case mysql.TypeTimestamp:
			tt = types.TimeTimestamp
		}
		var t types.Time
		switch d.Kind() {
		case types.KindTime:
			t, _, _ = d.Time()
		case types.KindInt, types.KindUint, types.KindDecimal, types.KindFloat:
			f, _ := types.ToFloat(d)
			s := strings.TrimSuffix(apd.New(int64(f), 0).Text('f'), ".0")
			var err error
			if t, err = types.ParseTime(s); err != nil {
				if err := warnOrFail(errno.New(errno.ErTruncatedWrongValue, "Incorrect %s value: '%s' for column '%s' at row 1", typeName(ft.Tp), d.String(), col.Name)); err != nil {
					return types.Null, err
				}
				t = 0
			}
		default:
			var err error
			if t, err = types.ParseTime(d.Str()); err != nil {
				if err := warnOrFail(errno.New(errno.ErTruncatedWrongValue, "Incorrect %s value: '%s' for column '%s' at row 1", typeName(ft.Tp), d.String(), col.Name)); err != nil {
					return types.Null, err
				}
				t = 0
			}
		}
		if tt == types.TimeDate {
			t = t.DateOnly()
		} else {
			t = t.Round(ft.Decimal)
		}
		return types.NewTime(t, tt, ft.Decimal), nil
	case ft.Tp == mysql.TypeDuration:
		if d.Kind() == types.KindDuration {
			return types.NewDuration(d.Duration(), ft.Decimal), nil
		}
		us, err := types.ParseDuration(string(types.ToText(d)))
		if err != nil {
			if err := warnOrFail(errno.New(errno.ErTruncatedWrongValue, "Incorrect time value: '%s' for column '%s' at row 1", d.String(), col.Name)); err != nil {
				return types.Null, err
			}
		}
		return types.NewDuration(us, ft.Decimal), nil
	}
	return d, nil
}

func typeName(tp byte) string {
	switch tp {
	case mysql.TypeDate:
		return "date"
	case mysql.TypeTimestamp:
		return "timestamp"
	}
	return "datetime"
}

func truncateRunes(b []byte, n int) []byte {
	i := 0
	for k := 0; k < n && i < len(b); k++ {
		_, sz := utf8.DecodeRune(b[i:])
		i += sz
	}
	return b[:i]
}
