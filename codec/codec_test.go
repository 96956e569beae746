package codec

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBytesRoundTripAndOrder(t *testing.T) {
	inputs := [][]byte{
		{}, {0}, {0, 0}, {0xFF}, bytes.Repeat([]byte{0xFF}, 8), bytes.Repeat([]byte{0xFF}, 9),
		bytes.Repeat([]byte{0}, 8), bytes.Repeat([]byte{0}, 9), []byte("a"), []byte("ab"),
		[]byte("abcdefgh"), []byte("abcdefghi"), []byte("abcdefgh\x00"), []byte("b"),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		b := make([]byte, r.IntN(30))
		for i := range b {
			b[i] = []byte{0, 1, 0xFE, 0xFF, 'a'}[r.IntN(5)]
		}
		inputs = append(inputs, b)
	}
	for _, in := range inputs {
		enc := EncodeBytes(nil, in)
		if len(enc) != EncodedBytesLen(len(in)) {
			t.Fatalf("len(EncodeBytes(%x)) = %d, want %d", in, len(enc), EncodedBytesLen(len(in)))
		}
		rest, dec, err := DecodeBytes(append(enc, 0x42), nil)
		if err != nil || !bytes.Equal(dec, in) || !bytes.Equal(rest, []byte{0x42}) {
			t.Fatalf("DecodeBytes(EncodeBytes(%x)) = %x, rest %x, %v", in, dec, rest, err)
		}
	}
	// Order is kept, also when each encoding is followed by more bytes.
	for i := range inputs {
		for j := range inputs {
			a, b := inputs[i], inputs[j]
			ea := EncodeBytes(nil, a)
			eb := EncodeBytes(nil, b)
			if got, want := bytes.Compare(ea, eb), bytes.Compare(a, b); got != want {
				t.Fatalf("compare(enc(%x), enc(%x)) = %d, want %d", a, b, got, want)
			}
			if bytes.Compare(a, b) < 0 {
				ea = EncodeUintDesc(ea, 0)
				eb = EncodeUintDesc(eb, math.MaxUint64)
				if bytes.Compare(ea, eb) >= 0 {
					t.Fatalf("suffix broke the order of %x < %x", a, b)
				}
			}
		}
	}
}

func TestDecodeBytesCorrupt(t *testing.T) {
	for _, in := range [][]byte{
		nil, {1, 2, 3}, {0, 0, 0, 0, 0, 0, 0, 0}, // short
		{0, 0, 0, 0, 0, 0, 0, 0, 0x00}, // marker says 255 pad bytes
		{1, 0, 0, 0, 0, 0, 0, 9, 0xF8}, // non-zero padding
		{1, 2, 3, 4, 5, 6, 7, 8, 0xFF}, // no final group
	} {
		if _, _, err := DecodeBytes(in, nil); err != ErrCorrupt {
			t.Errorf("DecodeBytes(%x) err = %v, want ErrCorrupt", in, err)
		}
	}
}

func TestNumbers(t *testing.T) {
	ints := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 1 << 40, math.MaxInt64}
	var encs [][]byte
	for _, v := range ints {
		e := EncodeInt(nil, v)
		if _, d, err := DecodeInt(e); err != nil || d != v {
			t.Fatalf("DecodeInt(EncodeInt(%d)) = %d, %v", v, d, err)
		}
		encs = append(encs, e)
	}
	if !slices.IsSortedFunc(encs, bytes.Compare) {
		t.Fatal("EncodeInt does not keep order")
	}
	uints := []uint64{0, 1, 1 << 32, math.MaxUint64}
	for i := 1; i < len(uints); i++ {
		if bytes.Compare(EncodeUint(nil, uints[i-1]), EncodeUint(nil, uints[i])) >= 0 {
			t.Fatal("EncodeUint does not keep order")
		}
		if bytes.Compare(EncodeUintDesc(nil, uints[i-1]), EncodeUintDesc(nil, uints[i])) <= 0 {
			t.Fatal("EncodeUintDesc does not reverse order")
		}
		if _, d, _ := DecodeUintDesc(EncodeUintDesc(nil, uints[i])); d != uints[i] {
			t.Fatal("DecodeUintDesc does not round-trip")
		}
	}
}

func FuzzDecodeBytes(f *testing.F) {
	f.Add([]byte{})
	f.Add(EncodeBytes(nil, []byte("hello world")))
	f.Fuzz(func(t *testing.T, b []byte) {
		rest, dec, err := DecodeBytes(b, nil)
		if err != nil {
			return
		}
		// A valid encoding re-encodes to exactly the bytes consumed.
		if enc := EncodeBytes(nil, dec); !bytes.Equal(enc, b[:len(b)-len(rest)]) {
			t.Fatalf("re-encoding %x gives %x", b[:len(b)-len(rest)], enc)
		}
	})
}

// FuzzDecode runs every decoder over arbitrary bytes: none may panic, and
// what one accepts must re-encode to exactly the bytes it consumed (the
// encodings are canonical), except -0, which encodes as 0.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7})
	f.Add(EncodeInt(nil, -1))
	f.Add(EncodeFloat(nil, math.Inf(-1)))
	f.Add(EncodeFloat(nil, math.NaN()))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) // -0
	f.Add(EncodeBytes(nil, []byte("abcdefghij")))
	f.Fuzz(func(t *testing.T, b []byte) {
		consumed := func(rest []byte) []byte { return b[:len(b)-len(rest)] }
		if rest, v, err := DecodeInt(b); err == nil {
			if enc := EncodeInt(nil, v); !bytes.Equal(enc, consumed(rest)) {
				t.Fatalf("DecodeInt(%x) = %d, which encodes as %x", consumed(rest), v, enc)
			}
		} else if len(b) >= 8 {
			t.Fatalf("DecodeInt(%x): %v", b, err)
		}
		if rest, v, err := DecodeUint(b); err == nil {
			if enc := EncodeUint(nil, v); !bytes.Equal(enc, consumed(rest)) {
				t.Fatalf("DecodeUint(%x) = %d, which encodes as %x", consumed(rest), v, enc)
			}
		}
		if rest, v, err := DecodeUintDesc(b); err == nil {
			if enc := EncodeUintDesc(nil, v); !bytes.Equal(enc, consumed(rest)) {
				t.Fatalf("DecodeUintDesc(%x) = %d, which encodes as %x", consumed(rest), v, enc)
			}
		}
		if rest, v, err := DecodeFloat(b); err == nil {
			enc := EncodeFloat(nil, v)
			if v == 0 && math.Signbit(v) {
				enc = EncodeUint(nil, 0x7fffffffffffffff) // -0's own encoding
			}
			if !bytes.Equal(enc, consumed(rest)) {
				t.Fatalf("DecodeFloat(%x) = %v, which encodes as %x", consumed(rest), v, enc)
			}
		}
		if rest, v, err := DecodeBytes(b, nil); err == nil {
			if enc := EncodeBytes(nil, v); !bytes.Equal(enc, consumed(rest)) {
				t.Fatalf("DecodeBytes(%x) = %x, which encodes as %x", consumed(rest), v, enc)
			}
		}
	})
}

// FuzzOrder checks that each encoding round-trips and orders as its values
// do, also when a further key part follows it (as in a composite key): for
// values a and b of one kind, compare(a, b) and bytes.Compare(enc(a)+sa,
// enc(b)+sb) agree whenever a != b. The kind: 0 int, 1 uint, 2 uint
// descending, 3 float, 4 bytes; numbers are the first 8 bytes of a and b.
func FuzzOrder(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 0, 0, 0, 0, 0, 0x80}, []byte{1}, []byte{}, []byte{0xff})
	f.Add(uint8(1), []byte{1}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, []byte{0xff}, []byte{})
	f.Add(uint8(2), []byte{1}, []byte{2}, []byte{}, []byte{})
	f.Add(uint8(3), []byte{0, 0, 0, 0, 0, 0, 0, 0x80}, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f}, []byte{1}, []byte{0})
	f.Add(uint8(3), []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, []byte{0, 0, 0, 0, 0, 0, 0xf8, 0xff}, []byte{}, []byte{}) // NaNs
	f.Add(uint8(4), []byte("abcdefgh"), []byte("abcdefgh\x00"), []byte{0}, []byte{0xff})
	f.Add(uint8(4), []byte(""), []byte("\x00"), []byte{0xff}, []byte{})
	f.Fuzz(func(t *testing.T, kind uint8, a, b, sa, sb []byte) {
		num := func(x []byte) uint64 {
			var buf [8]byte
			copy(buf[:], x)
			return binary.LittleEndian.Uint64(buf[:])
		}
		var ea, eb []byte
		var want int
		switch kind % 5 {
		case 0:
			x, y := int64(num(a)), int64(num(b))
			ea, eb, want = EncodeInt(nil, x), EncodeInt(nil, y), cmp.Compare(x, y)
			if _, d, err := DecodeInt(ea); err != nil || d != x {
				t.Fatalf("DecodeInt(EncodeInt(%d)) = %d, %v", x, d, err)
			}
		case 1:
			x, y := num(a), num(b)
			ea, eb, want = EncodeUint(nil, x), EncodeUint(nil, y), cmp.Compare(x, y)
			if _, d, err := DecodeUint(ea); err != nil || d != x {
				t.Fatalf("DecodeUint(EncodeUint(%d)) = %d, %v", x, d, err)
			}
		case 2:
			x, y := num(a), num(b)
			ea, eb, want = EncodeUintDesc(nil, x), EncodeUintDesc(nil, y), cmp.Compare(y, x)
			if _, d, err := DecodeUintDesc(ea); err != nil || d != x {
				t.Fatalf("DecodeUintDesc(EncodeUintDesc(%d)) = %d, %v", x, d, err)
			}
		case 3:
			x, y := math.Float64frombits(num(a)), math.Float64frombits(num(b))
			ea, eb = EncodeFloat(nil, x), EncodeFloat(nil, y)
			_, d, err := DecodeFloat(ea)
			if err != nil || !(d == x || math.IsNaN(d) && math.IsNaN(x)) {
				t.Fatalf("DecodeFloat(EncodeFloat(%v)) = %v, %v", x, d, err)
			}
			if math.IsNaN(x) || math.IsNaN(y) {
				return // NaNs have an encoding but no order
			}
			want = cmp.Compare(x, y)
		case 4:
			ea, eb, want = EncodeBytes(nil, a), EncodeBytes(nil, b), bytes.Compare(a, b)
			if _, d, err := DecodeBytes(ea, nil); err != nil || !bytes.Equal(d, a) {
				t.Fatalf("DecodeBytes(EncodeBytes(%x)) = %x, %v", a, d, err)
			}
		}
		if got := bytes.Compare(ea, eb); got != want {
			t.Fatalf("kind %d: values compare %d, encodings %x and %x compare %d", kind%5, want, ea, eb, got)
		}
		if want != 0 {
			if got := bytes.Compare(append(ea, sa...), append(eb, sb...)); got != want {
				t.Fatalf("kind %d: values compare %d, with suffixes %x and %x the keys compare %d", kind%5, want, sa, sb, got)
			}
		}
	})
}
