package server

import (
	"fmt"
	"math"
	"strconv"
)

// The binary protocol encodes COM_STMT_EXECUTE parameters and the rows of
// its result sets. A value's encoding follows its type code:
//
//	TINY                      1 byte          SHORT, YEAR   2 bytes
//	INT24, LONG               4 bytes         LONGLONG      8 bytes
//	FLOAT                     4 bytes IEEE    DOUBLE        8 bytes IEEE
//	DECIMAL, NEWDECIMAL, strings, blobs, JSON, BIT, ENUM, SET, GEOMETRY:
//	                          lenenc string
//	DATE, DATETIME, TIMESTAMP 1-byte length, then
//	    0:  zero date
//	    4:  year(2) month(1) day(1)
//	    7:  ... hour(1) minute(1) second(1)
//	    11: ... microsecond(4)
//	TIME                      1-byte length, then
//	    0:  00:00:00
//	    8:  is_negative(1) days(4) hour(1) minute(1) second(1)
//	    12: ... microsecond(4)
//	NULL                      nothing (the null bitmap says so)
//
// all integers little-endian. A binary result row is
//
//	0x00 | null bitmap, (columns+7+2)/8 bytes, column i at bit i+2 | non-NULL values
//
// and COM_STMT_EXECUTE's null bitmap for parameters has no such offset.

// readBinaryParam decodes one parameter of type typ. It reports false for a
// type it does not know or a value cut short.
func readBinaryParam(r *reader, typ FieldType, unsigned bool) (Value, bool) {
	var v Value
	switch typ {
	case TypeNull:
		return v, true
	case TypeTiny:
		n := r.uint8()
		if unsigned {
			v = UintValue(uint64(n))
		} else {
			v = IntValue(int64(int8(n)))
		}
	case TypeShort, TypeYear:
		n := r.uint16()
		if unsigned {
			v = UintValue(uint64(n))
		} else {
			v = IntValue(int64(int16(n)))
		}
	case TypeInt24, TypeLong:
		n := r.uint32()
		if unsigned {
			v = UintValue(uint64(n))
		} else {
			v = IntValue(int64(int32(n)))
		}
	case TypeLongLong:
		n := r.uint64()
		if unsigned {
			v = UintValue(n)
		} else {
			v = IntValue(int64(n))
		}
	case TypeFloat:
		v = Float32Value(math.Float32frombits(r.uint32()))
	case TypeDouble:
		v = Float64Value(math.Float64frombits(r.uint64()))
	case TypeDecimal, TypeNewDecimal:
		v = DecimalValue(r.lenencBytes())
	case TypeVarChar, TypeVarString, TypeString, TypeTinyBlob, TypeMediumBlob, TypeLongBlob,
		TypeBlob, TypeJSON, TypeEnum, TypeSet, TypeGeometry, TypeBit, TypeVector:
		v = BytesValue(r.lenencBytes())
	case TypeDate, TypeNewDate, TypeDateTime, TypeTimestamp:
		dt, ok := readBinaryDateTime(r)
		if !ok {
			return v, false
		}
		switch typ {
		case TypeDate, TypeNewDate:
			v = Value{kind: KindDate, n: packDateTime(dt)}
		case TypeDateTime:
			v = DateTimeValue(dt)
		default:
			v = TimestampValue(dt)
		}
	case TypeTime:
		us, ok := readBinaryTime(r)
		if !ok {
			return v, false
		}
		v = Value{kind: KindTime, n: uint64(us)}
	default:
		return v, false
	}
	return v, !r.bad
}

func readBinaryDateTime(r *reader) (DateTime, bool) {
	var dt DateTime
	n := r.uint8()
	if n != 0 && n != 4 && n != 7 && n != 11 {
		return dt, false
	}
	if n >= 4 {
		dt.Year, dt.Month, dt.Day = int(r.uint16()), int(r.uint8()), int(r.uint8())
	}
	if n >= 7 {
		dt.Hour, dt.Minute, dt.Second = int(r.uint8()), int(r.uint8()), int(r.uint8())
	}
	if n == 11 {
		dt.Microsecond = int(r.uint32())
	}
	ok := !r.bad && dt.Year <= 9999 && dt.Month <= 12 && dt.Day <= 31 &&
		dt.Hour < 24 && dt.Minute < 60 && dt.Second < 60 && dt.Microsecond < 1e6
	return dt, ok
}

// readBinaryTime returns a TIME as signed microseconds.
func readBinaryTime(r *reader) (int64, bool) {
	n := r.uint8()
	if n == 0 {
		return 0, !r.bad
	}
	if n != 8 && n != 12 {
		return 0, false
	}
	neg := r.uint8()
	days := r.uint32()
	h, m, s := r.uint8(), r.uint8(), r.uint8()
	var micro uint32
	if n == 12 {
		micro = r.uint32()
	}
	if r.bad || neg > 1 || days > 1<<20 || h >= 24 || m >= 60 || s >= 60 || micro >= 1e6 {
		return 0, false
	}
	us := ((int64(days)*24+int64(h))*3600+int64(m)*60+int64(s))*1e6 + int64(micro)
	if neg == 1 {
		us = -us
	}
	return us, true
}

// appendBinaryRow appends a binary result row's payload.
func appendBinaryRow(b []byte, cols []Column, row []Value) ([]byte, error) {
	b = append(b, 0x00)
	bitmap := len(b)
	for i := 0; i < (len(cols)+7+2)/8; i++ {
		b = append(b, 0)
	}
	var err error
	for i := range row {
		if row[i].kind == KindNull || cols[i].Type == TypeNull {
			b[bitmap+(i+2)/8] |= 1 << ((i + 2) % 8)
			continue
		}
		if b, err = appendBinaryValue(b, &cols[i], row[i]); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendBinaryValue encodes v as the column's type requires, converting it
// when its kind differs (an integer for a DOUBLE column, say). Temporal
// columns need temporal values.
func appendBinaryValue(b []byte, c *Column, v Value) ([]byte, error) {
	switch c.Type {
	case TypeTiny:
		n, err := v.intBits(c)
		return append(b, byte(n)), err
	case TypeShort, TypeYear:
		n, err := v.intBits(c)
		return appendUint16(b, uint16(n)), err
	case TypeInt24, TypeLong:
		n, err := v.intBits(c)
		return appendUint32(b, uint32(n)), err
	case TypeLongLong:
		n, err := v.intBits(c)
		return appendUint64(b, n), err
	case TypeFloat:
		f, err := v.toFloat(c)
		return appendUint32(b, math.Float32bits(float32(f))), err
	case TypeDouble:
		f, err := v.toFloat(c)
		return appendUint64(b, math.Float64bits(f)), err
	case TypeDate, TypeNewDate, TypeDateTime, TypeTimestamp:
		if v.kind != KindDate && v.kind != KindDateTime && v.kind != KindTimestamp {
			return b, v.mismatch(c)
		}
		return appendBinaryDateTime(b, unpackDateTime(v.n), c.Type == TypeDate || c.Type == TypeNewDate), nil
	case TypeTime:
		if v.kind != KindTime {
			return b, v.mismatch(c)
		}
		return appendBinaryTime(b, int64(v.n)), nil
	default:
		if v.kind == KindBytes || v.kind == KindDecimal {
			return appendLenencBytes(b, v.b), nil
		}
		start := len(b)
		b = append(b, 0)
		b = v.appendText(b, c)
		return patchLenenc(b, start), nil
	}
}

func appendBinaryDateTime(b []byte, t DateTime, dateOnly bool) []byte {
	switch {
	case t == DateTime{}:
		return append(b, 0)
	case dateOnly || (t.Hour == 0 && t.Minute == 0 && t.Second == 0 && t.Microsecond == 0):
		b = append(b, 4)
		b = appendUint16(b, uint16(t.Year))
		return append(b, byte(t.Month), byte(t.Day))
	}
	n := byte(7)
	if t.Microsecond != 0 {
		n = 11
	}
	b = append(b, n)
	b = appendUint16(b, uint16(t.Year))
	b = append(b, byte(t.Month), byte(t.Day), byte(t.Hour), byte(t.Minute), byte(t.Second))
	if n == 11 {
		b = appendUint32(b, uint32(t.Microsecond))
	}
	return b
}

func appendBinaryTime(b []byte, us int64) []byte {
	if us == 0 {
		return append(b, 0)
	}
	var neg byte
	if us < 0 {
		neg, us = 1, -us
	}
	micro := us % 1e6
	secs := us / 1e6
	n := byte(8)
	if micro != 0 {
		n = 12
	}
	b = append(b, n, neg)
	b = appendUint32(b, uint32(secs/86400))
	b = append(b, byte(secs/3600%24), byte(secs/60%60), byte(secs%60))
	if n == 12 {
		b = appendUint32(b, uint32(micro))
	}
	return b
}

// intBits returns v as the 64 bits of an integer column's value.
func (v Value) intBits(c *Column) (uint64, error) {
	switch v.kind {
	case KindInt, KindUint:
		return v.n, nil
	case KindFloat32, KindFloat64:
		f := math.Round(v.Float())
		if f < 0 {
			return uint64(int64(f)), nil
		}
		return uint64(f), nil
	case KindBytes, KindDecimal:
		s := string(v.b)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return uint64(n), nil
		}
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return Float64Value(f).intBits(c)
		}
	}
	return 0, v.mismatch(c)
}

func (v Value) toFloat(c *Column) (float64, error) {
	switch v.kind {
	case KindFloat32, KindFloat64:
		return v.Float(), nil
	case KindInt:
		return float64(int64(v.n)), nil
	case KindUint:
		return float64(v.n), nil
	case KindBytes, KindDecimal:
		if f, err := strconv.ParseFloat(string(v.b), 64); err == nil {
			return f, nil
		}
	}
	return 0, v.mismatch(c)
}

func (v Value) mismatch(c *Column) error {
	return fmt.Errorf("server: cannot send %s value %q in binary column %q of type 0x%02x", v.kind, v.String(), c.Name, byte(c.Type))
}
