package parserdriver

import (
	"math"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/util"

	"github.com/basalt-db/basalt/types"
)

// A scanner of the rows of literals of a multi-row INSERT, the shape of
// sysbench's prepare and of mariadb-dump:
//
//	INSERT|REPLACE ... VALUES|VALUE ( lit [, lit ...] ) [, ( ... ) ...]
//
// It reads only what it is sure the TiDB lexer reads the same way, and
// answers "not sure" (false, -1) for anything else, so that its callers
// (the statement digest's shortcut, ParseBulkInsert) fall back to the
// parser itself. A literal is
//
//	a number: digits [. digits] [e|E [sign] digits] (at least one digit
//	  before the exponent), or 0x hex digits (0X is a name to MySQL),
//	  with at most one sign before it;
//	a string in single or double quotes, with backslash escapes and
//	  doubled quotes;
//	NULL, in any case;
//
// with blanks (space, tab, newline, return) around it, and a blank, ','
// or ')' right after it. Comments, introducers (_binary '..'), x'..',
// b'..', TRUE, DEFAULT, expressions, a sign before a string, two signs,
// adjacent strings: not sure.

// ValuesListStart returns the offset of the first row's "(" of an INSERT
// or REPLACE ... VALUES|VALUE (, or -1: for any other statement, and for
// one whose text before VALUES has a comment (left to the parser).
func ValuesListStart(s string) int {
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
			e, ok := QuotedEnd(s, i)
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
			if equalFoldASCII(word, "select") || equalFoldASCII(word, "set") || equalFoldASCII(word, "table") {
				return -1
			}
		default:
			i++
		}
	}
	return -1
}

// NextRow reads ", (" from i (just past a row's ")"), blanks allowed
// around the comma, and returns the offset of the "(".
func NextRow(s string, i int) (int, bool) {
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

// LiteralRowEnd reads a row of literals "( lit [, lit ...] )" from the
// "(" at i and returns the offset just past its ")".
func LiteralRowEnd(s string, i int) (int, bool) {
	return literalRow(s, i, nil)
}

// literalRow is LiteralRowEnd; with b, it also builds the row's
// expressions as the parser would, into b.row (false if it cannot).
func literalRow(s string, i int, b *rowBuilder) (int, bool) {
	if b != nil {
		b.row = b.row[:0]
	}
	i++ // "("
	for {
		i = skipSpace(s, i)
		e, ok := literal(s, i)
		if !ok {
			return 0, false
		}
		if b != nil && !b.add(s, i, e) {
			return 0, false
		}
		i = skipSpace(s, e)
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
		if e, ok = QuotedEnd(s, i); !ok {
			return 0, false
		}
	case c == '-' || c == '+':
		j := i + 1
		if j >= len(s) || !(isDigit(s[j]) || s[j] == '.') {
			return 0, false // "- 1", "--1", "-'a'"
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

// number reads 0x hex digits, or digits [. digits] [e|E [sign] digits]
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

// QuotedEnd returns the offset past the string or quoted name that opens
// at i, with MySQL's default escapes: a backslash escapes the next byte
// (not in `names`), and a doubled quote stands for one; false if it is
// never closed.
func QuotedEnd(s string, i int) (int, bool) {
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

// rowBuilder builds the expressions of rows of literals as the TiDB
// parser does (parser.y's Literal and SimpleExpr, the lexer's toInt,
// toDecimal and toFloat), for the literals it is sure of: numbers, with a
// sign, single-quoted strings of printable ASCII (with backslash escapes
// unless NO_BACKSLASH_ESCAPES), and NULL. ParseBulkInsert's tests compare what it builds with the
// parser's trees.
//
// It allocates the literals of many rows at once: a statement's literals
// live as long as the statement.
type rowBuilder struct {
	row  []ast.ExprNode
	vals []ValueExpr // allocated, not handed out yet
	// strs is a block that string literals' values are copied into: one
	// allocation per block, not one per literal.
	strs []byte
	// escapes: a backslash escapes (sql_mode without
	// NO_BACKSLASH_ESCAPES). Without, a string with a backslash is left
	// to the parser (the scanner took the backslash for an escape).
	escapes bool
}

// value is newValueExpr(v, "", ""), from b.vals.
func (b *rowBuilder) value(v any) *ValueExpr {
	if len(b.vals) == 0 {
		b.vals = make([]ValueExpr, 256)
	}
	ve := &b.vals[0]
	b.vals = b.vals[1:]
	ve.projectionOffset = -1
	ve.SetValue(v)
	return ve
}

// stringValue is value(v) for a string v, its bytes copied into b.strs.
func (b *rowBuilder) stringValue(v string) *ValueExpr {
	if b.strs == nil || len(v) > cap(b.strs)-len(b.strs) {
		b.strs = make([]byte, 0, max(strsBlock, len(v)))
	}
	n := len(b.strs)
	b.strs = append(b.strs, v...)
	if len(b.vals) == 0 {
		b.vals = make([]ValueExpr, 256)
	}
	ve := &b.vals[0]
	b.vals = b.vals[1:]
	ve.projectionOffset = -1
	// As SetValue does for a string, without the copy of its own.
	ve.Datum = types.NewBytes(b.strs[n:len(b.strs):len(b.strs)])
	ve.Type.SetType(mysql.TypeVarString)
	return ve
}

const strsBlock = 64 << 10

// add builds the literal s[i:e] into b.row, or reports false.
func (b *rowBuilder) add(s string, i, e int) bool {
	lit := s[i:e]
	var x ast.ExprNode
	switch c := lit[0]; {
	case c == '\'':
		v, ok := plainString(lit, b.escapes)
		if !ok {
			return false
		}
		x = b.stringValue(v)
	case c == 'n' || c == 'N':
		x = b.value(nil)
	case c == '-' || c == '+':
		v := b.numberValue(lit[1:])
		if v == nil {
			return false
		}
		v.SetOriginTextPosition(i + 1)
		op := opcode.Minus
		if c == '+' {
			op = opcode.Plus
		}
		x = &ast.UnaryOperationExpr{Op: op, V: v}
	default:
		v := b.numberValue(lit)
		if v == nil {
			return false
		}
		x = v
	}
	x.SetOriginTextPosition(i)
	b.row = append(b.row, x)
	return true
}

// plainString is the value of a single-quoted literal of printable ASCII
// (” stands for '), with MySQL's backslash escapes when escapes is set
// (util.UnescapeChar, as the lexer's handleEscape); without, a backslash
// declines.
func plainString(lit string, escapes bool) (string, bool) {
	body := lit[1 : len(lit)-1]
	plain := true
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c < 0x20 || c > 0x7e:
			return "", false
		case c == '\\':
			if !escapes {
				return "", false
			}
			plain = false
		case c == '\'':
			plain = false
		}
	}
	if plain {
		return body, true
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '\\':
			i++
			out = append(out, util.UnescapeChar(body[i])...)
		case '\'':
			i++ // a doubled quote: the scanner saw to it
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return string(out), true
}

// numberValue is a number literal's expression, as the lexer types it: an
// integer as int64, as uint64 above math.MaxInt64, as a decimal above
// that; digits with a point as a decimal; with an exponent as a float. Nil
// for what it does not type (hex, or what the parser would refuse).
func (b *rowBuilder) numberValue(lit string) ast.ValueExpr {
	if strings.HasPrefix(lit, "0x") {
		return nil
	}
	switch {
	case strings.IndexAny(lit, "eE") >= 0:
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			return nil
		}
		return b.value(f)
	case strings.IndexByte(lit, '.') >= 0:
		return b.decimalValue(lit)
	}
	n, err := strconv.ParseUint(lit, 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return b.decimalValue(lit)
		}
		return nil
	}
	if n <= math.MaxInt64 {
		return b.value(int64(n))
	}
	return b.value(n)
}

func (b *rowBuilder) decimalValue(lit string) ast.ValueExpr {
	d, err := ast.NewDecimal(lit)
	if err != nil {
		return nil
	}
	return b.value(d)
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
