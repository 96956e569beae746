package expression

import (
	"strings"
	"unicode/utf8"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// String values carry their collation (types.Collation); an expression's
// static type names it too (FieldType.Collate), for result metadata and
// for the planner's hash keys. expr COLLATE name re-labels a value and
// decides the comparisons it takes part in.

// collationName is the name of a value's collation as result types show it.
func collationName(c types.Collation) (charset, collate string) {
	switch c {
	case types.CollationBin:
		return "utf8mb4", "utf8mb4_bin"
	case types.CollationNoPadBin:
		return "utf8mb4", "utf8mb4_nopad_bin"
	case types.CollationBinary:
		return "binary", "binary"
	case types.CollationJSON:
		return "utf8mb4", "utf8mb4_bin"
	}
	return "utf8mb4", "utf8mb4_general_ci"
}

// stringType is a VARCHAR result type of collation c.
func stringType(flen int, c types.Collation) types.FieldType {
	cs, coll := collationName(c)
	ft := types.FieldType{Tp: mysql.TypeVarString, Flen: flen, Charset: cs, Collate: coll}
	if c == types.CollationBinary {
		ft.Flag |= mysql.BinaryFlag
	}
	return ft
}

// collateFunc is the name of the COLLATE operator's Func.
const collateFunc = "collate"

func (b *Builder) collate(x *ast.SetCollationExpr) (Expr, error) {
	a, err := b.Build(x.Expr)
	if err != nil {
		return nil, err
	}
	name, cs, coll, ok := types.LookupCollation(x.Collate)
	if !ok {
		return nil, errno.New(errno.ErUnknownCollation, "Unknown collation: '%s'", x.Collate)
	}
	at := a.Type()
	if at.IsString() || at.Tp == mysql.TypeNull || at.Tp == mysql.TypeVarString {
		if argCS := at.Charset; argCS == "binary" && cs != "binary" {
			return nil, errno.New(errno.ErCollationCharsetMismatch, "COLLATION '%s' is not valid for CHARACTER SET '%s'", name, argCS)
		}
	}
	tp := types.FieldType{Tp: mysql.TypeVarString, Flen: at.Flen, Charset: cs, Collate: name}
	if !at.IsString() && at.Tp != mysql.TypeNull {
		tp.Flen = max(at.Flen, 0)
	}
	return &Func{Name: collateFunc, Args: []Expr{a}, Tp: tp, Fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		d := v[0]
		if d.Kind() != types.KindString {
			d = types.NewBytes(types.ToText(d))
		}
		return d.WithCollation(coll), nil
	}}, nil
}

// derivation is an operand's coercibility, for CheckCollationMix: a
// COLLATE clause is EXPLICIT, a column IMPLICIT; other operands are left
// unchecked ("").
func derivation(e Expr) (collate, name string) {
	switch x := e.(type) {
	case *Func:
		if x.Name == collateFunc {
			return x.Tp.Collate, "EXPLICIT"
		}
	case *Column:
		if x.Tp.IsString() && x.Tp.Collate != "" {
			return x.Tp.Collate, "IMPLICIT"
		}
	}
	return "", ""
}

// CheckCollationMix refuses, as MySQL does (1267), to compare two strings
// of the same coercibility whose collations cannot be reconciled: two
// different COLLATE clauses, or two columns of one character set with
// different collations neither of which is a _bin one (a _bin collation
// wins over the others of its character set).
func CheckCollationMix(op string, a, b Expr) error {
	ca, da := derivation(a)
	cb, db := derivation(b)
	if da == "" || da != db || strings.EqualFold(ca, cb) {
		return nil
	}
	if da == "IMPLICIT" {
		_, csa, _, oka := types.LookupCollation(ca)
		_, csb, _, okb := types.LookupCollation(cb)
		if !oka || !okb || csa != csb || isBinCollation(ca) || isBinCollation(cb) {
			return nil
		}
	}
	return errno.New(errno.ErCantAggregate2Collation, "Illegal mix of collations (%s,%s) and (%s,%s) for operation '%s'", ca, da, cb, db, op)
}

func isBinCollation(name string) bool {
	name = strings.ToLower(name)
	return name == "binary" || strings.HasSuffix(name, "_bin")
}

// explicitCollation returns the collation a COLLATE clause among args
// imposes on their comparison.
func explicitCollation(args ...Expr) (types.Collation, bool) {
	for _, a := range args {
		if f, ok := a.(*Func); ok && f.Name == collateFunc {
			return f.Tp.Collation(), true
		}
	}
	return 0, false
}

// forceCollation gives two values the collation a COLLATE clause imposes
// on their comparison.
func forceCollation(c types.Collation, a, b types.Datum) (types.Datum, types.Datum) {
	return a.WithCollation(c), b.WithCollation(c)
}

// likeCollation is the collation LIKE matches under.
func likeCollation(a, b types.Datum) types.Collation {
	ca, cb := types.CollationGeneralCI, types.CollationGeneralCI
	if a.Kind() == types.KindString {
		ca = a.Collation()
	}
	if b.Kind() == types.KindString {
		cb = b.Collation()
	}
	return max(ca, cb)
}

// MatchLikeCollated reports whether s matches the LIKE pattern under
// collation c: % matches any run, _ one character (one byte for binary
// strings), escape quotes the next character, and characters compare
// equal as the collation says (without padding).
func MatchLikeCollated(s, pattern []byte, escape rune, c types.Collation) bool {
	var sr, pr []rune
	if c.IsBinary() || c == types.CollationJSON {
		sr, pr = bytesAsRunes(s), bytesAsRunes(pattern)
	} else {
		sr, pr = []rune(string(s)), []rune(string(pattern))
	}
	eq := func(a, b rune) bool { return types.EqualRunes(a, b, c) }
	// Iterative matching with backtracking to the last %: linear for
	// patterns with one %, and no recursion.
	i, j := 0, 0
	starI, starJ := -1, -1
	for i < len(sr) {
		if j < len(pr) {
			p := pr[j]
			switch {
			case p == escape && j+1 < len(pr):
				if eq(sr[i], pr[j+1]) {
					i, j = i+1, j+2
					continue
				}
			case p == '%':
				starI, starJ = i, j
				j++
				continue
			case p == '_':
				i, j = i+1, j+1
				continue
			default:
				if eq(sr[i], p) {
					i, j = i+1, j+1
					continue
				}
			}
		}
		if starJ < 0 {
			return false
		}
		starI++
		i, j = starI, starJ+1
	}
	for j < len(pr) && pr[j] == '%' {
		j++
	}
	return j == len(pr)
}

func bytesAsRunes(b []byte) []rune {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return r
}

// charLen is a string's length in characters (bytes for binary strings).
func charLen(d types.Datum) int {
	b := types.ToText(d)
	if d.Kind() == types.KindString && d.Collation().IsBinary() {
		return len(b)
	}
	return utf8.RuneCount(b)
}
