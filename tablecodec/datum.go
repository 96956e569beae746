package tablecodec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
)

// Memcomparable datums, for keys. Each starts with a flag that orders
// NULL first; within a kind the encoding orders as the values do:
//
//	0x00                         NULL
//	0x01 EncodeBytes(b)          string: its bytes (binary, JSON,
//	                             utf8mb4_nopad_bin), without trailing
//	                             spaces (utf8mb4_bin)
//	0x02 EncodeBytes(weights)    utf8mb4_general_ci string: its
//	                             characters' weights, 2 bytes each, without
//	                             trailing spaces (types.AppendSortKey)
//	0x03 EncodeInt(v)            int
//	0x04 EncodeUint(v)           uint; ENUM and SET by their number
//	                             (by their text, flag 0x01, in tables
//	                             from before collations)
//	0x05 EncodeFloat(f)          float
//	0x06 decimal (see below)     decimal
//	0x07 EncodeInt(µs)           duration
//	0x08 tt fsp EncodeUint(t)    date/time
//
// A column holds one kind, so values in one index position always compare
// within a kind. Strings that compare equal under their collation have
// equal keys: 'a' and 'A ' are one key under utf8mb4_general_ci, which is
// what makes a unique index reject the second; the value itself is only
// in the row.
const (
	flagNull     = 0x00
	flagBytes    = 0x01
	flagWeights  = 0x02
	flagInt      = 0x03
	flagUint     = 0x04
	flagFloat    = 0x05
	flagDecimal  = 0x06
	flagDuration = 0x07
	flagTime     = 0x08
)

// EncodeKeyDatum appends d's memcomparable encoding.
func EncodeKeyDatum(dst []byte, d types.Datum) ([]byte, error) {
	switch d.Kind() {
	case types.KindNull:
		return append(dst, flagNull), nil
	case types.KindString:
		switch c := d.Collation(); c {
		case types.CollationGeneralCI:
			var buf [64]byte
			return codec.EncodeBytes(append(dst, flagWeights), types.AppendSortKey(buf[:0], d.Bytes(), c)), nil
		case types.CollationBin:
			return codec.EncodeBytes(append(dst, flagBytes), types.AppendSortKey(nil, d.Bytes(), c)), nil
		}
		return codec.EncodeBytes(append(dst, flagBytes), d.Bytes()), nil
	case types.KindInt:
		return codec.EncodeInt(append(dst, flagInt), d.Int()), nil
	case types.KindUint:
		return codec.EncodeUint(append(dst, flagUint), d.Uint()), nil
	case types.KindEnum, types.KindSet:
		if d.Collation() == types.CollationNoPadBin {
			// Columns of tables created before ENUM and SET had numbers
			// keyed their text.
			return codec.EncodeBytes(append(dst, flagBytes), d.Bytes()), nil
		}
		// By member number, the order ORDER BY sorts them in.
		return codec.EncodeUint(append(dst, flagUint), d.EnumSetValue()), nil
	case types.KindFloat:
		return codec.EncodeFloat(append(dst, flagFloat), d.Float()), nil
	case types.KindDecimal:
		return encodeDecimal(append(dst, flagDecimal), d.Decimal()), nil
	case types.KindDuration:
		return codec.EncodeInt(append(dst, flagDuration), d.Duration()), nil
	case types.KindTime:
		t, tt, fsp := d.Time()
		return codec.EncodeUint(append(dst, flagTime, byte(tt), byte(fsp)), uint64(t)), nil
	}
	return nil, fmt.Errorf("tablecodec: cannot encode %s in a key", d.Kind())
}

// DecodeKeyDatum decodes one EncodeKeyDatum encoding at the front of b. A
// utf8mb4_general_ci string decodes to its weights' characters, a
// utf8mb4_bin one without its trailing spaces.
func DecodeKeyDatum(b []byte) (rest []byte, d types.Datum, err error) {
	if len(b) == 0 {
		return nil, d, ErrBadKey
	}
	flag, b := b[0], b[1:]
	switch flag {
	case flagNull:
		return b, types.Null, nil
	case flagBytes:
		rest, v, err := codec.DecodeBytes(b, nil)
		return rest, types.NewBytes(v), err
	case flagWeights:
		// Not the value: a string of the weights' characters (mostly
		// upper case, without accents), as error messages show it.
		rest, v, err := codec.DecodeBytes(b, nil)
		if err != nil {
			return nil, d, err
		}
		var s []byte
		for i := 0; i+1 < len(v); i += 2 {
			s = utf8.AppendRune(s, rune(v[i])<<8|rune(v[i+1]))
		}
		return rest, types.NewBytes(s), nil
	case flagInt:
		rest, v, err := codec.DecodeInt(b)
		return rest, types.NewInt(v), err
	case flagUint:
		rest, v, err := codec.DecodeUint(b)
		return rest, types.NewUint(v), err
	case flagFloat:
		rest, v, err := codec.DecodeFloat(b)
		return rest, types.NewFloat(v), err
	case flagDecimal:
		rest, v, err := decodeDecimal(b)
		return rest, types.NewDecimal(v), err
	case flagDuration:
		rest, v, err := codec.DecodeInt(b)
		return rest, types.NewDuration(v, 6), err
	case flagTime:
		if len(b) < 2 {
			return nil, d, ErrBadKey
		}
		tt, fsp := types.TimeType(b[0]), int(int8(b[1]))
		if !validTime(tt, fsp) {
			return nil, d, ErrBadKey
		}
		rest, v, err := codec.DecodeUint(b[2:])
		return rest, types.NewTime(types.Time(v), tt, fsp), err
	}
	return nil, d, ErrBadKey
}

// Decimals: a value is 0.d1d2…dn × 10^e with d1 ≠ 0 and dn ≠ 0.
//
//	zero:      0x02
//	positive:  0x03 EncodeInt(e)  (d+1)… 0x00
//	negative:  0x01 EncodeInt(-e) (10-d)… 0x0B
//
// For positives a larger exponent is larger and, at equal exponents, the
// digit strings compare as the fractions do (the 0x00 terminator sorts a
// shorter string first). Negatives invert both.
func encodeDecimal(dst []byte, v *apd.Decimal) []byte {
	if v.IsZero() {
		return append(dst, 0x02)
	}
	digits := strings.TrimRight(v.Coeff.String(), "0")
	trailing := len(v.Coeff.String()) - len(digits)
	e := int64(len(digits)) + int64(v.Exponent) + int64(trailing)
	if !v.Negative {
		dst = codec.EncodeInt(append(dst, 0x03), e)
		for i := 0; i < len(digits); i++ {
			dst = append(dst, digits[i]-'0'+1)
		}
		return append(dst, 0x00)
	}
	dst = codec.EncodeInt(append(dst, 0x01), -e)
	for i := 0; i < len(digits); i++ {
		dst = append(dst, 10-(digits[i]-'0'))
	}
	return append(dst, 0x0B)
}

// maxKeyDecimalExponent bounds the exponent a stored key's decimal may
// have: far beyond any DECIMAL column's (65 digits), and small enough that
// printing the value stays cheap.
const maxKeyDecimalExponent = 1 << 16

func decodeDecimal(b []byte) ([]byte, *apd.Decimal, error) {
	if len(b) == 0 {
		return nil, nil, ErrBadKey
	}
	sign := b[0]
	if sign == 0x02 {
		return b[1:], apd.New(0, 0), nil
	}
	if sign != 0x01 && sign != 0x03 {
		return nil, nil, ErrBadKey
	}
	rest, e, err := codec.DecodeInt(b[1:])
	if err != nil {
		return nil, nil, err
	}
	if e < -maxKeyDecimalExponent || e > maxKeyDecimalExponent {
		return nil, nil, ErrBadKey
	}
	var sb strings.Builder
	i := 0
	for ; i < len(rest); i++ {
		c := rest[i]
		if (sign == 0x03 && c == 0x00) || (sign == 0x01 && c == 0x0B) {
			break
		}
		if c < 1 || c > 10 {
			return nil, nil, ErrBadKey // not an encoded digit
		}
		if sign == 0x03 {
			sb.WriteByte('0' + c - 1)
		} else {
			sb.WriteByte('0' + 10 - c)
		}
	}
	if i == len(rest) || i == 0 {
		return nil, nil, ErrBadKey // no terminator, or no digits
	}
	digits := sb.String()
	if sign == 0x01 {
		e = -e
	}
	s := "0." + digits + "E" + strconv.FormatInt(e, 10)
	if sign == 0x01 {
		s = "-" + s
	}
	d, _, err := apd.NewFromString(s)
	if err != nil {
		return nil, nil, ErrBadKey
	}
	return rest[i+1:], d, nil
}
