package codec

import (
	"bytes"
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
