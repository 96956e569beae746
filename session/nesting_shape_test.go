package session

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/parserdriver"
)

// TestNestingBoundByShape: statements of one shape (parserdriver.Shape)
// have the same nesting bound, whatever their literals hold: a statement
// taken from a text template is not checked again (ExecuteQuery), since
// the template's first statement was.
func TestNestingBoundByShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	// Literal contents that would count if they were read as SQL.
	strs := []string{"", "a", "((((", "))", "1 + 2 * 3", "NOT a AND b OR c", "x'' ( y", "-- no", "case when", "<=>!~^&|%/*-+"}
	str := func() string {
		return "'" + strings.ReplaceAll(strs[rng.IntN(len(strs))], "'", "''") + "'"
	}
	num := func() string { return fmt.Sprint(rng.Int64N(1 << uint(rng.IntN(62)+1))) }
	// A skeleton of a statement: %s a string, %d an integer.
	skeletons := []string{
		"INSERT INTO t (a, b) VALUES (%d, %s)",
		"INSERT INTO t VALUES (%d, (%d + %d) * %d, %s, NOT %d, CONCAT(%s, %s))",
		"INSERT INTO t VALUES ((((%d)))), (-%d), (%d - -%d)",
		"REPLACE INTO t SET a = %d, b = %s, c = %d AND %d OR %d",
		"INSERT INTO t VALUES (%s), (%s); INSERT INTO u VALUES (%d)",
	}
	for i := 0; i < 2000; i++ {
		sk := skeletons[rng.IntN(len(skeletons))]
		fill := func() string {
			var b strings.Builder
			for j := 0; j < len(sk); j++ {
				if sk[j] == '%' && j+1 < len(sk) {
					if sk[j+1] == 's' {
						b.WriteString(str())
					} else {
						b.WriteString(num())
					}
					j++
					continue
				}
				b.WriteByte(sk[j])
			}
			return b.String()
		}
		a, b := fill(), fill()
		sa, _, okA := parserdriver.Shape(nil, nil, a)
		sb, _, okB := parserdriver.Shape(nil, nil, b)
		if !okA || !okB || string(sa) != string(sb) {
			continue // not one shape: no template would serve both
		}
		if na, nb := nestingBound(a, maxNesting), nestingBound(b, maxNesting); na != nb {
			t.Fatalf("one shape, nesting bounds %d and %d:\n%s\n%s", na, nb, a, b)
		}
	}
}
