package expression

import (
	"regexp"
	"sync"
	"unicode/utf8"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// REGEXP, RLIKE and the REGEXP_* functions, with Go's RE2 syntax (the
// common subset of MySQL's ICU expressions: no backreferences or
// lookaround). Matching is case-insensitive under a _ci collation, as in
// MySQL.

// regexpCache keeps compiled patterns, which are usually constants.
var regexpCache sync.Map // string → *regexp.Regexp

func compileRegexp(pattern []byte, ci bool) (*regexp.Regexp, error) {
	key := string(pattern)
	if ci {
		key = "(?i)" + key
	}
	if re, ok := regexpCache.Load(key); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(key)
	if err != nil {
		return nil, errno.New(errno.ErRegexp, "Got error '%s' from regexp", err.Error())
	}
	regexpCache.Store(key, re)
	return re, nil
}

// regexpFor compiles a pattern for matching subject: case-insensitive
// unless a binary or _bin collation is involved.
func regexpFor(subject, pattern types.Datum, flags string) (*regexp.Regexp, error) {
	ci := likeCollation(subject, pattern) == types.CollationGeneralCI
	for _, f := range flags {
		switch f {
		case 'c':
			ci = false
		case 'i':
			ci = true
		}
	}
	return compileRegexp(types.ToText(pattern), ci)
}

func (b *Builder) regexpExpr(x *ast.PatternRegexpExpr) (Expr, error) {
	e, err := b.Build(x.Expr)
	if err != nil {
		return nil, err
	}
	p, err := b.Build(x.Pattern)
	if err != nil {
		return nil, err
	}
	not := x.Not
	return &Func{Name: "regexp", Args: []Expr{e, p}, Tp: typeBool, Fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		re, err := regexpFor(v[0], v[1], "")
		if err != nil {
			return types.Null, err
		}
		return types.NewBool(re.Match(types.ToText(v[0])) != not), nil
	}}, nil
}

func regexpBuiltins() map[string]builtin {
	flagsAt := func(v []types.Datum, i int) string {
		if len(v) > i && !v[i].IsNull() {
			return string(types.ToText(v[i]))
		}
		return ""
	}
	// startAt is the byte offset of 1-based character position pos.
	startAt := func(s []byte, pos int64) (int, bool) {
		if pos < 1 {
			return 0, false
		}
		off := 0
		for k := int64(1); k < pos; k++ {
			if off >= len(s) {
				return 0, pos == int64(utf8.RuneCount(s))+1
			}
			_, n := utf8.DecodeRune(s[off:])
			off += n
		}
		return off, true
	}
	return map[string]builtin{
		"regexp_like": {minArgs: 2, maxArgs: 3, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			re, err := regexpFor(v[0], v[1], flagsAt(v, 2))
			if err != nil {
				return types.Null, err
			}
			return types.NewBool(re.Match(types.ToText(v[0]))), nil
		}},
		"regexp_substr": {minArgs: 2, maxArgs: 5, tp: strType, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			re, err := regexpFor(v[0], v[1], flagsAt(v, 4))
			if err != nil {
				return types.Null, err
			}
			s := types.ToText(v[0])
			pos, occ := int64(1), int64(1)
			if len(v) > 2 {
				pos = argInt(v[2])
			}
			if len(v) > 3 {
				occ = argInt(v[3])
			}
			off, ok := startAt(s, pos)
			if !ok {
				return types.Null, errno.New(3685, "Index out of bounds in regular expression search.")
			}
			all := re.FindAllIndex(s[off:], -1)
			if occ < 1 || int64(len(all)) < occ {
				return types.Null, nil
			}
			m := all[occ-1]
			return types.NewCollatedBytes(s[off+m[0]:off+m[1]], resultCollation(v[:1])), nil
		}},
		"regexp_instr": {minArgs: 2, maxArgs: 6, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			re, err := regexpFor(v[0], v[1], flagsAt(v, 5))
			if err != nil {
				return types.Null, err
			}
			s := types.ToText(v[0])
			pos, occ, opt := int64(1), int64(1), int64(0)
			if len(v) > 2 {
				pos = argInt(v[2])
			}
			if len(v) > 3 {
				occ = argInt(v[3])
			}
			if len(v) > 4 {
				opt = argInt(v[4])
			}
			off, ok := startAt(s, pos)
			if !ok {
				return types.Null, errno.New(3685, "Index out of bounds in regular expression search.")
			}
			all := re.FindAllIndex(s[off:], -1)
			if occ < 1 || int64(len(all)) < occ {
				return types.NewInt(0), nil
			}
			m := all[occ-1]
			at := off + m[0]
			if opt == 1 {
				at = off + m[1]
			}
			return types.NewInt(int64(utf8.RuneCount(s[:at])) + 1), nil
		}},
		"regexp_replace": {minArgs: 3, maxArgs: 6, tp: strType, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			re, err := regexpFor(v[0], v[1], flagsAt(v, 5))
			if err != nil {
				return types.Null, err
			}
			s, repl := types.ToText(v[0]), types.ToText(v[2])
			pos, occ := int64(1), int64(0)
			if len(v) > 3 {
				pos = argInt(v[3])
			}
			if len(v) > 4 {
				occ = argInt(v[4])
			}
			off, ok := startAt(s, pos)
			if !ok {
				return types.Null, errno.New(3685, "Index out of bounds in regular expression search.")
			}
			n := int64(0)
			out := append([]byte(nil), s[:off]...)
			out = append(out, re.ReplaceAllFunc(s[off:], func(m []byte) []byte {
				n++
				if occ == 0 || n == occ {
					return re.ReplaceAll(m, repl)
				}
				return m
			})...)
			return types.NewCollatedBytes(out, resultCollation(v[:1])), nil
		}},
	}
}
