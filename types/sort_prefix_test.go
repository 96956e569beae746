package types_test

import (
	"cmp"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/types"
)

// TestSortKeyPrefix checks the abbreviated key's contract on random
// strings of characters that weigh alike, differently, as spaces inside
// and at the end, and as bad UTF-8: whenever two prefixes differ they
// order the strings as CompareStrings does, and equal strings have equal
// prefixes.
func TestSortKeyPrefix(t *testing.T) {
	alphabet := []string{"a", "A", "á", "b", " ", "\t", "\x00", "ß", "s", "😀", "😁", "\xef", "\xef\xbf\xbd", "1", "é", "€"}
	rng := rand.New(rand.NewPCG(7, 8))
	var strs []string
	for range 400 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		strs = append(strs, b.String())
	}
	strs = append(strs, "", " ", "a", "a ", "a\t", "aaaa", "aaaa ", "aaaab", "AAAA", "aaaaaaaaa", "aaaaaaaa")
	checked := 0
	for _, c := range []types.Collation{types.CollationGeneralCI, types.CollationBin, types.CollationNoPadBin, types.CollationBinary} {
		for _, x := range strs {
			px := types.SortKeyPrefix([]byte(x), c)
			for _, y := range strs {
				py := types.SortKeyPrefix([]byte(y), c)
				want := types.CompareStrings([]byte(x), []byte(y), c)
				if want == 0 && px != py {
					t.Fatalf("collation %d: %q and %q are equal but their prefixes %x, %x differ", c, x, y, px, py)
				}
				if px != py {
					checked++
					if got := cmp.Compare(px, py); got != want {
						t.Fatalf("collation %d: prefixes of %q, %q order them %d, CompareStrings %d", c, x, y, got, want)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no pair had different prefixes")
	}
}
