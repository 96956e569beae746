package types

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"strings"
	"unicode/utf8"
)

// Collation says what the bytes of a string datum are and how they
// compare. Every string datum carries one; the zero value is the default,
// utf8mb4_general_ci, which string literals and function results get.
//
// Two strings of different collations compare under the stronger one, in
// the order below: binary bytes beat the _bin collations, which beat the
// case-insensitive default. (MySQL decides by coercibility: a column beats
// a literal, an explicit COLLATE beats both; expressions apply an explicit
// COLLATE themselves, and a column's collation is never weaker than a
// literal's unless the column is _ci, where both agree.)
type Collation uint8

const (
	// CollationGeneralCI is utf8mb4_general_ci: each character weighs as
	// MySQL's general_ci table says (case and accents of Latin letters
	// ignored, every supplementary character alike), trailing spaces
	// ignored.
	CollationGeneralCI Collation = iota
	// CollationBin is utf8mb4_bin: code points (UTF-8 byte order),
	// trailing spaces ignored.
	CollationBin
	// CollationNoPadBin is utf8mb4_nopad_bin: code points, trailing
	// spaces count. Text columns of tables created before Basalt had
	// collations compare this way (their index keys hold the raw bytes).
	CollationNoPadBin
	// CollationBinary is the binary character set: bytes, no padding.
	CollationBinary
	// CollationJSON marks JSON text (a JSON column or function result);
	// it compares as bytes.
	CollationJSON
)

// collationInfo describes a collation name Basalt accepts.
type collationInfo struct {
	name    string
	charset string
	id      int
	coll    Collation
	isDef   bool // the default collation of its character set
}

// collations are the names CREATE TABLE, COLLATE and SHOW COLLATION know.
// The Unicode and 0900 collations compare as utf8mb4_general_ci does: the
// same case- and accent-insensitivity for Latin letters, without their
// expansions (ß = ss) and ignorable characters.
var collations = []collationInfo{
	{"utf8mb4_general_ci", "utf8mb4", 45, CollationGeneralCI, true},
	{"utf8mb4_bin", "utf8mb4", 46, CollationBin, false},
	{"utf8mb4_unicode_ci", "utf8mb4", 224, CollationGeneralCI, false},
	{"utf8mb4_unicode_520_ci", "utf8mb4", 246, CollationGeneralCI, false},
	{"utf8mb4_0900_ai_ci", "utf8mb4", 255, CollationGeneralCI, false},
	{"utf8mb4_0900_bin", "utf8mb4", 309, CollationNoPadBin, false},
	{"utf8mb4_nopad_bin", "utf8mb4", 1070, CollationNoPadBin, false},
	{"utf8mb3_general_ci", "utf8mb3", 33, CollationGeneralCI, true},
	{"utf8mb3_bin", "utf8mb3", 83, CollationBin, false},
	{"utf8mb3_unicode_ci", "utf8mb3", 192, CollationGeneralCI, false},
	{"latin1_swedish_ci", "latin1", 8, CollationGeneralCI, true},
	{"latin1_general_ci", "latin1", 48, CollationGeneralCI, false},
	{"latin1_bin", "latin1", 47, CollationBin, false},
	{"ascii_general_ci", "ascii", 11, CollationGeneralCI, true},
	{"ascii_bin", "ascii", 65, CollationBin, false},
	{"binary", "binary", 63, CollationBinary, true},
}

// charsetAliases maps the names MySQL accepts for a character set to the
// one it reports.
var charsetAliases = map[string]string{"utf8": "utf8mb3", "utf8mb3": "utf8mb3", "utf8mb4": "utf8mb4",
	"latin1": "latin1", "ascii": "ascii", "binary": "binary"}

func collationNamed(name string) *collationInfo {
	name = strings.ToLower(name)
	if rest, ok := strings.CutPrefix(name, "utf8_"); ok {
		name = "utf8mb3_" + rest
	}
	for i := range collations {
		if collations[i].name == name {
			return &collations[i]
		}
	}
	return nil
}

// LookupCollation resolves a collation name (utf8_* names as utf8mb3_*):
// its canonical name, character set and comparison rule.
func LookupCollation(name string) (canonical, charset string, c Collation, ok bool) {
	ci := collationNamed(name)
	if ci == nil {
		return "", "", 0, false
	}
	return ci.name, ci.charset, ci.coll, true
}

// CollationID returns the protocol id of a collation name, or 0.
func CollationID(name string) int {
	if ci := collationNamed(name); ci != nil {
		return ci.id
	}
	return 0
}

// CollationOf returns the comparison rule of a collation name; unknown
// and empty names get the default.
func CollationOf(name string) Collation {
	if ci := collationNamed(name); ci != nil {
		return ci.coll
	}
	return CollationGeneralCI
}

// LookupCharset resolves a character set name to the name MySQL reports
// and its default collation.
func LookupCharset(name string) (charset, defaultCollation string, ok bool) {
	cs, ok := charsetAliases[strings.ToLower(name)]
	if !ok {
		return "", "", false
	}
	for _, ci := range collations {
		if ci.charset == cs && ci.isDef {
			return cs, ci.name, true
		}
	}
	return "", "", false
}

// CollationRow is one row of SHOW COLLATION.
type CollationRow struct {
	Name, Charset string
	ID            int
	Default       bool
}

// Collations lists the collations Basalt knows.
func Collations() []CollationRow {
	out := make([]CollationRow, len(collations))
	for i, ci := range collations {
		out[i] = CollationRow{ci.name, ci.charset, ci.id, ci.isDef}
	}
	return out
}

// stronger returns the collation two strings compare under.
func stronger(a, b Collation) Collation { return max(a, b) }

// CompareStrings orders two strings under collation c.
func CompareStrings(a, b []byte, c Collation) int {
	switch c {
	case CollationGeneralCI:
		return compareGeneralCI(a, b)
	case CollationBin:
		return bytes.Compare(trimTrailingSpaces(a), trimTrailingSpaces(b))
	}
	return bytes.Compare(a, b)
}

func trimTrailingSpaces(b []byte) []byte {
	i := len(b)
	for i > 0 && b[i-1] == ' ' {
		i--
	}
	return b[:i]
}

// generalCIWeight is a character's utf8mb4_general_ci weight.
func generalCIWeight(r rune) uint16 {
	if r > 0xFFFF {
		return 0xFFFD
	}
	if p := generalCIPages[r>>8]; p != nil {
		return p[r&0xFF]
	}
	return uint16(r)
}

func nextRune(b []byte) (rune, int) {
	if b[0] < utf8.RuneSelf {
		return rune(b[0]), 1
	}
	return utf8.DecodeRune(b)
}

func compareGeneralCI(a, b []byte) int {
	a, b = trimTrailingSpaces(a), trimTrailingSpaces(b)
	// Skip the bytes both share, backed up to where neither string
	// continues a character (so the skipped bytes decode the same in
	// both), then ASCII a byte at a time; from the first other byte on,
	// character by character.
	n := min(len(a), len(b))
	i := commonPrefix(a[:n], b[:n])
	for i > 0 && ((i < len(a) && !utf8.RuneStart(a[i])) || (i < len(b) && !utf8.RuneStart(b[i]))) {
		i--
	}
	for i < n {
		ca, cb := a[i], b[i]
		if ca >= utf8.RuneSelf || cb >= utf8.RuneSelf {
			break
		}
		if ca != cb {
			if wa, wb := generalCIPages[0][ca], generalCIPages[0][cb]; wa != wb {
				return cmp.Compare(wa, wb)
			}
		}
		i++
	}
	a, b = a[i:], b[i:]
	for len(a) > 0 && len(b) > 0 {
		ra, na := nextRune(a)
		rb, nb := nextRune(b)
		if ra != rb {
			if wa, wb := generalCIWeight(ra), generalCIWeight(rb); wa != wb {
				return cmp.Compare(wa, wb)
			}
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// AppendSortKey appends the bytes whose bytewise order is b's order under
// c, and which are equal exactly when the strings compare equal: what an
// index key and a hash key hold for a string.
func AppendSortKey(dst, b []byte, c Collation) []byte {
	switch c {
	case CollationGeneralCI:
		b = trimTrailingSpaces(b)
		dst = slices.Grow(dst, 2*len(b))
		for len(b) > 0 {
			if c := b[0]; c < utf8.RuneSelf {
				w := generalCIPages[0][c]
				dst = append(dst, byte(w>>8), byte(w))
				b = b[1:]
				continue
			}
			r, n := nextRune(b)
			w := generalCIWeight(r)
			dst = append(dst, byte(w>>8), byte(w))
			b = b[n:]
		}
		return dst
	case CollationBin:
		return append(dst, trimTrailingSpaces(b)...)
	}
	return append(dst, b...)
}

// AppendShortSortKey appends general_ci's sort key of b with one byte per
// character instead of two, and reports true, when every character's
// weight fits in a byte; otherwise it appends nothing and reports false.
// The choice depends on the weights alone, so two strings that compare
// equal both get a short key or both do not: a hash key (DISTINCT, GROUP
// BY) may use the short one when there is one. Only for general_ci.
func AppendShortSortKey(dst, b []byte) ([]byte, bool) {
	b = trimTrailingSpaces(b)
	at := len(dst)
	dst = slices.Grow(dst, len(b))
	for len(b) > 0 {
		var w uint16
		if c := b[0]; c < utf8.RuneSelf {
			w = generalCIPages[0][c]
			b = b[1:]
		} else {
			r, n := nextRune(b)
			w = generalCIWeight(r)
			b = b[n:]
		}
		if w > 0xff {
			return dst[:at], false
		}
		dst = append(dst, byte(w))
	}
	return dst, true
}

// EqualRunes reports whether two characters are equal under c (for LIKE,
// which compares character by character and pads nothing).
func EqualRunes(a, b rune, c Collation) bool {
	if a == b {
		return true
	}
	return c == CollationGeneralCI && generalCIWeight(a) == generalCIWeight(b)
}

// IsBinary reports a collation whose strings are bytes rather than
// characters.
func (c Collation) IsBinary() bool { return c == CollationBinary }

// commonPrefix is the length of the longest common prefix of a and b,
// which have the same length.
func commonPrefix(a, b []byte) int {
	i := 0
	for ; i+8 <= len(a); i += 8 {
		if binary.LittleEndian.Uint64(a[i:]) != binary.LittleEndian.Uint64(b[i:]) {
			break
		}
	}
	for i < len(a) && a[i] == b[i] {
		i++
	}
	return i
}
