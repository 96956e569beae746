package server

import (
	"math"
	"strconv"
	"time"
)

// Kind is the class of a Value.
type Kind uint8

const (
	KindNull      Kind = iota // SQL NULL; the zero Value
	KindInt                   // signed 64-bit integer
	KindUint                  // unsigned 64-bit integer
	KindFloat32               // FLOAT
	KindFloat64               // DOUBLE
	KindDecimal               // DECIMAL, kept as its decimal text ("-12.340")
	KindBytes                 // character or byte string
	KindDate                  // DATE
	KindDateTime              // DATETIME
	KindTimestamp             // TIMESTAMP
	KindTime                  // TIME: a signed duration, ±838:59:59.999999
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindNull:
		return "NULL"
	case KindInt:
		return "INT"
	case KindUint:
		return "UINT"
	case KindFloat32:
		return "FLOAT"
	case KindFloat64:
		return "DOUBLE"
	case KindDecimal:
		return "DECIMAL"
	case KindBytes:
		return "BYTES"
	case KindDate:
		return "DATE"
	case KindDateTime:
		return "DATETIME"
	case KindTimestamp:
		return "TIMESTAMP"
	case KindTime:
		return "TIME"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one field of a row or one statement parameter as the protocol
// carries it. It is a small value type: copying it copies no string bytes,
// and a row of Values can be refilled without allocating.
//
// The bytes of a KindBytes or KindDecimal Value are not copied by the
// constructors. For parameters the server hands to a session, they point
// into the connection's read buffer and are valid only for the call; a
// session copies what it keeps. For row values a session hands to the
// server, they must stay unchanged until the next call to Rows.Next.
type Value struct {
	kind Kind
	n    uint64 // integer bits, float bits, packed date-time, or TIME microseconds
	b    []byte // KindBytes and KindDecimal
}

// DateTime is the calendar value of a DATE, DATETIME or TIMESTAMP. The zero
// DateTime is MySQL's zero date, 0000-00-00 00:00:00.
type DateTime struct {
	Year, Month, Day     int
	Hour, Minute, Second int
	Microsecond          int
}

// NullValue returns SQL NULL; so does the zero Value.
func NullValue() Value { return Value{} }

// IntValue returns a signed integer.
func IntValue(v int64) Value { return Value{kind: KindInt, n: uint64(v)} }

// UintValue returns an unsigned integer.
func UintValue(v uint64) Value { return Value{kind: KindUint, n: v} }

// Float32Value returns a FLOAT.
func Float32Value(v float32) Value {
	return Value{kind: KindFloat32, n: uint64(math.Float32bits(v))}
}

// Float64Value returns a DOUBLE.
func Float64Value(v float64) Value { return Value{kind: KindFloat64, n: math.Float64bits(v)} }

// DecimalValue returns a DECIMAL written as decimal text, e.g. "-1.50".
func DecimalValue(text []byte) Value { return Value{kind: KindDecimal, b: text} }

// BytesValue returns a string value holding b (not copied).
func BytesValue(b []byte) Value { return Value{kind: KindBytes, b: b} }

// StringValue returns a string value holding a copy of s.
func StringValue(s string) Value { return Value{kind: KindBytes, b: []byte(s)} }

// DateValue returns a DATE.
func DateValue(year, month, day int) Value {
	return Value{kind: KindDate, n: packDateTime(DateTime{Year: year, Month: month, Day: day})}
}

// DateTimeValue returns a DATETIME.
func DateTimeValue(dt DateTime) Value { return Value{kind: KindDateTime, n: packDateTime(dt)} }

// TimestampValue returns a TIMESTAMP.
func TimestampValue(dt DateTime) Value { return Value{kind: KindTimestamp, n: packDateTime(dt)} }

// TimeValue returns a TIME, truncated to microseconds.
func TimeValue(d time.Duration) Value {
	return Value{kind: KindTime, n: uint64(int64(d / time.Microsecond))}
}

// Kind returns v's kind.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is SQL NULL.
func (v Value) IsNull() bool { return v.kind == KindNull }

// Int returns a KindInt value (or the bits of a KindUint one as int64).
func (v Value) Int() int64 { return int64(v.n) }

// Uint returns a KindUint value (or the bits of a KindInt one as uint64).
func (v Value) Uint() uint64 { return v.n }

// Float returns a KindFloat32 or KindFloat64 value as a float64.
func (v Value) Float() float64 {
	if v.kind == KindFloat32 {
		return float64(math.Float32frombits(uint32(v.n)))
	}
	return math.Float64frombits(v.n)
}

// Bytes returns the bytes of a KindBytes or KindDecimal value.
func (v Value) Bytes() []byte { return v.b }

// DateTime returns a KindDate, KindDateTime or KindTimestamp value.
func (v Value) DateTime() DateTime { return unpackDateTime(v.n) }

// Duration returns a KindTime value.
func (v Value) Duration() time.Duration { return time.Duration(int64(v.n)) * time.Microsecond }

// String returns v's text form, as the text protocol would send it for a
// column of no particular type; NULL is "NULL".
func (v Value) String() string {
	if v.kind == KindNull {
		return "NULL"
	}
	return string(v.appendText(nil, nil))
}

// A date-time is packed into 60 bits of Value.n:
//
//	year:14 | month:4 | day:5 | hour:5 | minute:6 | second:6 | microsecond:20
func packDateTime(t DateTime) uint64 {
	return uint64(t.Year&0x3fff)<<46 | uint64(t.Month&0xf)<<42 | uint64(t.Day&0x1f)<<37 |
		uint64(t.Hour&0x1f)<<32 | uint64(t.Minute&0x3f)<<26 | uint64(t.Second&0x3f)<<20 |
		uint64(t.Microsecond&0xfffff)
}

func unpackDateTime(n uint64) DateTime {
	return DateTime{
		Year:        int(n >> 46 & 0x3fff),
		Month:       int(n >> 42 & 0xf),
		Day:         int(n >> 37 & 0x1f),
		Hour:        int(n >> 32 & 0x1f),
		Minute:      int(n >> 26 & 0x3f),
		Second:      int(n >> 20 & 0x3f),
		Microsecond: int(n & 0xfffff),
	}
}

// appendText appends v in the text protocol's form for column c (nil for
// none): integers and decimals as digits, floats as MySQL shows them (the
// column's fixed decimals, or the shortest form), dates as
// "YYYY-MM-DD[ HH:MM:SS[.ffffff]]", TIME as "[-]HH:MM:SS[.ffffff]".
// v must not be NULL.
func (v Value) appendText(b []byte, c *Column) []byte {
	switch v.kind {
	case KindInt:
		if c != nil && (c.Flags&FlagZerofill != 0 || c.Type == TypeYear) {
			var tmp [20]byte
			return appendZeroPadded(b, strconv.AppendInt(tmp[:0], int64(v.n), 10), c)
		}
		return strconv.AppendInt(b, int64(v.n), 10)
	case KindUint:
		if c != nil && (c.Flags&FlagZerofill != 0 || c.Type == TypeYear) {
			var tmp [20]byte
			return appendZeroPadded(b, strconv.AppendUint(tmp[:0], v.n, 10), c)
		}
		return strconv.AppendUint(b, v.n, 10)
	case KindFloat32, KindFloat64:
		bits := 64
		if v.kind == KindFloat32 || (c != nil && c.Type == TypeFloat) {
			bits = 32
		}
		dec := uint8(NotFixedDecimals)
		if c != nil {
			dec = c.Decimals
		}
		return appendFloat(b, v.Float(), bits, dec)
	case KindDecimal, KindBytes:
		return append(b, v.b...)
	case KindDate:
		return appendDate(b, unpackDateTime(v.n))
	case KindDateTime, KindTimestamp:
		t := unpackDateTime(v.n)
		if c != nil && (c.Type == TypeDate || c.Type == TypeNewDate) {
			return appendDate(b, t)
		}
		b = appendDate(b, t)
		b = append(b, ' ')
		return appendClock(b, t.Hour, t.Minute, t.Second, t.Microsecond, fsp(c, t.Microsecond))
	case KindTime:
		us := int64(v.n)
		if us < 0 {
			b = append(b, '-')
			us = -us
		}
		micro := int(us % 1e6)
		secs := us / 1e6
		return appendClock(b, int(secs/3600), int(secs/60%60), int(secs%60), micro, fsp(c, micro))
	}
	return b
}

// appendZeroPadded pads digits with zeros to the column's display width
// (ZEROFILL), or to 4 digits for YEAR.
func appendZeroPadded(b, digits []byte, c *Column) []byte {
	width := int(c.Length)
	if c.Type == TypeYear && c.Flags&FlagZerofill == 0 {
		width = 4
	}
	for i := len(digits); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, digits...)
}

// fsp is the number of fractional-second digits to show: the column's
// precision for temporal columns, otherwise 6 when there is a fraction.
func fsp(c *Column, micro int) int {
	if c != nil && c.Decimals <= 6 {
		switch c.Type {
		case TypeTime, TypeDateTime, TypeTimestamp:
			return int(c.Decimals)
		}
	}
	if micro != 0 {
		return 6
	}
	return 0
}

func appendDate(b []byte, t DateTime) []byte {
	b = appendDigits(b, t.Year, 4)
	b = append(b, '-')
	b = appendDigits(b, t.Month, 2)
	b = append(b, '-')
	return appendDigits(b, t.Day, 2)
}

func appendClock(b []byte, h, m, s, micro, fsp int) []byte {
	b = appendDigits(b, h, 2)
	b = append(b, ':')
	b = appendDigits(b, m, 2)
	b = append(b, ':')
	b = appendDigits(b, s, 2)
	if fsp > 0 {
		b = append(b, '.')
		frac := micro
		for i := fsp; i < 6; i++ {
			frac /= 10
		}
		b = appendDigits(b, frac, fsp)
	}
	return b
}

// appendDigits appends n in decimal, zero-padded to at least width digits.
func appendDigits(b []byte, n, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(n), 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// appendFloat formats f as MySQL's text protocol does. With fixed decimals
// (< NotFixedDecimals) it prints exactly that many. Otherwise a DOUBLE gets
// the shortest digits that read back as the same double, and a FLOAT at most
// 6 significant digits (FLT_DIG); either is written in plain notation when
// 1e-15 <= |f| < 1e15, and as "1.5e-20" / "1e15" outside that range.
func appendFloat(b []byte, f float64, bits int, decimals uint8) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	if decimals < NotFixedDecimals {
		return strconv.AppendFloat(b, f, 'f', int(decimals), bits)
	}
	if f == 0 {
		if math.Signbit(f) {
			return append(b, "-0"...)
		}
		return append(b, '0')
	}
	// Digits and exponent from the 'e' form: d.ddddde±XX.
	var tmp [40]byte
	prec := -1
	if bits == 32 {
		prec = 5
	}
	e := strconv.AppendFloat(tmp[:0], f, 'e', prec, bits)
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	ePos := 0
	for e[ePos] != 'e' {
		ePos++
	}
	exp, _ := strconv.Atoi(string(e[ePos+1:]))
	var dbuf [24]byte
	digits := dbuf[:0]
	for _, c := range e[:ePos] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if neg {
		b = append(b, '-')
	}
	if exp < -15 || exp >= 15 {
		b = append(b, digits[0])
		if len(digits) > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		return strconv.AppendInt(b, int64(exp), 10)
	}
	if exp < 0 {
		b = append(b, '0', '.')
		for i := -1; i > exp; i-- {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	if len(digits) <= exp+1 {
		b = append(b, digits...)
		for i := len(digits); i <= exp; i++ {
			b = append(b, '0')
		}
		return b
	}
	b = append(b, digits[:exp+1]...)
	b = append(b, '.')
	return append(b, digits[exp+1:]...)
}
