package types

import (
	"bytes"
	"cmp"

	"github.com/cockroachdb/apd/v3"
)

// Compare orders two non-NULL datums by MySQL's rules for comparison
// operators: integers compare exactly (signed against unsigned too),
// decimals against integers or decimals exactly, a string against a
// string under the stronger of their collations, a time against a time or a string
// parsed as time, ENUM and SET values as compareEnumSet says, and anything
// else as DOUBLE. NULL sorts before
// everything, which is the order ORDER BY uses.
func Compare(a, b Datum) int {
	if a.k == KindNull || b.k == KindNull {
		return cmp.Compare(boolInt(a.k != KindNull), boolInt(b.k != KindNull))
	}
	if a.IsEnumOrSet() || b.IsEnumOrSet() {
		return compareEnumSet(a, b)
	}
	switch {
	case a.k == KindString && b.k == KindString:
		return CompareStrings(a.b, b.b, stronger(a.c, b.c))
	case a.k == KindInt && b.k == KindInt:
		return cmp.Compare(a.i, b.i)
	case a.k == KindUint && b.k == KindUint:
		return cmp.Compare(uint64(a.i), uint64(b.i))
	case a.k == KindInt && b.k == KindUint:
		if a.i < 0 {
			return -1
		}
		return cmp.Compare(uint64(a.i), uint64(b.i))
	case a.k == KindUint && b.k == KindInt:
		return -Compare(b, a)
	case a.k == KindTime && b.k == KindTime:
		return cmp.Compare(uint64(a.i), uint64(b.i))
	case a.k == KindDuration && b.k == KindDuration:
		return cmp.Compare(a.i, b.i)
	case a.k == KindTime && b.k == KindString:
		if t, err := ParseTime(string(b.b)); err == nil {
			return cmp.Compare(uint64(a.i), uint64(t))
		}
		return bytes.Compare(a.AppendText(nil), b.b)
	case a.k == KindString && b.k == KindTime:
		return -Compare(b, a)
	case isExact(a.k) && isExact(b.k):
		da, _ := ToDecimal(a)
		db, _ := ToDecimal(b)
		return da.Cmp(db)
	}
	fa, _ := ToFloat(a)
	fb, _ := ToFloat(b)
	return cmp.Compare(fa, fb)
}

// compareEnumSet compares an ENUM or SET with another value: with another
// ENUM or SET by number (the order ORDER BY sorts them in), with a string
// by text, with anything else by number.
func compareEnumSet(a, b Datum) int {
	switch {
	case a.IsEnumOrSet() && b.IsEnumOrSet():
		return cmp.Compare(uint64(a.i), uint64(b.i))
	case a.IsEnumOrSet() && b.k == KindString:
		return CompareStrings(a.b, b.b, stronger(a.c, b.c))
	case a.IsEnumOrSet():
		return Compare(NewUint(uint64(a.i)), b)
	}
	return -compareEnumSet(b, a)
}

func isExact(k Kind) bool { return k == KindInt || k == KindUint || k == KindDecimal }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CompareDecimal compares two decimals.
func CompareDecimal(a, b *apd.Decimal) int { return a.Cmp(b) }
