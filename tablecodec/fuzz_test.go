package tablecodec

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"testing"

	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
)

// fuzzDatum makes a datum of kind k (0 NULL, 1 int, 2 uint, 3 float,
// 4 decimal, 5 string, 6 time, 7 duration) from fuzz bytes. meta picks a
// time's type and fractional precision, or a string's collation, which a
// column fixes, so two datums made with one meta may share an index
// position.
func fuzzDatum(k uint8, b []byte, meta uint8) types.Datum {
	var buf [9]byte
	copy(buf[:], b)
	x := binary.LittleEndian.Uint64(buf[:])
	switch k % 8 {
	case 1:
		return types.NewInt(int64(x))
	case 2:
		return types.NewUint(x)
	case 3:
		return types.NewFloat(math.Float64frombits(x))
	case 4:
		// coefficient × 10^exponent, exponent in [-40, 40]: DECIMAL's range
		// and more.
		return types.NewDecimal(apd.New(int64(x), int32(int8(buf[8]))%41))
	case 5:
		// meta picks the column's collation too.
		return types.NewCollatedBytes(b, types.Collation(meta%5))
	case 6:
		return types.NewTime(types.Time(x), types.TimeType(meta%3), int(meta>>2)%8-1)
	case 7:
		return types.NewDuration(int64(x), int(meta>>2)%8-1)
	}
	return types.Null
}

// sameDatum: same kind, same value; a time's type and precision too.
func sameDatum(a, b types.Datum) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case types.KindFloat:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float()) ||
			math.IsNaN(a.Float()) && math.IsNaN(b.Float()) || a.Float() == 0 && b.Float() == 0
	case types.KindTime:
		ta, tta, fa := a.Time()
		tb, ttb, fb := b.Time()
		return ta == tb && tta == ttb && fa == fb
	case types.KindDuration:
		return a.Duration() == b.Duration()
	case types.KindNull:
		return true
	}
	return types.Compare(a, b) == 0
}

// validDatum fails t if d is a datum no column could hold, or cannot be
// printed.
func validDatum(t *testing.T, what string, d types.Datum) {
	t.Helper()
	switch d.Kind() {
	case types.KindTime:
		_, tt, fsp := d.Time()
		if tt > types.TimeTimestamp || fsp < -1 || fsp > 6 {
			t.Fatalf("%s: time of type %d, precision %d", what, tt, fsp)
		}
	case types.KindDuration:
		if fsp := d.Fsp(); fsp < -1 || fsp > 6 {
			t.Fatalf("%s: duration of precision %d", what, fsp)
		}
	case types.KindDecimal:
		if d.Decimal().Form != apd.Finite {
			t.Fatalf("%s: decimal %v", what, d.Decimal())
		}
	}
	_ = d.String()
}

// FuzzKeyDatum decodes arbitrary bytes as a key datum: no panic, and what
// decodes must be a valid datum that re-encodes to a key that decodes to
// it again.
func FuzzKeyDatum(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{flagTime, 9, 7, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{flagDecimal, 0x03, 0x80, 0, 0, 0, 0, 0, 0, 2, 2, 3, 0})
	f.Add([]byte{flagDecimal, 0x03, 0xc0, 0, 0, 0, 0, 0, 0, 0, 2, 0}) // 0.1E(2^62)
	f.Add([]byte{flagDecimal, 0x01, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 9, 0x0b})
	for _, d := range []types.Datum{types.NewInt(-3), types.NewString("key"), types.NewFloat(-1.5), types.NewDuration(-1, 6)} {
		e, _ := EncodeKeyDatum(nil, d)
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, d, err := DecodeKeyDatum(b)
		if err != nil {
			return
		}
		validDatum(t, "decoded", d)
		e, err := EncodeKeyDatum(nil, d)
		if err != nil {
			t.Fatalf("re-encoding %v: %v", d, err)
		}
		rest, d2, err := DecodeKeyDatum(e)
		if err != nil || len(rest) != 0 || !sameDatum(d, d2) {
			t.Fatalf("%v re-encodes as %x, which decodes to %v (%x left), %v", d, e, d2, rest, err)
		}
	})
}

// FuzzKeyOrder builds two datums of one kind (and one column type) and
// checks that each key encoding decodes back to its datum, and that the
// encodings order as types.Compare orders the datums, also with another
// key part after each: the property every index and range scan relies on.
func FuzzKeyOrder(f *testing.F) {
	f.Add(uint8(1), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, []byte{0}, uint8(0), []byte{}, []byte{1})
	f.Add(uint8(3), []byte{0, 0, 0, 0, 0, 0, 0, 0x80}, []byte{0}, uint8(0), []byte{1}, []byte{})
	f.Add(uint8(4), []byte{5, 0, 0, 0, 0, 0, 0, 0, 0xff}, []byte{50, 0, 0, 0, 0, 0, 0, 0, 0xfe}, uint8(0), []byte{}, []byte{})
	f.Add(uint8(4), []byte{0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03}, uint8(0), []byte{}, []byte{})
	f.Add(uint8(5), []byte("abcdefgh"), []byte("abcdefgh\x00"), uint8(0), []byte{0}, []byte{0xff})
	f.Add(uint8(6), []byte{1, 2, 3}, []byte{1, 2, 4}, uint8(0x19), []byte{}, []byte{})
	f.Add(uint8(7), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, []byte{1}, uint8(0), []byte{}, []byte{})
	f.Add(uint8(8), []byte{}, []byte{1}, uint8(0), []byte{}, []byte{}) // NULL against an int
	f.Fuzz(func(t *testing.T, kind uint8, a, b []byte, meta uint8, sa, sb []byte) {
		da := fuzzDatum(kind%8, a, meta)
		db := fuzzDatum(kind%8, b, meta)
		if kind%16 >= 8 {
			da = types.Null // NULL against a value of the kind: NULL first
		}
		if da.Kind() == types.KindFloat && math.IsNaN(da.Float()) || db.Kind() == types.KindFloat && math.IsNaN(db.Float()) {
			return // a column cannot hold NaN, and it has no order
		}
		var keys [2][]byte
		for i, d := range []types.Datum{da, db} {
			e, err := EncodeKeyDatum(nil, d)
			if err != nil {
				t.Fatalf("encoding %v: %v", d, err)
			}
			rest, back, err := DecodeKeyDatum(append(bytes.Clone(e), 0x42))
			if err != nil || !bytes.Equal(rest, []byte{0x42}) || !sameDatum(back, d) {
				t.Fatalf("decode(encode(%v)) = %v (rest %x), %v", d, back, rest, err)
			}
			keys[i] = e
		}
		want := types.Compare(da, db)
		got := bytes.Compare(keys[0], keys[1])
		if cmp.Compare(want, 0) != got {
			t.Fatalf("%v and %v compare %d, their keys %x and %x %d", da, db, want, keys[0], keys[1], got)
		}
		if want != 0 {
			if got := bytes.Compare(append(keys[0], sa...), append(keys[1], sb...)); got != cmp.Compare(want, 0) {
				t.Fatalf("%v and %v compare %d, their keys with suffixes %x, %x compare %d", da, db, want, sa, sb, got)
			}
		}
	})
}

// FuzzDecodeRow decodes arbitrary bytes as a row value: no panic, and a
// row that decodes holds only valid datums and decodes the same after
// being encoded again.
func FuzzDecodeRow(f *testing.F) {
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 8, 300}
	f.Add([]byte{})
	f.Add([]byte{rowVersion})
	f.Add([]byte{rowVersion, 1, byte(types.KindTime), 0, 9, 1})    // precision 9
	f.Add([]byte{rowVersion, 1, byte(types.KindTime), 7, 0, 1})    // type 7
	f.Add([]byte{rowVersion, 1, byte(types.KindDuration), 200, 1}) // precision 200
	f.Add([]byte{rowVersion, 2, byte(types.KindDecimal), 3, 'N', 'a', 'N'})
	f.Add([]byte{rowVersion, 2, byte(types.KindDecimal), 4, '1', 'E', '9', '9'})
	f.Add(EncodeRow(nil, ids, []types.Datum{types.NewInt(1), types.NewString("ab"), types.NewFloat(2), types.Null,
		types.NewDecimal(apd.New(-1234, -2)), types.NewTime(1<<46, types.TimeDate, 0), types.NewDuration(5, 3), types.NewUint(9), types.NewInt(-1)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := make([]types.Datum, len(ids))
		present := make([]bool, len(ids))
		if err := DecodeRow(b, ids, out, present); err != nil {
			return
		}
		for i, d := range out {
			validDatum(t, "column", d)
			if present[i] == d.IsNull() {
				t.Fatalf("column %d: present=%v but %v", ids[i], present[i], d)
			}
		}
		again := make([]types.Datum, len(ids))
		if err := DecodeRow(EncodeRow(nil, ids, out), ids, again, nil); err != nil {
			t.Fatalf("re-encoded row: %v", err)
		}
		for i := range out {
			if !sameDatum(out[i], again[i]) || out[i].String() != again[i].String() {
				t.Fatalf("column %d: %v, after re-encoding %v", ids[i], out[i], again[i])
			}
		}
	})
}

// FuzzRowRoundTrip encodes datums of every kind made from the fuzz input
// (each a kind byte, a meta byte and 9 value bytes; strings take a length
// byte and that many bytes) and decodes them, in another order.
func FuzzRowRoundTrip(f *testing.F) {
	f.Add([]byte{1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{4, 0, 0x39, 0x30, 0, 0, 0, 0, 0, 0, 0xfe, 6, 0x1a, 1, 0, 0, 0, 0, 0, 0x1e, 0, 0})
	f.Add([]byte{5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c', 7, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		var ids []int64
		var vals []types.Datum
		for id := int64(1); len(in) >= 11 && id < 64; id++ {
			k, meta, raw := in[0], in[1], in[2:11]
			in = in[11:]
			d := fuzzDatum(k, raw, meta)
			if k%8 == 5 && len(in) > 0 {
				n := min(int(in[0]), len(in)-1)
				d, in = types.NewBytes(in[1:1+n]), in[1+n:]
			}
			ids = append(ids, id*7)
			vals = append(vals, d)
		}
		b := EncodeRow(nil, ids, vals)
		rev := make([]int64, len(ids)+1)
		for i, id := range ids {
			rev[len(ids)-1-i] = id
		}
		rev[len(ids)] = 1 // not in the row
		out := make([]types.Datum, len(rev))
		if err := DecodeRow(b, rev, out, nil); err != nil {
			t.Fatalf("decoding %x: %v", b, err)
		}
		for i, d := range vals {
			got := out[len(ids)-1-i]
			if !sameDatum(d, got) || d.String() != got.String() {
				t.Fatalf("column %d: wrote %v, read %v", ids[i], d, got)
			}
		}
		if !out[len(ids)].IsNull() {
			t.Fatalf("a column the row does not hold reads %v", out[len(ids)])
		}
	})
}
