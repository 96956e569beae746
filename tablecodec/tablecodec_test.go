package tablecodec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/basalt-db/basalt/types"
)

func mustDecimal(t *testing.T, s string) types.Datum {
	d, err := types.ParseDecimal(s)
	if err != nil {
		t.Fatal(err)
	}
	return types.NewDecimal(d)
}

func bin(s string) types.Datum { return types.NewCollatedBytes([]byte(s), types.CollationBinary) }

// Strings under utf8mb4_general_ci and utf8mb4_bin encode their sort keys:
// equal strings have equal keys, and keys order as the strings compare.
func TestKeyDatumCollations(t *testing.T) {
	for _, c := range []types.Collation{types.CollationGeneralCI, types.CollationBin} {
		words := []string{"", "a", "A", "a ", "á", "ab", "Ab", "b", "ß", "s", "z", "Z", "é", "ä", "\u00ff", "\U0001F600", "\U0001F601", "\x00", "\xff"}
		for _, x := range words {
			for _, y := range words {
				dx, dy := types.NewCollatedBytes([]byte(x), c), types.NewCollatedBytes([]byte(y), c)
				kx, _ := EncodeKeyDatum(nil, dx)
				ky, _ := EncodeKeyDatum(nil, dy)
				want := types.Compare(dx, dy)
				if got := bytes.Compare(kx, ky); got != want {
					t.Errorf("collation %d: keys of %q and %q compare %d, the strings %d", c, x, y, got, want)
				}
			}
		}
	}
	ka, _ := EncodeKeyDatum(nil, types.NewString("a"))
	kA, _ := EncodeKeyDatum(nil, types.NewString("A  "))
	if !bytes.Equal(ka, kA) {
		t.Fatal("'a' and 'A  ' must share a utf8mb4_general_ci key")
	}
}

// Key datums of one kind sort as the values do, and decode back.
func TestKeyDatumOrder(t *testing.T) {
	groups := [][]types.Datum{
		{types.Null, types.NewInt(math.MinInt64), types.NewInt(-1), types.NewInt(0), types.NewInt(7), types.NewInt(math.MaxInt64)},
		{types.NewUint(0), types.NewUint(1), types.NewUint(math.MaxUint64)},
		{types.NewFloat(math.Inf(-1)), types.NewFloat(-2.5), types.NewFloat(0), types.NewFloat(1e-300), types.NewFloat(3)},
		{bin(""), bin("\x00"), bin("a"), bin("ab"), bin("b\xff\xff")},
		{mustDecimal(t, "-100.5"), mustDecimal(t, "-100.25"), mustDecimal(t, "-1"), mustDecimal(t, "-0.001"), mustDecimal(t, "0"),
			mustDecimal(t, "0.001"), mustDecimal(t, "0.01"), mustDecimal(t, "1"), mustDecimal(t, "1.5"), mustDecimal(t, "10"), mustDecimal(t, "12345678901234567890.123")},
	}
	for _, g := range groups {
		var encs [][]byte
		for _, d := range g {
			e, err := EncodeKeyDatum(nil, d)
			if err != nil {
				t.Fatal(err)
			}
			rest, back, err := DecodeKeyDatum(append(e, 0x42))
			if err != nil || !bytes.Equal(rest, []byte{0x42}) || types.Compare(back, d) != 0 {
				t.Fatalf("decode(encode(%v)) = %v, %v", d, back, err)
			}
			encs = append(encs, e)
		}
		if !slices.IsSortedFunc(encs, bytes.Compare) {
			t.Fatalf("encodings of %v are not in order", g)
		}
	}
}

func TestRowRoundTrip(t *testing.T) {
	tm, _ := types.ParseTime("2024-02-29 13:14:15.123456")
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 9}
	vals := []types.Datum{types.NewInt(-5), types.NewUint(math.MaxUint64), types.NewFloat(1.5), types.NewString("héllo"),
		mustDecimal(t, "-12.340"), types.NewTime(tm, types.TimeDatetime, 6), types.NewDuration(-3_600_000_001, 6), types.Null}
	b := EncodeRow(nil, ids, vals)
	// Decode in another order, with a column the row does not have.
	want := []int64{9, 7, 6, 5, 4, 3, 2, 1, 8}
	out := make([]types.Datum, len(want))
	present := make([]bool, len(want))
	if err := DecodeRow(b, want, out, present); err != nil {
		t.Fatal(err)
	}
	for i, id := range want {
		j := slices.Index(ids, id)
		if j < 0 {
			if !out[i].IsNull() || present[i] {
				t.Fatalf("column %d: got %v, want NULL absent", id, out[i])
			}
			continue
		}
		if out[i].String() != vals[j].String() {
			t.Fatalf("column %d: got %v, want %v", id, out[i], vals[j])
		}
	}
	// Random truncations never panic.
	r := rand.New(rand.NewPCG(1, 1))
	for range 1000 {
		_ = DecodeRow(b[:r.IntN(len(b))], want, out, nil)
	}
}

// An explicit NULL marker decodes as a present NULL; a column the row
// lacks is absent.
func TestRowNullMarker(t *testing.T) {
	b := AppendNull(EncodeRow(nil, []int64{1, 2}, []types.Datum{types.NewInt(7), types.Null}), 2)
	out := make([]types.Datum, 3)
	present := make([]bool, 3)
	if err := DecodeRow(b, []int64{1, 2, 3}, out, present); err != nil {
		t.Fatal(err)
	}
	if out[0].Int() != 7 || !present[0] {
		t.Fatalf("column 1: %v %v", out[0], present[0])
	}
	if !out[1].IsNull() || !present[1] {
		t.Fatalf("column 2 should be a present NULL: %v %v", out[1], present[1])
	}
	if !out[2].IsNull() || present[2] {
		t.Fatalf("column 3 should be absent: %v %v", out[2], present[2])
	}
}

func TestKeys(t *testing.T) {
	k := RowKey(42, IntHandle(-7))
	tid, h, err := DecodeRowKey(k, false)
	if err != nil || tid != 42 || h.Int != -7 {
		t.Fatalf("DecodeRowKey = %d %v %v", tid, h, err)
	}
	if !bytes.HasPrefix(k, RowPrefix(42)) || bytes.Compare(k, TableEnd(42)) >= 0 {
		t.Fatal("row key outside its table's range")
	}
	ik, err := IndexKey(42, 3, []types.Datum{bin("x"), types.Null}, IntHandle(9), true)
	if err != nil {
		t.Fatal(err)
	}
	vals, h, has, err := DecodeIndexKey(ik, 2, false)
	if err != nil || !has || h.Int != 9 || vals[0].Str() != "x" || !vals[1].IsNull() {
		t.Fatalf("DecodeIndexKey = %v %v %v %v", vals, h, has, err)
	}
	if bytes.Compare(IndexPrefix(42, math.MaxInt64), RowPrefix(42)) >= 0 {
		t.Fatal("indexes must sort before rows")
	}
}
