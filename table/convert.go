package table

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// This file converts values to column types for storing, with MySQL's
// rules for what fits. A value that does not fit is an error in strict
// mode (sql_mode STRICT_TRANS_TABLES or STRICT_ALL_TABLES, unless the
// statement says IGNORE); otherwise it is clipped, truncated or zeroed,
// with a warning:
//
//	out of range numbers        1264, clipped to the type's range
//	'12abc' into a number       1265 (the numeric prefix is kept)
//	'abc' or '' into a number   1366, stored as 0
//	strings over the length     1406 in strict mode, 1265 otherwise
//	invalid dates and times     1292 in strict mode, 1265 otherwise (zero)
//	invalid ENUM and SET values 1265 (the empty value, the valid members)
//
// Trailing spaces cut from a string only give a note.

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

// converter is one conversion of a value for a column.
type converter struct {
	ctx    *expression.Ctx
	col    *catalog.ColumnInfo
	d      types.Datum
	strict bool
	row    int
}

// fail reports e: an error in strict mode, else a warning.
func (c *converter) fail(e *errno.Error) error {
	if c.strict {
		return e
	}
	if c.ctx != nil {
		c.ctx.Warn(e)
	}
	return nil
}

func (c *converter) note(e *errno.Error) {
	if c.ctx != nil {
		c.ctx.Note(e)
	}
}

func (c *converter) outOfRange() *errno.Error {
	return errno.New(errno.ErWarnDataOutOfRange, "Out of range value for column '%s' at row %d", c.col.Name, c.row)
}

func (c *converter) truncated() *errno.Error {
	return errno.New(errno.WarnDataTruncated, "Data truncated for column '%s' at row %d", c.col.Name, c.row)
}

func (c *converter) incorrect(kind string) *errno.Error {
	return errno.New(errno.ErTruncatedWrongValueFor, "Incorrect %s value: '%s' for column '%s' at row %d", kind, c.d.String(), c.col.Name, c.row)
}

// badTime is an invalid date or time: 1292 in strict mode, else 1265.
func (c *converter) badTime(kind string) error {
	if c.strict {
		return errno.New(errno.ErTruncatedWrongValue, "Incorrect %s value: '%s' for column '%s' at row %d", kind, c.d.String(), c.col.Name, c.row)
	}
	return c.fail(c.truncated())
}

// numericText checks a string stored into a number column: no number at
// all is 1366, a number followed by other characters 1265.
func (c *converter) numericText(kind string) error {
	if c.d.Kind() != types.KindString {
		return nil
	}
	s := bytes.TrimSpace(c.d.Bytes())
	if !startsNumeric(s) {
		return c.fail(c.incorrect(kind))
	}
	if _, tr := types.ToFloat(c.d); tr {
		return c.fail(c.truncated())
	}
	return nil
}

func startsNumeric(s []byte) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) > 0 && s[0] == '.' {
		s = s[1:]
	}
	return len(s) > 0 && s[0] >= '0' && s[0] <= '9'
}

// Convert converts d to a value of col's type for storing, as an
// INSERT or UPDATE does (see the top of this file). ctx may be nil: no
// warnings, never strict.
func Convert(ctx *expression.Ctx, d types.Datum, col *catalog.ColumnInfo) (types.Datum, error) {
	if d.IsNull() {
		return d, nil
	}
	c := &converter{ctx: ctx, col: col, d: d, row: 1}
	if ctx != nil {
		c.strict = ctx.Strict
		if ctx.RowNum > 0 {
			c.row = ctx.RowNum
		}
	}
	ft := &col.Type
	switch {
	case ft.Tp == mysql.TypeYear:
		return c.year()
	case ft.IsInteger():
		return c.integer()
	case ft.Tp == mysql.TypeDouble || ft.Tp == mysql.TypeFloat:
		return c.float()
	case ft.Tp == mysql.TypeNewDecimal:
		return c.decimal()
	case ft.Tp == mysql.TypeEnum:
		return c.enum()
	case ft.Tp == mysql.TypeSet:
		return c.set()
	case ft.Tp == mysql.TypeJSON:
		return c.json()
	case ft.IsString():
		return c.str()
	case ft.Tp == mysql.TypeDate || ft.Tp == mysql.TypeDatetime || ft.Tp == mysql.TypeTimestamp:
		return c.datetime()
	case ft.Tp == mysql.TypeDuration:
		return c.duration()
	}
	return d, nil
}

func (c *converter) integer() (types.Datum, error) {
	ft := &c.col.Type
	d := c.d
	lo, hi := intRange(ft.Tp, ft.Unsigned())
	if err := c.numericText("integer"); err != nil {
		return types.Null, err
	}
	if ft.Unsigned() {
		u, neg, over, _ := types.ToUint(d)
		if neg || over || u > hi {
			if err := c.fail(c.outOfRange()); err != nil {
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
	if (d.Kind() == types.KindUint || d.IsEnumOrSet()) && d.Uint() > math.MaxInt64 {
		over, v = true, math.MaxInt64
	}
	if over || v < lo || (v > 0 && uint64(v) > hi) {
		if err := c.fail(c.outOfRange()); err != nil {
			return types.Null, err
		}
		if v < lo || (over && v < 0) {
			v = lo
		} else {
			v = int64(hi)
		}
	}
	return types.NewInt(v), nil
}

// year converts to YEAR: 1901..2155, or 0; one- and two-digit values
// mean 2000..2069 (below 70) and 1970..1999, except the number 0, which
// is the zero year (the string '0' is 2000).
func (c *converter) year() (types.Datum, error) {
	d := c.d
	if d.Kind() == types.KindTime {
		t, _, _ := d.Time()
		return types.NewInt(int64(t.Year())), nil
	}
	if err := c.numericText("integer"); err != nil {
		return types.Null, err
	}
	v, over, _ := types.ToInt(d)
	isText := d.Kind() == types.KindString
	switch {
	case over:
	case v == 0 && !isText:
		return types.NewInt(0), nil
	case v >= 0 && v < 70:
		return types.NewInt(2000 + v), nil
	case v >= 70 && v < 100:
		return types.NewInt(1900 + v), nil
	case v >= 1901 && v <= 2155:
		return types.NewInt(v), nil
	}
	if err := c.fail(c.outOfRange()); err != nil {
		return types.Null, err
	}
	return types.NewInt(0), nil
}

func (c *converter) float() (types.Datum, error) {
	ft := &c.col.Type
	if err := c.numericText("double"); err != nil {
		return types.Null, err
	}
	f, _ := types.ToFloat(c.d)
	if ft.Tp == mysql.TypeFloat && math.Abs(f) > math.MaxFloat32 {
		if err := c.fail(c.outOfRange()); err != nil {
			return types.Null, err
		}
		f = math.Copysign(math.MaxFloat32, f)
	}
	if ft.Decimal > 0 && ft.Decimal < 31 {
		// FLOAT(M,D), DOUBLE(M,D): rounded to D decimals, at most M digits.
		p := math.Pow(10, float64(ft.Decimal))
		f = math.Round(f*p) / p
		if ft.Flen > 0 {
			limit := math.Pow(10, float64(ft.Flen-ft.Decimal)) - 1/p
			if math.Abs(f) > limit {
				if err := c.fail(c.outOfRange()); err != nil {
					return types.Null, err
				}
				f = math.Copysign(limit, f)
			}
		}
	}
	if ft.Tp == mysql.TypeFloat {
		f = float64(float32(f))
	}
	if ft.Unsigned() && f < 0 {
		if err := c.fail(c.outOfRange()); err != nil {
			return types.Null, err
		}
		f = 0
	}
	return types.NewFloat(f), nil
}

func (c *converter) decimal() (types.Datum, error) {
	ft := &c.col.Type
	if err := c.numericText("decimal"); err != nil {
		return types.Null, err
	}
	dec, _ := types.ToDecimal(c.d)
	r := new(apd.Decimal)
	if _, err := types.DecimalContext().Quantize(r, dec, -int32(ft.Decimal)); err != nil {
		r.Set(dec)
		r.Exponent = 1 << 20 // far out of range: clipped below
	}
	rounded := r.Cmp(dec) != 0 && c.d.Kind() != types.KindFloat
	// Precision: digits before the point at most Flen-Decimal.
	intDigits := int64(r.NumDigits()) + int64(r.Exponent)
	if ft.Flen > 0 && intDigits > int64(ft.Flen-ft.Decimal) && !r.IsZero() {
		rounded = false
		if err := c.fail(c.outOfRange()); err != nil {
			return types.Null, err
		}
		max := strings.Repeat("9", ft.Flen-ft.Decimal)
		if ft.Decimal > 0 {
			max += "." + strings.Repeat("9", ft.Decimal)
		}
		neg := dec.Negative
		r, _ = types.ParseDecimal(max)
		r.Negative = neg
	}
	if ft.Unsigned() && r.Negative && !r.IsZero() {
		if err := c.fail(c.outOfRange()); err != nil {
			return types.Null, err
		}
		r = apd.New(0, -int32(ft.Decimal))
		rounded = false
	}
	if rounded {
		c.note(c.truncated())
	}
	return types.NewDecimal(r), nil
}

// isBlobType reports TEXT and BLOB types, whose lengths count bytes.
func isBlobType(tp byte) bool {
	switch tp {
	case mysql.TypeTinyBlob, mysql.TypeBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		return true
	}
	return false
}

func (c *converter) str() (types.Datum, error) {
	ft := &c.col.Type
	b := types.ToText(c.d)
	binary := ft.IsBinary()
	if !binary && !utf8.Valid(b) {
		if err := c.fail(errno.New(errno.ErTruncatedWrongValueFor, "Incorrect string value: '%s' for column '%s' at row %d", hexPrefix(b), c.col.Name, c.row)); err != nil {
			return types.Null, err
		}
		b = []byte(strings.ToValidUTF8(string(b), "?"))
	}
	if limit := ft.Flen; limit > 0 {
		n := len(b)
		if !binary && !isBlobType(ft.Tp) && n > limit {
			// Characters, not bytes; a text of no more bytes than the
			// limit has no more characters either.
			n = utf8.RuneCount(b)
		}
		if n > limit {
			var cut []byte
			if binary || isBlobType(ft.Tp) {
				cut = b[:limit]
				if !binary {
					cut = truncateValidUTF8(cut)
				}
			} else {
				cut = truncateRunes(b, limit)
			}
			switch {
			case !binary && len(bytes.TrimRight(b[len(cut):], " ")) == 0:
				// Only trailing spaces are lost: a note (none for CHAR,
				// which drops them anyway).
				if ft.Tp != mysql.TypeString {
					c.note(c.truncated())
				}
			case c.strict:
				return types.Null, errno.New(errno.ErDataTooLong, "Data too long for column '%s' at row %d", c.col.Name, c.row)
			default:
				if err := c.fail(c.truncated()); err != nil {
					return types.Null, err
				}
			}
			b = cut
		}
	}
	switch {
	case ft.Tp == mysql.TypeString && binary && len(b) < ft.Flen:
		// BINARY(n) pads with zero bytes.
		b = append(append(make([]byte, 0, ft.Flen), b...), make([]byte, ft.Flen-len(b))...)
	case ft.Tp == mysql.TypeString && !binary:
		// CHAR drops trailing spaces on read; store it trimmed.
		b = bytes.TrimRight(b, " ")
	}
	return types.NewCollatedBytes(b, ft.Collation()), nil
}

// hexPrefix shows the start of an invalid string as MySQL's 1366 does.
func hexPrefix(b []byte) string {
	var sb strings.Builder
	for i, x := range b {
		if i == 6 {
			sb.WriteString("...")
			break
		}
		fmt.Fprintf(&sb, "\\x%02X", x)
	}
	return sb.String()
}

func truncateValidUTF8(b []byte) []byte {
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return b
}

// enum converts to ENUM: a member named by the string (as the column's
// collation compares), or numbered by the number (1-based). Anything else
// is invalid: the empty value, number 0.
func (c *converter) enum() (types.Datum, error) {
	ft := &c.col.Type
	coll := ft.Collation()
	var n int
	switch d := c.d; d.Kind() {
	case types.KindString:
		n = enumIndex(ft.Elems, d.Bytes(), coll)
		if n == 0 {
			if v, err := strconv.ParseUint(string(bytes.TrimSpace(d.Bytes())), 10, 64); err == nil && v >= 1 && v <= uint64(len(ft.Elems)) {
				n = int(v)
			}
		}
	case types.KindEnum:
		n = enumIndex(ft.Elems, d.Bytes(), coll)
	default:
		v, neg, over, _ := types.ToUint(d)
		if !neg && !over && v >= 1 && v <= uint64(len(ft.Elems)) {
			n = int(v)
		}
	}
	if n == 0 {
		if err := c.fail(c.truncated()); err != nil {
			return types.Null, err
		}
		return types.NewEnum(0, nil, coll), nil
	}
	return types.NewEnum(uint64(n), []byte(ft.Elems[n-1]), coll), nil
}

// enumIndex is the 1-based number of the member named s, or 0.
func enumIndex(elems []string, s []byte, coll types.Collation) int {
	for i, e := range elems {
		if string(s) == e {
			return i + 1
		}
	}
	for i, e := range elems {
		if types.CompareStrings(s, []byte(e), coll) == 0 {
			return i + 1
		}
	}
	return 0
}

// set converts to SET: members named by the comma-separated string, or
// the bits of the number.
func (c *converter) set() (types.Datum, error) {
	ft := &c.col.Type
	coll := ft.Collation()
	var bits uint64
	valid := true
	switch d := c.d; d.Kind() {
	case types.KindString, types.KindSet, types.KindEnum:
		bits, valid = setBits(ft.Elems, d.Bytes(), coll)
		if !valid && d.Kind() == types.KindString {
			if v, err := strconv.ParseUint(string(bytes.TrimSpace(d.Bytes())), 10, 64); err == nil {
				bits, valid = v, len(ft.Elems) == 64 || v < 1<<len(ft.Elems)
			}
		}
	default:
		v, neg, over, _ := types.ToUint(d)
		bits, valid = v, !neg && !over && (len(ft.Elems) == 64 || v < 1<<len(ft.Elems))
	}
	if !valid {
		if err := c.fail(c.truncated()); err != nil {
			return types.Null, err
		}
		if len(ft.Elems) < 64 {
			bits &= 1<<len(ft.Elems) - 1
		}
	}
	return types.NewSet(bits, setText(ft.Elems, bits), coll), nil
}

// setBits are the members a SET string names; valid is false if it names
// others too (which are left out).
func setBits(elems []string, s []byte, coll types.Collation) (bits uint64, valid bool) {
	valid = true
	if len(s) == 0 {
		return 0, true
	}
	for _, part := range bytes.Split(s, []byte(",")) {
		n := enumIndex(elems, part, coll)
		if n == 0 {
			if len(part) > 0 {
				valid = false
			}
			continue
		}
		bits |= 1 << (n - 1)
	}
	return bits, valid
}

// setText names the members in bits, in their definition order.
func setText(elems []string, bits uint64) []byte {
	var b []byte
	for i, e := range elems {
		if bits&(1<<i) != 0 {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = append(b, e...)
		}
	}
	return b
}

// TIMESTAMP holds 1970-01-01 00:00:01 to 2038-01-19 03:14:07 (UTC), and
// the zero value.
var (
	minTimestamp = types.MakeTime(1970, 1, 1, 0, 0, 1, 0)
	maxTimestamp = types.MakeTime(2038, 1, 19, 3, 14, 7, 999999)
)

func (c *converter) datetime() (types.Datum, error) {
	ft := &c.col.Type
	d := c.d
	tt := types.TimeDatetime
	kind := "datetime"
	switch ft.Tp {
	case mysql.TypeDate:
		tt, kind = types.TimeDate, "date"
	case mysql.TypeTimestamp:
		tt = types.TimeTimestamp
	}
	var t types.Time
	hasTime := false
	switch d.Kind() {
	case types.KindTime:
		var dtt types.TimeType
		t, dtt, _ = d.Time()
		hasTime = dtt != types.TimeDate
	case types.KindDuration:
		// A TIME is today at that time.
		now := types.FromGoTime(c.now()).DateOnly()
		g := now.GoTime(time.UTC).Add(durationOf(d.Duration()))
		t, hasTime = types.FromGoTime(g), true
	case types.KindInt, types.KindUint, types.KindDecimal, types.KindFloat:
		f, _ := types.ToFloat(d)
		if f == 0 {
			t = 0
			break
		}
		s := strconv.FormatFloat(math.Trunc(f), 'f', 0, 64)
		var err error
		if t, err = types.ParseTime(s); err != nil {
			if err := c.badTime(kind); err != nil {
				return types.Null, err
			}
			return types.NewTime(0, tt, ft.Decimal), nil
		}
		hasTime = len(s) > 8
	default:
		s := strings.TrimSpace(d.Str())
		var err error
		if t, err = types.ParseTime(s); err != nil {
			if err := c.badTime(kind); err != nil {
				return types.Null, err
			}
			return types.NewTime(0, tt, ft.Decimal), nil
		}
		hasTime = strings.ContainsAny(s, " T:") || len(s) > 8
	}
	if err := c.checkZeroDate(t, kind); err != nil {
		return types.Null, err
	}
	if tt == types.TimeDate {
		if hasTime && t.Hour()+t.Minute()+t.Second()+t.Microsecond() != 0 {
			c.note(c.truncated())
		}
		t = t.DateOnly()
	} else {
		t = t.Round(ft.Decimal)
	}
	if tt == types.TimeTimestamp && t != 0 && (t < minTimestamp || t > maxTimestamp) {
		if err := c.badTime(kind); err != nil {
			return types.Null, err
		}
		t = 0
	}
	return types.NewTime(t, tt, ft.Decimal), nil
}

// checkZeroDate applies NO_ZERO_DATE and NO_ZERO_IN_DATE.
func (c *converter) checkZeroDate(t types.Time, kind string) error {
	if c.ctx == nil {
		return nil
	}
	mode := c.ctx.Mode
	switch {
	case t == 0 && mode&expression.ModeNoZeroDate != 0:
		if c.strict {
			return errno.New(errno.ErTruncatedWrongValue, "Incorrect %s value: '%s' for column '%s' at row %d", kind, c.d.String(), c.col.Name, c.row)
		}
		c.ctx.Warn(c.truncated())
	case t != 0 && (t.Month() == 0 || t.Day() == 0) && mode&expression.ModeNoZeroInDate != 0:
		if c.strict {
			return errno.New(errno.ErTruncatedWrongValue, "Incorrect %s value: '%s' for column '%s' at row %d", kind, c.d.String(), c.col.Name, c.row)
		}
		c.ctx.Warn(c.truncated())
	}
	return nil
}

const maxDuration = (838*3600+59*60+59)*1_000_000 + 999999

func (c *converter) duration() (types.Datum, error) {
	ft := &c.col.Type
	d := c.d
	var us int64
	switch d.Kind() {
	case types.KindDuration:
		us = d.Duration()
	case types.KindTime:
		t, _, _ := d.Time()
		us = ((int64(t.Hour())*60+int64(t.Minute()))*60+int64(t.Second()))*1_000_000 + int64(t.Microsecond())
	default:
		text := string(types.ToText(d))
		var err error
		if us, err = types.ParseDuration(text); err != nil {
			// A datetime string gives its time of day.
			if t, terr := types.ParseTime(text); terr == nil && strings.ContainsAny(text, " T") {
				us = ((int64(t.Hour())*60+int64(t.Minute()))*60+int64(t.Second()))*1_000_000 + int64(t.Microsecond())
				break
			}
			if err := c.badTime("time"); err != nil {
				return types.Null, err
			}
			return types.NewDuration(0, ft.Decimal), nil
		}
	}
	us = types.RoundMicros(us, ft.Decimal)
	if us > maxDuration || us < -maxDuration {
		if c.strict {
			return types.Null, errno.New(errno.ErTruncatedWrongValue, "Incorrect time value: '%s' for column '%s' at row %d", d.String(), c.col.Name, c.row)
		}
		if err := c.fail(c.outOfRange()); err != nil {
			return types.Null, err
		}
		limit := int64(838*3600+59*60+59) * 1_000_000
		if us < 0 {
			limit = -limit
		}
		us = limit
	}
	return types.NewDuration(us, ft.Decimal), nil
}

func truncateRunes(b []byte, n int) []byte {
	i := 0
	for k := 0; k < n && i < len(b); k++ {
		_, sz := utf8.DecodeRune(b[i:])
		i += sz
	}
	return b[:i]
}

// json converts to JSON: JSON values as they are, strings parsed as JSON
// text (invalid text is always an error, 3140), numbers as JSON numbers.
func (c *converter) json() (types.Datum, error) {
	d := c.d
	if d.IsJSON() {
		return d, nil
	}
	j, err := expression.ToJSON(d)
	if err != nil {
		var se *types.JSONSyntaxError
		msg, pos := "The document is empty.", 0
		if errors.As(err, &se) {
			msg, pos = se.Msg, se.Pos
		}
		return types.Null, errno.New(errno.ErInvalidJSONText, "Invalid JSON text: \"%s\" at position %d in value for column '%s'.", msg, pos, c.col.Name)
	}
	return types.JSONDatum(j), nil
}

func (c *converter) now() time.Time {
	if c.ctx != nil && !c.ctx.Now.IsZero() {
		return c.ctx.Now
	}
	return time.Now()
}

func durationOf(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
