package stmtsummary

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
)

// NormalizeDigest returns a statement's normalized text and digest, as
// parser.NormalizeDigest does (TiDB's), and as cheaply for a multi-row
// INSERT of a million bytes as for a short one.
//
// TiDB's normalizer already folds a list of literal rows into one:
// "insert into t values (1, 'a'), (2, 'b'), (3, 'c')" normalizes to
// "insert into t values ( ... )". But it lexes every row to get there, and
// a bulk INSERT (sysbench prepare, mariadb-dump) spent more time being
// digested than being executed. So a long INSERT or REPLACE whose first
// two rows hold only literals is normalized without its later rows of
// literals: the normalizer ends the second such row in a state that every
// further row of literals leaves as it was (see literalRowsEnd), so the
// text without them has the same normalized form and digest. Anything
// this scanner is not sure of (comments, ROW(), an expression, a string
// with an introducer) ends the shortcut: that row and the rest are kept,
// and the result is still the normalizer's own.
func NormalizeDigest(sql string) (normalized, digest string) {
	if len(sql) >= shortcutMinLen {
		sql = dropLiteralRows(sql)
	}
	n, d := parser.NormalizeDigest(sql)
	return n, d.String()
}

// shortcutMinLen is how long a statement must be for NormalizeDigest to
// look for rows to drop: shorter ones cost little to normalize whole. A
// variable for the tests.
var shortcutMinLen = 2048

// dropLiteralRows returns sql without the rows of literals of its VALUES
// list that follow its first two rows, when sql is an INSERT or REPLACE
// whose first two rows hold only literals; otherwise sql.
//
// Why the normalizer cannot tell the difference (parser/digester.go,
// reduceLit): a row of literals "( v1 , v2 , ... )" right after
// "( ?-or-... ) ," has its first literal fold the previous row's tail
// "?-or-... ) , (" into "...", each further ", literal" folds into "...",
// and its ")" closes it: the tokens end "( ... )" again, as they did
// before. The first row may end "( ? )" (a single value), which the
// second row turns into "( ... )"; from the second row on the state is
// fixed. A sign before a number is dropped first (isPrefixByUnary after
// "(" or ","), so signed numbers count as literals too; a sign before a
// string is not, so it does not.
func dropLiteralRows(sql string) string {
	i := valuesListStart(sql)
	if i < 0 {
		return sql
	}
	// i is at the first row's "(".
	first, ok := literalRow(sql, i)
	if !ok {
		return sql
	}
	j, ok := nextRow(sql, first)
	if !ok {
		return sql
	}
	keepTo, ok := literalRow(sql, j)
	if !ok {
		return sql
	}
	// Drop ", (row)" while the rows hold only literals.
	end := keepTo
	for {
		k, ok := nextRow(sql, end)
		if !ok {
			break
		}
		e, ok := literalRow(sql, k)
		if !ok {
			break
		}
		end = e
	}
	if end == keepTo {
		return sql
	}
	return sql[:keepTo] + sql[end:]
}

// valuesListStart returns the offset of the first row's "(" of an INSERT
// or REPLACE ... VALUES|VALUE (, or -1: for any other statement, and for
// one whose text before VALUES has a comment (which this scanner leaves to
// the normalizer).
func valuesListStart(s string) int {
	i := skipSpace(s, 0)
	switch {
	case hasWordAt(s, i, "insert"):
		i += len("insert")
	case hasWordAt(s, i, "replace"):
		i += len("replace")
	default:
		return -1
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			e, ok := quotedEnd(s, i)
			if !ok {
				return -1
			}
			i = e
		case c == '#' || c == '/' && i+1 < len(s) && s[i+1] == '*' || c == '-' && i+1 < len(s) && s[i+1] == '-':
			return -1
		case isWordByte(c):
			w := i
			for i < len(s) && isWordByte(s[i]) {
				i++
			}
			word := s[w:i]
			if equalFoldASCII(word, "values") || equalFoldASCII(word, "value") {
				// A word right after a '.' or '@' is a name (t.values).
				if w > 0 && (s[w-1] == '.' || s[w-1] == '@') {
					continue
				}
				j := skipSpace(s, i)
				if j < len(s) && s[j] == '(' {
					return j
				}
				return -1
			}
			if equalFoldASCII(word, "select") || equalFoldASCII(word, "set") {
				return -1
			}
		default:
			i++
		}
	}
	return -1
}

// nextRow reads ", (" from i (after a row's ")"), blanks allowed around
// the comma, and returns the offset of the "(".
func nextRow(s string, i int) (int, bool) {
	i = skipSpace(s, i)
	if i >= len(s) || s[i] != ',' {
		return 0, false
	}
	i = skipSpace(s, i+1)
	if i >= len(s) || s[i] != '(' {
		return 0, false
	}
	return i, true
}

// literalRow reads a row of literals "( v [, v ...] )" from the "(" at i
// and returns the offset just past its ")". A literal is a number (digits
// with a point and an exponent, or 0x hex digits) with at most one sign,
// a quoted string ('..' or "..", backslash escapes and doubled quotes),
// or NULL; blanks may surround each. Anything else is not a row of
// literals.
func literalRow(s string, i int) (int, bool) {
	i++ // "("
	for {
		i = skipSpace(s, i)
		var ok bool
		if i, ok = literal(s, i); !ok {
			return 0, false
		}
		i = skipSpace(s, i)
		if i >= len(s) {
			return 0, false
		}
		switch s[i] {
		case ',':
			i++
		case ')':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// literal reads one literal at i and returns the offset past it; the
// byte there must end a token (a blank, ',' or ')').
func literal(s string, i int) (int, bool) {
	if i >= len(s) {
		return 0, false
	}
	var e int
	switch c := s[i]; {
	case c == '\'' || c == '"':
		var ok bool
		if e, ok = quotedEnd(s, i); !ok {
			return 0, false
		}
	case c == '-' || c == '+':
		j := i + 1
		if j >= len(s) || !(isDigit(s[j]) || s[j] == '.') {
			return 0, false // "- 1", "--1", "-'a'": left to the normalizer
		}
		var ok bool
		if e, ok = number(s, j); !ok {
			return 0, false
		}
	case isDigit(c) || c == '.':
		var ok bool
		if e, ok = number(s, i); !ok {
			return 0, false
		}
	case c == 'n' || c == 'N':
		if !hasWordAt(s, i, "null") {
			return 0, false
		}
		e = i + 4
	default:
		return 0, false
	}
	if e >= len(s) {
		return 0, false
	}
	switch s[e] {
	case ' ', '\t', '\n', '\r', ',', ')':
		return e, true
	}
	return 0, false
}

// number reads 0x hex digits (0X is a name to MySQL), or digits [. digits] [e|E [sign] digits]
// (at least one digit before the exponent), from i.
func number(s string, i int) (int, bool) {
	if i+1 < len(s) && s[i] == '0' && s[i+1] == 'x' {
		j := i + 2
		for j < len(s) && isHexDigit(s[j]) {
			j++
		}
		return j, j > i+2
	}
	j, digits := i, 0
	for j < len(s) && isDigit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == k {
			return 0, false
		}
	}
	return j, true
}

// quotedEnd returns the offset past the string or quoted name that opens
// at i, with MySQL's default escapes: a backslash escapes the next byte
// (not in `names`), and a doubled quote stands for one.
func quotedEnd(s string, i int) (int, bool) {
	q := s[i]
	// Most strings have neither escapes nor doubled quotes: find the
	// closing quote with IndexByte.
	if k := strings.IndexByte(s[i+1:], q); k >= 0 {
		e := i + 1 + k
		if (q == '`' || strings.IndexByte(s[i+1:e], '\\') < 0) && (e+1 == len(s) || s[e+1] != q) {
			return e + 1, true
		}
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return 0, false
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// hasWordAt reports whether the ASCII word w (lower case) is at s[i:],
// in any case, and not part of a longer word.
func hasWordAt(s string, i int, w string) bool {
	if i+len(w) > len(s) || !equalFoldASCII(s[i:i+len(w)], w) {
		return false
	}
	return i+len(w) == len(s) || !isWordByte(s[i+len(w)])
}

func equalFoldASCII(a, lower string) bool {
	if len(a) != len(lower) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isHexDigit(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isWordByte: a byte of an unquoted name or keyword (any byte >= 0x80 is
// part of one, as in MySQL's lexer).
func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c == '_' || c == '$' || c >= 0x80
}
