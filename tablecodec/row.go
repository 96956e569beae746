package tablecodec

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
)

// Row values. A row stores its non-NULL columns by column id, so that
// columns can be added and dropped without rewriting rows: a column missing
// from a row reads as NULL, or, for a column added later with a default,
// as that default (catalog.ColumnInfo.OriginDefault, which the caller
// supplies). A NULL in such a column is stored as an explicit marker
// (kind KindNull, no payload), which DecodeRow reports as present.
//
//	0x80 | ( colID (uvarint) | kind (1) | payload )*
//
//	int       zigzag varint          uint      uvarint
//	float     8 bytes LE bits        string    uvarint len | bytes
//	decimal   uvarint len | text     time      tt (1) | fsp (1) | uvarint packed
//	duration  fsp (1) | varint µs
//
// Strings are stored without their collation, and ENUM and SET values as
// their text: the reader gives them their column's type back.
const rowVersion = 0x80

// ErrBadRow reports a row value that cannot be decoded.
var ErrBadRow = errors.New("tablecodec: malformed row value")

// EncodeRow appends the encoding of the columns ids[i] = values[i].
func EncodeRow(dst []byte, ids []int64, values []types.Datum) []byte {
	dst = append(dst, rowVersion)
	for i, v := range values {
		if v.IsNull() {
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(ids[i]))
		if v.IsEnumOrSet() {
			// ENUM and SET values are stored as their text; the reader
			// has the column's members.
			v = types.NewBytes(v.Bytes())
		}
		dst = append(dst, byte(v.Kind()))
		switch v.Kind() {
		case types.KindInt:
			dst = binary.AppendVarint(dst, v.Int())
		case types.KindUint:
			dst = binary.AppendUvarint(dst, v.Uint())
		case types.KindFloat:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Float()))
		case types.KindString:
			dst = binary.AppendUvarint(dst, uint64(len(v.Bytes())))
			dst = append(dst, v.Bytes()...)
		case types.KindDecimal:
			s := v.Decimal().Text('f')
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		case types.KindTime:
			t, tt, fsp := v.Time()
			dst = append(dst, byte(tt), byte(fsp))
			dst = binary.AppendUvarint(dst, uint64(t))
		case types.KindDuration:
			dst = append(dst, byte(v.Fsp()))
			dst = binary.AppendVarint(dst, v.Duration())
		}
	}
	return dst
}

// AppendNull appends an explicit NULL for column id to an encoded row.
func AppendNull(dst []byte, id int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(id))
	return append(dst, byte(types.KindNull))
}

// DecodeRow decodes a row value into out: out[i] receives the column whose
// id is ids[i], or NULL if the row does not hold it. Columns the row holds
// that ids does not list are checked and skipped, not decoded (a reader of
// one column of a wide row copies one string). Strings are copied, so the
// row value may be reused afterwards. present, if not nil, records which
// columns the row held.
func DecodeRow(b []byte, ids []int64, out []types.Datum, present []bool) error {
	for i := range out {
		out[i] = types.Null
		if present != nil {
			present[i] = false
		}
	}
	if len(b) == 0 || b[0] != rowVersion {
		return ErrBadRow
	}
	b = b[1:]
	for len(b) > 0 {
		id, n := binary.Uvarint(b)
		if n <= 0 || len(b) < n+1 {
			return ErrBadRow
		}
		kind := types.Kind(b[n])
		b = b[n+1:]
		at := -1
		for i, want := range ids {
			if want == int64(id) {
				at = i
				break
			}
		}
		var d types.Datum
		var err error
		if b, d, err = decodeValue(b, kind, at >= 0); err != nil {
			return err
		}
		if at >= 0 {
			out[at] = d
			if present != nil {
				present[at] = true
			}
		}
	}
	return nil
}

// decodeValue decodes the payload of one column of kind at the start of
// b, and returns the rest of b. Unless want is set the payload is only
// checked, and the datum returned is NULL.
func decodeValue(b []byte, kind types.Kind, want bool) ([]byte, types.Datum, error) {
	var d types.Datum
	switch kind {
	case types.KindNull:
	case types.KindInt:
		v, n := binary.Varint(b)
		if n <= 0 {
			return nil, d, ErrBadRow
		}
		d, b = types.NewInt(v), b[n:]
	case types.KindUint:
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, d, ErrBadRow
		}
		d, b = types.NewUint(v), b[n:]
	case types.KindFloat:
		if len(b) < 8 {
			return nil, d, ErrBadRow
		}
		d, b = types.NewFloat(math.Float64frombits(binary.LittleEndian.Uint64(b))), b[8:]
	case types.KindString, types.KindDecimal:
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, d, ErrBadRow
		}
		raw := b[n : n+int(l)]
		b = b[n+int(l):]
		switch {
		case kind == types.KindString:
			if want {
				d = types.NewBytes(append([]byte(nil), raw...))
			}
		case !plainDecimal(raw):
			return nil, d, ErrBadRow // apd would also take NaN, Inf and exponents
		case want:
			dec, _, err := apd.NewFromString(string(raw))
			if err != nil {
				return nil, d, ErrBadRow
			}
			d = types.NewDecimal(dec)
		}
	case types.KindTime:
		if len(b) < 3 {
			return nil, d, ErrBadRow
		}
		tt, fsp := types.TimeType(b[0]), int(int8(b[1]))
		v, n := binary.Uvarint(b[2:])
		if n <= 0 || !validTime(tt, fsp) {
			return nil, d, ErrBadRow
		}
		d, b = types.NewTime(types.Time(v), tt, fsp), b[2+n:]
	case types.KindDuration:
		if len(b) < 2 {
			return nil, d, ErrBadRow
		}
		fsp := int(int8(b[0]))
		v, n := binary.Varint(b[1:])
		if n <= 0 || !validFsp(fsp) {
			return nil, d, ErrBadRow
		}
		d, b = types.NewDuration(v, fsp), b[1+n:]
	default:
		return nil, d, ErrBadRow
	}
	if !want {
		d = types.Null
	}
	return b, d, nil
}

// plainDecimal reports whether b is decimal text as EncodeRow writes it
// (apd's Text('f')): an optional minus sign, digits, and optionally a point
// and more digits.
func plainDecimal(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	digits := func() int {
		n := 0
		for n < len(b) && b[n] >= '0' && b[n] <= '9' {
			n++
		}
		b = b[n:]
		return n
	}
	if digits() == 0 {
		return false
	}
	if len(b) > 0 && b[0] == '.' {
		b = b[1:]
		if digits() == 0 {
			return false
		}
	}
	return len(b) == 0
}

// validTime reports whether tt and fsp are a time type and a precision
// that a column can have: anything else in a stored value is corruption,
// and would make the datum unprintable.
func validTime(tt types.TimeType, fsp int) bool {
	return tt <= types.TimeTimestamp && validFsp(fsp)
}

// validFsp reports whether fsp is a precision a column can have: 0 to 6,
// or -1, which columns declared without one store (the byte 0xFF).
func validFsp(fsp int) bool { return fsp >= -1 && fsp <= maxFsp }

// maxFsp is the most fractional-second digits a time or duration has.
const maxFsp = 6
