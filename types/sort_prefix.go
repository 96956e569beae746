package types

import "encoding/binary"

// SortKeyPrefix is the first 8 bytes of b's sort key under c (what
// AppendSortKey appends), zero-padded, as a big-endian number: an
// abbreviated key. For two strings under the same collation, unequal
// prefixes order them as CompareStrings does; equal prefixes say nothing,
// and the strings must be compared in full. Sorting compares the prefixes
// first, which settles most comparisons with one integer comparison.
func SortKeyPrefix(b []byte, c Collation) uint64 {
	var k [8]byte
	switch c {
	case CollationGeneralCI:
		// Trailing spaces go before the prefix is taken: spaces inside the
		// string weigh.
		b = trimTrailingSpaces(b)
		for i := 0; i < len(k) && len(b) > 0; i += 2 {
			r, n := nextRune(b)
			w := generalCIWeight(r)
			k[i], k[i+1] = byte(w>>8), byte(w)
			b = b[n:]
		}
	case CollationBin:
		copy(k[:], trimTrailingSpaces(b))
	default:
		copy(k[:], AppendSortKey(nil, b[:min(len(b), len(k))], c))
	}
	return binary.BigEndian.Uint64(k[:])
}
