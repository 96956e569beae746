package server

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// paramTypes are the type codes a client may bind a parameter to.
var paramTypes = []FieldType{
	TypeDecimal, TypeTiny, TypeShort, TypeLong, TypeFloat, TypeDouble, TypeNull, TypeTimestamp,
	TypeLongLong, TypeInt24, TypeDate, TypeTime, TypeDateTime, TypeYear, TypeNewDate, TypeVarChar,
	TypeBit, TypeVector, TypeJSON, TypeNewDecimal, TypeEnum, TypeSet, TypeTinyBlob, TypeMediumBlob,
	TypeLongBlob, TypeBlob, TypeVarString, TypeString, TypeGeometry,
}

// FuzzDecodeParams decodes arbitrary COM_STMT_EXECUTE parameter blocks for
// a statement of up to 19 parameters, some of them sent as long data, some
// with types bound by an earlier execution. The decoder must report a bad
// block, never panic or read past it, and every value it accepts must be a
// value the rest of the server can print.
func FuzzDecodeParams(f *testing.F) {
	f.Add(uint8(0), []byte(nil), uint16(0), []byte{})
	f.Add(uint8(1), []byte(nil), uint16(0), []byte{0x00, 0x01, byte(TypeLongLong), 0x00, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint8(1), []byte(nil), uint16(0), []byte{0x00, 0x01, byte(TypeLongLong), 0x00, 1, 2, 3})            // cut short
	f.Add(uint8(1), []byte(nil), uint16(0), []byte{0x00, 0x00})                                               // types never bound
	f.Add(uint8(1), []byte{byte(TypeVarString), 0}, uint16(0), []byte{0x00, 0x00, 3, 'a', 'b', 'c'})          // types from before
	f.Add(uint8(2), []byte(nil), uint16(1), []byte{0x00, 0x01, byte(TypeBlob), 0, byte(TypeTiny), 0x80, 200}) // long data, unsigned
	f.Add(uint8(1), []byte(nil), uint16(0), []byte{0x01, 0x01, byte(TypeDate), 0})                            // NULL
	f.Add(uint8(1), []byte(nil), uint16(0), []byte{0x00, 0x01, byte(TypeDateTime), 0, 11, 0xe8, 0x07, 2, 29, 23, 59, 59, 0x3f, 0x42, 0x0f, 0})
	f.Add(uint8(1), []byte(nil), uint16(0), []byte{0x00, 0x01, byte(TypeDateTime), 0, 7, 0xff, 0xff, 13, 32, 24, 60, 60})
	f.Add(uint8(1), []byte(nil), uint16(0), []byte{0x00, 0x01, byte(TypeTime), 0, 12, 1, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 0, 0, 0, 0})
	f.Add(uint8(1), []byte(nil), uint16(0), []byte{0x00, 0x01, byte(TypeNewDecimal), 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(1), []byte(nil), uint16(0), []byte{0x00, 0x01, 0x42, 0}) // unknown type
	f.Fuzz(func(t *testing.T, n uint8, prevTypes []byte, long uint16, block []byte) {
		np := int(n % 20)
		s := &stmtState{params: make([]Value, np), longData: make([][]byte, np), longSent: make([]bool, np)}
		if len(prevTypes) == 2*np {
			s.types = prevTypes
		}
		for i := range np {
			if i < 16 && long&(1<<i) != 0 {
				s.longSent[i], s.longData[i] = true, []byte("long data")
			}
		}
		r := newReader(block)
		ok := s.decodeParams(&r)
		if r.pos > len(block) {
			t.Fatalf("read to %d of a %d-byte block", r.pos, len(block))
		}
		if !ok {
			return
		}
		for i, v := range s.params {
			checkParam(t, i, v, s.types[2*i])
		}
	})
}

// checkParam checks that v is a value a parameter of type typ may decode to.
func checkParam(t *testing.T, i int, v Value, typ byte) {
	t.Helper()
	if v.kind > KindTime {
		t.Fatalf("param %d: kind %d", i, v.kind)
	}
	switch v.kind {
	case KindDate, KindDateTime, KindTimestamp:
		dt := v.DateTime()
		if dt.Year > 9999 || dt.Month > 12 || dt.Day > 31 || dt.Hour > 23 || dt.Minute > 59 || dt.Second > 59 || dt.Microsecond > 999999 {
			t.Fatalf("param %d (type 0x%02x): date-time out of range: %+v", i, typ, dt)
		}
	case KindTime:
		if us := int64(v.n); us < -(1<<20+1)*24*3600e6 || us > (1<<20+1)*24*3600e6 {
			t.Fatalf("param %d: TIME out of range: %dµs", i, us)
		}
	}
	_ = v.String()
	for _, ct := range []FieldType{FieldType(typ), TypeVarString, TypeLongLong, TypeDouble} {
		c := &Column{Type: ct, Decimals: NotFixedDecimals}
		_ = v.appendText(nil, c)
	}
}

// FuzzParamsRoundTrip builds parameters of every type from the fuzz input,
// encodes them with the encoder of binary result rows (the same format),
// as a client's COM_STMT_EXECUTE block, and decodes the block: every
// value must come back as it was. Each parameter takes a type byte
// (0x80: unsigned, 0x40: NULL, 0x20: sent as long data), then 8 bytes of
// value and, for strings, a length byte and that many bytes.
func FuzzParamsRoundTrip(f *testing.F) {
	f.Add([]byte{}, false)
	f.Add([]byte{8, 1, 2, 3, 4, 5, 6, 7, 8}, false)
	f.Add([]byte{0x88, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true)
	f.Add([]byte{0x01, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x81, 0x80, 0, 0, 0, 0, 0, 0, 0}, false)
	f.Add([]byte{0x0c, 0xe8, 0x07, 2, 29, 23, 59, 59, 9, 0x0b, 1, 2, 3, 4, 5, 6, 7, 0x80}, false)
	f.Add([]byte{0x13, 0, 0, 0, 0, 0, 0, 0, 0, 5, '-', '1', '.', '5', '0', 0x4f, 0, 0, 0, 0, 0, 0, 0, 0, 0}, true)
	f.Add([]byte{0x35, 0, 0, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c', 0x04, 0, 0, 0xc0, 0x7f, 0, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, in []byte, rebind bool) {
		var want []Value
		var types []byte
		var long [][]byte
		for len(in) >= 9 && len(want) < 40 {
			sel, raw := in[0], in[1:9]
			in = in[9:]
			typ := paramTypes[int(sel&0x1f)%len(paramTypes)]
			unsigned := sel&0x80 != 0
			var text []byte
			if isLenencType(typ) && len(in) > 0 {
				n := min(int(in[0]), len(in)-1)
				text, in = in[1:1+n], in[1+n:]
			}
			v := paramValue(typ, unsigned, binary.LittleEndian.Uint64(raw), text)
			var ld []byte
			switch {
			case sel&0x40 != 0:
				v = NullValue()
			case sel&0x20 != 0:
				ld = append([]byte("long:"), raw...)
				if typ == TypeDecimal || typ == TypeNewDecimal {
					v = DecimalValue(ld)
				} else {
					v = BytesValue(ld)
				}
			}
			flags := byte(0)
			if unsigned {
				flags = 0x80
			}
			want = append(want, v)
			types = append(types, byte(typ), flags)
			long = append(long, ld)
		}
		np := len(want)
		s := &stmtState{params: make([]Value, np), longData: make([][]byte, np), longSent: make([]bool, np)}
		for i, ld := range long {
			s.longData[i], s.longSent[i] = ld, ld != nil
		}

		// The block: null bitmap, new-params-bound flag, types, values.
		block := make([]byte, (np+7)/8)
		for i, v := range want {
			if v.kind == KindNull && long[i] == nil {
				block[i/8] |= 1 << (i % 8)
			}
		}
		switch {
		case np == 0: // no parameters, no block
		case rebind:
			s.types = bytes.Clone(types) // bound by an earlier execution
			block = append(block, 0)
		default:
			block = append(block, 1)
			block = append(block, types...)
		}
		for i, v := range want {
			if v.kind == KindNull || long[i] != nil {
				continue
			}
			c := &Column{Type: FieldType(types[2*i])}
			var err error
			if block, err = appendBinaryValue(block, c, v); err != nil {
				t.Fatalf("param %d: encoding %v as 0x%02x: %v", i, v, c.Type, err)
			}
		}

		r := newReader(block)
		if !s.decodeParams(&r) {
			t.Fatalf("rejected a well-formed block % x", block)
		}
		if r.remaining() != 0 {
			t.Fatalf("%d bytes of the block left unread", r.remaining())
		}
		for i := range want {
			if !sameValue(s.params[i], want[i]) {
				t.Fatalf("param %d (type 0x%02x): sent %v (%s), decoded %v (%s)", i, types[2*i],
					want[i], want[i].kind, s.params[i], s.params[i].kind)
			}
		}
	})
}

func isLenencType(typ FieldType) bool {
	switch typ {
	case TypeDecimal, TypeNewDecimal, TypeVarChar, TypeVarString, TypeString, TypeTinyBlob, TypeMediumBlob,
		TypeLongBlob, TypeBlob, TypeJSON, TypeEnum, TypeSet, TypeGeometry, TypeBit, TypeVector:
		return true
	}
	return false
}

// paramValue makes the value a parameter of type typ decodes to from the
// fuzz input's bits x and text: each field of a date reduced into its
// range, integers to the type's width.
func paramValue(typ FieldType, unsigned bool, x uint64, text []byte) Value {
	intOf := func(bits uint) Value {
		if unsigned {
			return UintValue(x & (1<<bits - 1))
		}
		return IntValue(int64(x<<(64-bits)) >> (64 - bits))
	}
	switch typ {
	case TypeNull:
		return NullValue()
	case TypeTiny:
		return intOf(8)
	case TypeShort, TypeYear:
		return intOf(16)
	case TypeInt24, TypeLong:
		return intOf(32)
	case TypeLongLong:
		if unsigned {
			return UintValue(x)
		}
		return IntValue(int64(x))
	case TypeFloat:
		return Float32Value(math.Float32frombits(uint32(x)))
	case TypeDouble:
		return Float64Value(math.Float64frombits(x))
	case TypeDecimal, TypeNewDecimal:
		return DecimalValue(text)
	case TypeDate, TypeNewDate, TypeDateTime, TypeTimestamp:
		dt := DateTime{
			Year: int(x & 0x3fff % 10000), Month: int(x >> 14 & 0xf % 13), Day: int(x >> 18 & 0x1f),
			Hour: int(x >> 23 & 0x1f % 24), Minute: int(x >> 28 & 0x3f % 60), Second: int(x >> 34 & 0x3f % 60),
			Microsecond: int(x >> 40 & 0xfffff % 1000000),
		}
		switch typ {
		case TypeDate, TypeNewDate:
			return DateValue(dt.Year, dt.Month, dt.Day)
		case TypeDateTime:
			return DateTimeValue(dt)
		}
		return TimestampValue(dt)
	case TypeTime:
		const limit = 1 << 20 * 24 * 3600 * 1e6 // the decoder's bound: 2^20 days
		us := int64(x>>1) % limit
		if x&1 != 0 {
			us = -us
		}
		return Value{kind: KindTime, n: uint64(us)}
	}
	return BytesValue(text)
}

// sameValue compares values bit for bit; NaNs of either width are equal.
func sameValue(a, b Value) bool {
	if a.kind != b.kind {
		return false
	}
	if (a.kind == KindFloat32 || a.kind == KindFloat64) && math.IsNaN(a.Float()) && math.IsNaN(b.Float()) {
		return true
	}
	return a.n == b.n && bytes.Equal(a.b, b.b)
}
