package parserdriver

// A statement's shape is its text with every plain string literal and
// every plain integer literal replaced by a one-byte mark of its kind.
// Two statements of one shape differ only in the values of those
// literals, and the parser and the digest normalizer decide nothing from
// a literal's value but from its kind and the tokens around it (with the
// exceptions Shape refuses), so a shape can key what is derived from a
// statement's text: its digest (stmtsummary.DigestCache), its parse.

// The marks of literals in a shape. Statements holding either byte are
// not shaped, so a mark is never the statement's own byte.
const (
	markString = 0x00
	markInt    = 0x01
)

// Literal is where a marked literal is in a statement: sql[Start:End] is
// its text, quotes included for a string.
type Literal struct {
	Start, End int
	String     bool // a string literal; else an integer
}

// Shape appends sql's shape to dst, and the literals it marked to lits:
// sql with every string literal
// (quoted with ', a doubled one inside) that follows no identifier character and every
// run of digits that touches no identifier character nor '.' replaced by
// markString or markInt; everything else as it is, backquoted
// identifiers included. It reports false, and dst is of no use, when sql
// holds what makes the shape unsafe (see stmtsummary.DigestCache): a comment (#, --,
// /*), a double quote, a backslash, a mark byte, an unterminated quote,
// or the words ORDER or GROUP in any case.
func Shape(dst []byte, lits []Literal, sql string) ([]byte, []Literal, bool) {
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == markString || c == markInt || c == '"' || c == '\\' || c == '#':
			return dst, lits, false
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-', c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			return dst, lits, false
		case c == '`':
			j := i + 1
			for {
				k := indexByteFrom(sql, j, '`')
				if k < 0 {
					return dst, lits, false
				}
				if k+1 < len(sql) && sql[k+1] == '`' { // a doubled backquote
					j = k + 2
					continue
				}
				dst = append(dst, sql[i:k+1]...)
				i = k + 1
				break
			}
		case c == '\'' && (i == 0 || !identChar(sql[i-1])):
			j := i + 1
			for {
				k := indexByteFrom(sql, j, '\'')
				if k < 0 {
					return dst, lits, false
				}
				for _, b := range []byte(sql[j:k]) {
					if b == '\\' {
						return dst, lits, false
					}
				}
				if k+1 < len(sql) && sql[k+1] == '\'' { // a doubled quote
					j = k + 2
					continue
				}
				dst = append(dst, markString)
				lits = append(lits, Literal{Start: i, End: k + 1, String: true})
				i = k + 1
				break
			}
		case c == '\'':
			// After an identifier character: N'x', _utf8mb4'x', x'0f'
			// are other kinds of literal; kept as they are.
			j := i + 1
			for {
				k := indexByteFrom(sql, j, '\'')
				if k < 0 {
					return dst, lits, false
				}
				if k+1 < len(sql) && sql[k+1] == '\'' {
					j = k + 2
					continue
				}
				for _, b := range []byte(sql[i:k]) {
					if b == '\\' || b == markString || b == markInt {
						return dst, lits, false
					}
				}
				dst = append(dst, sql[i:k+1]...)
				i = k + 1
				break
			}
		case isDigit(c):
			j := i
			for j < len(sql) && isDigit(sql[j]) {
				j++
			}
			if (i > 0 && (identChar(sql[i-1]) || sql[i-1] == '.')) || (j < len(sql) && (identChar(sql[j]) || sql[j] == '.')) {
				dst = append(dst, sql[i:j]...) // part of a name, a decimal, 0x1f, 1e5: as it is
			} else {
				dst = append(dst, markInt)
				lits = append(lits, Literal{Start: i, End: j})
			}
			i = j
		default:
			dst = append(dst, c)
			i++
		}
	}
	if containsFold(dst, "order") || containsFold(dst, "group") {
		return dst, lits, false
	}
	return dst, lits, true
}

func indexByteFrom(s string, from int, c byte) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// identChar reports whether c may be part of an unquoted identifier or
// a variable's name next to a number or a quote: letters, digits, '_',
// '$', '@', and every byte of a multi-byte character.
func identChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '$' || c == '@' || c >= 0x80
}

// containsFold reports whether b holds word, which is lower case ASCII,
// in any case.
func containsFold(b []byte, word string) bool {
	for i := 0; i+len(word) <= len(b); i++ {
		match := true
		for j := 0; j < len(word); j++ {
			if b[i+j]|0x20 != word[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
