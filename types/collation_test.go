package types_test

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/basalt-db/basalt/testkit"
	"github.com/basalt-db/basalt/types"
	_ "github.com/go-sql-driver/mysql"
)

func TestCompareStrings(t *testing.T) {
	ci, bin, nopad, binary := types.CollationGeneralCI, types.CollationBin, types.CollationNoPadBin, types.CollationBinary
	cases := []struct {
		a, b string
		c    types.Collation
		want int
	}{
		{"a", "A", ci, 0}, {"a", "á", ci, 0}, {"ß", "s", ci, 0}, {"a", "a   ", ci, 0}, {"", " ", ci, 0},
		{"aé", "aè", ci, 0}, {"\xef\xbf\xbd", "\xef", ci, 0}, {"\xe2\x82\xac", "\xe2\x82x", ci, -1}, {"xxxxxxxxé", "xxxxxxxxF", ci, -1}, {"abcdefghijK", "ABCDEFGHIJk", ci, 0},
		{"a", "b", ci, -1}, {"B", "a", ci, 1}, {"Äpfel", "apple", ci, -1}, {"😀", "😁", ci, 0},
		{"a", "A", bin, 1}, {"a", "a ", bin, 0}, {"B", "a", bin, -1},
		{"a", "a ", nopad, -1}, {"a", "A", nopad, 1},
		{"a", "a ", binary, -1}, {"a", "A", binary, 1},
	}
	for _, c := range cases {
		if got := types.CompareStrings([]byte(c.a), []byte(c.b), c.c); got != c.want {
			t.Errorf("CompareStrings(%q, %q, %d) = %d, want %d", c.a, c.b, c.c, got, c.want)
		}
	}
	// A string datum compares under the stronger collation of the two.
	a := types.NewString("a")
	A := types.NewCollatedBytes([]byte("A"), types.CollationBin)
	if types.Compare(a, A) == 0 || types.Compare(a, types.NewString("A")) != 0 {
		t.Error("utf8mb4_bin must win over the default collation")
	}
}

// TestGeneralCIMatchesMariaDB checks the utf8mb4_general_ci weight of every
// code point of the Basic Multilingual Plane against MariaDB's
// WEIGHT_STRING, where collation_general_ci.go came from. It needs a
// MariaDB: BASALT_MARIADB_CHECKS=1.
func TestGeneralCIMatchesMariaDB(t *testing.T) {
	if os.Getenv("BASALT_MARIADB_CHECKS") == "" {
		t.Skip("set BASALT_MARIADB_CHECKS=1 to compare with MariaDB")
	}
	db := testkit.StartMariaDB(t).OpenDB(t, "mysql")
	rows, err := db.Query("SELECT seq, HEX(WEIGHT_STRING(CONVERT(CHAR(seq USING utf32) USING utf8mb4) COLLATE utf8mb4_general_ci)) FROM seq_0_to_65535")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var cp int
		var hex string
		if err := rows.Scan(&cp, &hex); err != nil {
			t.Fatal(err)
		}
		if cp >= 0xD800 && cp <= 0xDFFF {
			continue // surrogates are not characters
		}
		w, _ := strconv.ParseUint(hex, 16, 16)
		key := types.AppendSortKey(nil, utf8.AppendRune(nil, rune(cp)), types.CollationGeneralCI)
		if cp == ' ' {
			continue // trailing spaces are ignored
		}
		if len(key) != 2 || uint64(key[0])<<8|uint64(key[1]) != w {
			t.Errorf("U+%04X: weight %x, MariaDB %04X", cp, key, w)
		}
		n++
	}
	if n < 60000 {
		t.Fatalf("compared %d code points", n)
	}
}

// BenchmarkCompareGeneralCI compares sysbench-like 120-character strings
// that differ near the end.
func BenchmarkCompareGeneralCI(b *testing.B) {
	x := []byte("83868641912-28773972837-60736120486-75162659906-27563526494-20381887404-41576422241-93426793964-56405065102-33518432330")
	y := append([]byte(nil), x...)
	y[110] = '9'
	for range b.N {
		types.CompareStrings(x, y, types.CollationGeneralCI)
	}
}

// TestAppendShortSortKey: where general_ci's weights all fit in a byte, the
// short key is the sort key without its high bytes, and two strings that
// compare equal get keys that are equal (both short, or both not).
func TestAppendShortSortKey(t *testing.T) {
	alphabet := []string{"a", "A", "á", "e", "é", "E", " ", "\t", "ß", "s", "😀", "\xef", "1", "€", "Ω", "ω", "ǅ"}
	rng := rand.New(rand.NewPCG(9, 10))
	strs := []string{"", " ", "e", "é ", "E", "ω", "Ω", "€", "a€"}
	for range 400 {
		var b strings.Builder
		for range rng.IntN(10) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		strs = append(strs, b.String())
	}
	key := func(s string) (string, bool) {
		k, ok := types.AppendShortSortKey([]byte("x"), []byte(s))
		if !ok && string(k) != "x" {
			t.Fatalf("%q: no short key, but %q appended", s, k)
		}
		return string(k[1:]), ok
	}
	short, long := 0, 0
	for _, x := range strs {
		kx, ok := key(x)
		full := types.AppendSortKey(nil, []byte(x), types.CollationGeneralCI)
		if ok {
			short++
			want := make([]byte, 0, len(full)/2)
			for i := 0; i < len(full); i += 2 {
				if full[i] != 0 {
					t.Fatalf("%q: short key %x, but its sort key %x has a weight over 0xff", x, kx, full)
				}
				want = append(want, full[i+1])
			}
			if kx != string(want) {
				t.Fatalf("%q: short key %x, want %x (sort key %x)", x, kx, want, full)
			}
		} else {
			long++
		}
		for _, y := range strs {
			if types.CompareStrings([]byte(x), []byte(y), types.CollationGeneralCI) != 0 {
				continue
			}
			ky, oky := key(y)
			if ok != oky || kx != ky {
				t.Fatalf("%q and %q are equal, short keys %x (%t) and %x (%t)", x, y, kx, ok, ky, oky)
			}
		}
	}
	if short == 0 || long == 0 {
		t.Fatalf("short keys %d, none %d: the strings do not cover both", short, long)
	}
}
