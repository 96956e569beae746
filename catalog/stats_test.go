package catalog

import (
	"encoding/binary"
	"math"
	"testing"
)

func intKey(v int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{0x03}, uint64(v)^(1<<63))
}

// An equi-depth histogram of 1..1000 without the multiples of 100, and a
// value repeated 500 times, estimates ranges and points within a few rows.
func TestHistogramEstimates(t *testing.T) {
	var vals [][]byte
	for v := int64(1); v <= 1000; v++ {
		if v%100 != 0 {
			vals = append(vals, intKey(v))
		}
		if v == 700 {
			for range 500 {
				vals = append(vals, intKey(700))
			}
		}
	}
	h := BuildHistogram(vals, 64, 1)
	if h.Total() != int64(len(vals)) || len(h.Buckets) > 64 {
		t.Fatalf("total %d buckets %d", h.Total(), len(h.Buckets))
	}
	for i := 1; i < len(h.Buckets); i++ {
		if string(h.Buckets[i-1].Upper) >= string(h.Buckets[i].Lower) {
			t.Fatalf("buckets %d and %d overlap", i-1, i)
		}
	}
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s: estimated %.1f, want %.0f ± %.0f", what, got, want, tol)
		}
	}
	near("100 <= v < 121", h.Between(intKey(100), true, intKey(121), false), 20, 4)
	near("v < 30", h.Between(nil, true, intKey(30), false), 29, 3)
	near("v >= 950", h.Between(intKey(950), true, nil, false), 50, 4)
	near("v = 700", h.Equal(intKey(700)), 501, 1)
	near("v = 701", h.Equal(intKey(701)), 1, 1)
	near("v = 100", h.Equal(intKey(100)), 0, 1)
	near("600 <= v < 800", h.Between(intKey(600), true, intKey(800), false), 198+500, 6)
	near("v = 5000", h.Equal(intKey(5000)), 0, 0)
}
