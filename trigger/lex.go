// Package trigger reads the trigger statements that the TiDB parser has no
// grammar for — CREATE TRIGGER, DROP TRIGGER and SHOW CREATE TRIGGER — and
// splits a multi-statement query so that the ';' between the statements of
// a trigger's BEGIN ... END body does not end the CREATE TRIGGER. It reads
// CHECKSUM TABLE too, the other statement tools send that the TiDB parser
// lacks (it has ADMIN CHECKSUM TABLE instead).
//
// It only recognises the statements' frame (names, timing, event, order);
// each statement of a trigger's body is left as text for the TiDB parser.
package trigger

import "strings"

// kind is a token's class.
type kind uint8

const (
	word   kind = iota // unquoted identifier, keyword or number
	ident              // `quoted identifier`
	str                // 'string' or "string"
	symbol             // any other single character
)

// token is one lexical token of a statement. pos and end delimit its text
// in the source.
type token struct {
	kind     kind
	val      string // a word as written, an identifier or string unquoted
	pos, end int
}

// is reports whether t is the unquoted word w (case-insensitively).
func (t token) is(w string) bool { return t.kind == word && strings.EqualFold(t.val, w) }

// isSym reports whether t is the symbol c.
func (t token) isSym(c byte) bool { return t.kind == symbol && t.val[0] == c }

// lex splits sql into tokens, leaving out white space and comments. The
// text inside a MySQL executable comment (/*! ... */, as mysqldump writes
// around CREATE TRIGGER) is read as statement text. An unterminated
// string or comment ends the input.
func lex(sql string) []token {
	var out []token
	inExec := false // inside /*! ... */
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || (c == '-' && strings.HasPrefix(sql[i:], "--") && (i+2 == len(sql) || sql[i+2] <= ' ')):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*!"), c == '/' && strings.HasPrefix(sql[i:], "/*M!"):
			i += strings.Index(sql[i:], "!") + 1
			for i < len(sql) && sql[i] >= '0' && sql[i] <= '9' {
				i++ // the version the text needs
			}
			inExec = true
		case c == '*' && inExec && strings.HasPrefix(sql[i:], "*/"):
			i += 2
			inExec = false
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(sql)
			}
		case c == '\'' || c == '"' || c == '`':
			val, end := quoted(sql, i)
			k := str
			if c == '`' {
				k = ident
			}
			out = append(out, token{kind: k, val: val, pos: i, end: end})
			i = end
		case isWordByte(c):
			j := i
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			out = append(out, token{kind: word, val: sql[i:j], pos: i, end: j})
			i = j
		default:
			out = append(out, token{kind: symbol, val: sql[i : i+1], pos: i, end: i + 1})
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// quoted reads the quoted token starting at sql[i] and returns its value
// (a doubled quote stands for one; in strings, a backslash escapes the
// next character) and the offset after it.
func quoted(sql string, i int) (string, int) {
	q := sql[i]
	var b strings.Builder
	j := i + 1
	for j < len(sql) {
		c := sql[j]
		switch {
		case c == '\\' && q != '`' && j+1 < len(sql):
			b.WriteByte(unescape(sql[j+1]))
			j += 2
		case c == q && j+1 < len(sql) && sql[j+1] == q:
			b.WriteByte(q)
			j += 2
		case c == q:
			return b.String(), j + 1
		default:
			b.WriteByte(c)
			j++
		}
	}
	return b.String(), j
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case '0':
		return 0
	}
	return c
}
