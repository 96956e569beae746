// Package types holds Basalt's SQL values: the Datum, its kinds, and the
// MySQL rules for comparing, converting and printing them.
package types

import (
	"math"
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

// Kind is the kind of value a Datum holds.
type Kind uint8

// The kinds of Datum. Their order is the order of the memcomparable flags
// and of comparisons between incomparable kinds (NULL sorts first).
const (
	KindNull Kind = iota
	KindInt
	KindUint
	KindFloat
	KindDecimal
	KindString // text or binary string: the column's collation decides
	KindTime   // DATE, DATETIME or TIMESTAMP
	KindDuration
	// KindEnum is an ENUM value: its member's text and 1-based number
	// (0 for the empty string MySQL stores for an invalid value).
	KindEnum
	// KindSet is a SET value: its members' text, comma-separated, and
	// their bits.
	KindSet
)

func (k Kind) String() string {
	return [...]string{"null", "int", "uint", "float", "decimal", "string", "time", "duration", "enum", "set"}[k]
}

// Datum is one SQL value. The zero Datum is NULL. Datums are small values
// passed by value; a string Datum refers to its bytes without copying.
type Datum struct {
	k Kind
	// tt is the time type (TimeDate, TimeDatetime, TimeTimestamp) of a
	// KindTime, and its fractional-second precision in fsp.
	tt  TimeType
	fsp int8
	// c is a string's collation.
	c Collation
	i int64 // int, uint (bits), float (bits), time (packed), duration (µs)
	b []byte
	d *apd.Decimal
}

// Null is the NULL datum.
var Null = Datum{}

// NewInt returns an INT datum.
func NewInt(v int64) Datum { return Datum{k: KindInt, i: v} }

// NewUint returns an unsigned INT datum.
func NewUint(v uint64) Datum { return Datum{k: KindUint, i: int64(v)} }

// NewFloat returns a DOUBLE datum.
// NewFloat returns a DOUBLE. Negative zero is zero: MariaDB shows -0e0
// as 0, and an index must not tell the two apart.
func NewFloat(v float64) Datum {
	if v == 0 {
		v = 0
	}
	return Datum{k: KindFloat, i: int64(math.Float64bits(v))}
}

// NewString returns a string datum holding s.
func NewString(s string) Datum { return Datum{k: KindString, b: []byte(s)} }

// NewBytes returns a string datum referring to b (not copied).
func NewBytes(b []byte) Datum { return Datum{k: KindString, b: b} }

// NewCollatedBytes returns a string datum of collation c referring to b.
func NewCollatedBytes(b []byte, c Collation) Datum { return Datum{k: KindString, b: b, c: c} }

// NewDecimal returns a DECIMAL datum referring to d.
//
// A zero is made positive (d is changed): a DECIMAL has no negative zero,
// so -0.4 rounded is 0 and -0.00 * 1 is 0.00, as in MySQL.
func NewDecimal(d *apd.Decimal) Datum {
	if d != nil && d.Negative && d.IsZero() {
		d.Negative = false
	}
	return Datum{k: KindDecimal, d: d}
}

// NewTime returns a DATE/DATETIME/TIMESTAMP datum.
func NewTime(t Time, tt TimeType, fsp int) Datum {
	return Datum{k: KindTime, i: int64(t), tt: tt, fsp: int8(fsp)}
}

// NewDuration returns a TIME datum of the given microseconds.
func NewDuration(micros int64, fsp int) Datum {
	return Datum{k: KindDuration, i: micros, fsp: int8(fsp)}
}

// NewEnum returns an ENUM datum: member number n (1-based) named name, of
// collation c.
func NewEnum(n uint64, name []byte, c Collation) Datum {
	return Datum{k: KindEnum, i: int64(n), b: name, c: c}
}

// NewSet returns a SET datum: the members in bits, whose names joined by
// commas are text, of collation c.
func NewSet(bits uint64, text []byte, c Collation) Datum {
	return Datum{k: KindSet, i: int64(bits), b: text, c: c}
}

// NewBool returns 1 or 0.
func NewBool(b bool) Datum {
	if b {
		return NewInt(1)
	}
	return NewInt(0)
}

// Kind returns the datum's kind.
func (d Datum) Kind() Kind { return d.k }

// IsNull reports whether d is NULL.
func (d Datum) IsNull() bool { return d.k == KindNull }

// Int returns an INT datum's value.
func (d Datum) Int() int64 { return d.i }

// Uint returns an unsigned datum's value.
func (d Datum) Uint() uint64 { return uint64(d.i) }

// Float returns a DOUBLE datum's value.
func (d Datum) Float() float64 { return math.Float64frombits(uint64(d.i)) }

// Bytes returns a string datum's bytes (an ENUM's or SET's text).
func (d Datum) Bytes() []byte { return d.b }

// Collation returns a string datum's collation.
func (d Datum) Collation() Collation { return d.c }

// WithCollation returns d with collation c if d is a string (or an ENUM
// or SET), else d.
func (d Datum) WithCollation(c Collation) Datum {
	if d.k == KindString || d.k == KindEnum || d.k == KindSet {
		d.c = c
	}
	return d
}

// EnumSetValue returns an ENUM's member number or a SET's bits.
func (d Datum) EnumSetValue() uint64 { return uint64(d.i) }

// IsEnumOrSet reports an ENUM or SET datum.
func (d Datum) IsEnumOrSet() bool { return d.k == KindEnum || d.k == KindSet }

// Str returns a string datum's bytes as a string (copying).
func (d Datum) Str() string { return string(d.b) }

// Decimal returns a DECIMAL datum's value.
func (d Datum) Decimal() *apd.Decimal { return d.d }

// Time returns a time datum's packed value, type and precision.
func (d Datum) Time() (Time, TimeType, int) { return Time(d.i), d.tt, int(d.fsp) }

// Duration returns a TIME datum's microseconds.
func (d Datum) Duration() int64 { return d.i }

// Fsp returns the fractional-second precision of a time or duration.
func (d Datum) Fsp() int { return int(d.fsp) }

// Clone returns a datum that shares no memory with d.
func (d Datum) Clone() Datum {
	switch d.k {
	case KindString, KindEnum, KindSet:
		d.b = append([]byte(nil), d.b...)
	case KindDecimal:
		d.d = new(apd.Decimal).Set(d.d)
	}
	return d
}

// String renders d as MySQL's text protocol would.
func (d Datum) String() string {
	return string(d.AppendText(nil))
}

// AppendText appends d's text-protocol rendering to buf. NULL renders as
// "NULL" (the wire protocol sends NULL separately).
func (d Datum) AppendText(buf []byte) []byte {
	switch d.k {
	case KindNull:
		return append(buf, "NULL"...)
	case KindInt:
		return strconv.AppendInt(buf, d.i, 10)
	case KindUint:
		return strconv.AppendUint(buf, uint64(d.i), 10)
	case KindFloat:
		return AppendFloat(buf, d.Float(), 64)
	case KindDecimal:
		return AppendDecimal(buf, d.d)
	case KindString, KindEnum, KindSet:
		return append(buf, d.b...)
	case KindTime:
		return Time(d.i).Append(buf, d.tt, int(d.fsp))
	case KindDuration:
		return AppendDuration(buf, d.i, int(d.fsp))
	}
	return buf
}

// AppendDecimal appends the text of a DECIMAL value: never a negative
// zero (a decimal changed in place after NewDecimal may have become one).
func AppendDecimal(buf []byte, d *apd.Decimal) []byte {
	if d.IsZero() {
		if d.Exponent > 0 {
			return append(buf, '0') // apd writes 0E+7 as "00000000"
		}
		if d.Negative {
			z := *d
			z.Negative = false
			return append(buf, z.Text('f')...)
		}
	}
	return append(buf, d.Text('f')...)
}

// AppendFloat formats f as MySQL does: the shortest representation that
// reads back as the same value, in exponent form for very large or small
// magnitudes.
func AppendFloat(buf []byte, f float64, bits int) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(buf, "NULL"...)
	}
	if f == 0 {
		return append(buf, '0') // and -0 too, as MariaDB shows it
	}
	abs := math.Abs(f)
	if abs >= 1e15 || abs < 1e-15 {
		out := strconv.AppendFloat(buf, f, 'e', -1, bits)
		// MySQL writes 1e20 as 1e20, and 1.5e-20 as 1.5e-20.
		return trimExponentPlus(out, len(buf))
	}
	return strconv.AppendFloat(buf, f, 'f', -1, bits)
}

func trimExponentPlus(b []byte, from int) []byte {
	for i := from; i < len(b); i++ {
		if b[i] == 'e' && i+1 < len(b) && b[i+1] == '+' {
			return append(b[:i+1], b[i+2:]...)
		}
	}
	return b
}
