package catalog

import (
	"bytes"
	"encoding/binary"
	"sort"
)

// Histogram is an equi-depth histogram of one column's values or one
// index's keys, over their memcomparable encodings (tablecodec's key
// datums; for an index, its columns' datums without the handle), so that
// a range of an access path, encoded the same way, can be estimated by
// comparing bytes. NULLs are not in it (ColumnStats.NullCount).
//
// Buckets are in order; Count is cumulative: the number of values up to
// and including the bucket's Upper. Repeat is how many values equal Upper.
type Histogram struct {
	Buckets []Bucket `json:"buckets"`
}

// Bucket is one bucket of a Histogram.
type Bucket struct {
	Lower  []byte `json:"lower"`
	Upper  []byte `json:"upper"`
	Count  int64  `json:"count"`
	Repeat int64  `json:"repeat"`
	NDV    int64  `json:"ndv"`
}

// ColumnStats are the statistics of one column or one index.
type ColumnStats struct {
	NDV       int64     `json:"ndv"`
	NullCount int64     `json:"null_count"`
	AvgSize   float64   `json:"avg_size"`
	Hist      Histogram `json:"hist"`
}

// Total is the number of non-NULL values the histogram holds.
func (h *Histogram) Total() int64 {
	if len(h.Buckets) == 0 {
		return 0
	}
	return h.Buckets[len(h.Buckets)-1].Count
}

// BuildHistogram makes an equi-depth histogram of at most nBuckets
// buckets from sorted encoded values (all non-NULL), scaled by factor
// (the ratio of rows to sampled rows; 1 for a full scan). Equal values
// stay in one bucket.
func BuildHistogram(sorted [][]byte, nBuckets int, factor float64) Histogram {
	var h Histogram
	if len(sorted) == 0 || nBuckets <= 0 {
		return h
	}
	depth := (len(sorted) + nBuckets - 1) / nBuckets
	scale := func(n int) int64 { return int64(float64(n)*factor + 0.5) }
	var cur *Bucket
	inBucket, ndv, repeat := 0, 0, 0
	for i, v := range sorted {
		switch {
		case cur != nil && bytes.Equal(v, cur.Upper):
			repeat++
			inBucket++
		case cur == nil || inBucket >= depth:
			if cur != nil {
				cur.Repeat, cur.NDV = scale(repeat), int64(ndv)
			}
			h.Buckets = append(h.Buckets, Bucket{Lower: v, Upper: v})
			cur = &h.Buckets[len(h.Buckets)-1]
			inBucket, ndv, repeat = 1, 1, 1
		default:
			cur.Upper = v
			inBucket++
			ndv++
			repeat = 1
		}
		cur.Count = scale(i + 1)
	}
	cur.Repeat, cur.NDV = scale(repeat), int64(ndv)
	return h
}

// LessThan estimates how many values are below key (or at most key, when
// inclusive).
func (h *Histogram) LessThan(key []byte, inclusive bool) float64 {
	bs := h.Buckets
	// The first bucket whose upper bound reaches key.
	i := sort.Search(len(bs), func(i int) bool { return bytes.Compare(bs[i].Upper, key) >= 0 })
	if i == len(bs) {
		return float64(h.Total())
	}
	var before float64
	if i > 0 {
		before = float64(bs[i-1].Count)
	}
	b := bs[i]
	inside := float64(b.Count) - before
	switch c := bytes.Compare(key, b.Lower); {
	case c < 0:
		return before
	case bytes.Equal(key, b.Upper):
		if inclusive {
			return float64(b.Count)
		}
		return float64(b.Count - b.Repeat)
	case c == 0:
		if inclusive {
			return before + max(inside/float64(max(b.NDV, 1)), 1)
		}
		return before
	}
	// key is strictly inside the bucket: interpolate the part below
	// Upper's repeats.
	frac := fraction(b.Lower, b.Upper, key)
	return before + (inside-float64(b.Repeat))*frac
}

// fraction places key between lo and hi (lo < key < hi) as a number in
// [0, 1], reading the eight bytes after their common prefix as numbers.
func fraction(lo, hi, key []byte) float64 {
	p := 0
	for p < len(lo) && p < len(hi) && lo[p] == hi[p] {
		p++
	}
	num := func(b []byte) float64 {
		var buf [8]byte
		if p < len(b) {
			copy(buf[:], b[p:])
		}
		return float64(binary.BigEndian.Uint64(buf[:]))
	}
	l, hv, k := num(lo), num(hi), num(key)
	if hv <= l {
		return 0.5
	}
	return min(max((k-l)/(hv-l), 0), 1)
}

// Between estimates the values in the range from lo to hi (nil: unbounded
// on that side), each bound inclusive or not.
func (h *Histogram) Between(lo []byte, loIncl bool, hi []byte, hiIncl bool) float64 {
	upper := float64(h.Total())
	if hi != nil {
		upper = h.LessThan(hi, hiIncl)
	}
	lower := 0.0
	if lo != nil {
		lower = h.LessThan(lo, !loIncl)
	}
	return max(upper-lower, 0)
}

// Equal estimates how many values equal key: a bucket's upper bound knows
// its repeats; inside a bucket, the bucket's rows spread over its distinct
// values.
func (h *Histogram) Equal(key []byte) float64 {
	bs := h.Buckets
	i := sort.Search(len(bs), func(i int) bool { return bytes.Compare(bs[i].Upper, key) >= 0 })
	if i == len(bs) || bytes.Compare(key, bs[i].Lower) < 0 {
		return 0
	}
	b := bs[i]
	if bytes.Equal(key, b.Upper) {
		return float64(b.Repeat)
	}
	var before int64
	if i > 0 {
		before = bs[i-1].Count
	}
	rest := float64(b.Count - before - b.Repeat)
	return max(rest/float64(max(b.NDV-1, 1)), 1)
}
