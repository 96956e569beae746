package stmtsummary

// DigestCache gives the normalized text and digest of text statements
// (COM_QUERY) that differ from one seen before only in their literals
// without normalizing them again. Statement text is not cached by its
// text (every sysbench INSERT differs) but by its shape: the text with
// each plain string and integer literal replaced by a one-byte mark of its
// kind (shapeOf). The normalizer (parser.NormalizeDigest) replaces literals
// by "?" or folds them into "...", deciding from the tokens around them and
// the kind of each literal, never from its value, so two statements of one
// shape have one normalized text and digest. The exceptions are kept out
// of shapes: integers after ORDER BY or GROUP BY are kept by the
// normalizer (a statement that mentions either is not shaped), a number
// next to a letter or a dot may be part of an identifier or another kind
// of number (kept in the shape as it is), and comments, double quotes and
// backslashes depend on the SQL mode or hold hints (not shaped).
//
// A DigestCache is not safe for concurrent use: each session has its own.
// It holds at most digestCacheSize shapes and forgets them all when full.
type DigestCache struct {
	shape []byte // scratch for shapeOf
	m     map[string]digestPair
}

type digestPair struct{ normalized, digest string }

// digestCacheSize bounds a DigestCache's shapes; shapeMaxLen the length
// of a statement it shapes (longer ones are normalized each time, as a
// bulk INSERT's shape would be as long as itself and rarely seen twice).
const (
	digestCacheSize = 256
	shapeMaxLen     = 4096
)

// NormalizeDigest is the package's NormalizeDigest(sql), remembered by
// the shape of sql.
func (c *DigestCache) NormalizeDigest(sql string) (normalized, digest string) {
	if len(sql) > shapeMaxLen {
		return NormalizeDigest(sql)
	}
	var ok bool
	c.shape, ok = shapeOf(c.shape[:0], sql)
	if !ok {
		return NormalizeDigest(sql)
	}
	if p, hit := c.m[string(c.shape)]; hit {
		return p.normalized, p.digest
	}
	normalized, digest = NormalizeDigest(sql)
	if c.m == nil || len(c.m) >= digestCacheSize {
		c.m = make(map[string]digestPair)
	}
	c.m[string(c.shape)] = digestPair{normalized, digest}
	return normalized, digest
}

// The marks of literals in a shape. Statements holding either byte are
// not shaped, so a mark is never the statement's own byte.
const (
	markString = 0x00
	markInt    = 0x01
)

// shapeOf appends sql's shape to dst: sql with every string literal
// (quoted with ', a doubled one inside) that follows no identifier character and every
// run of digits that touches no identifier character nor '.' replaced by
// markString or markInt; everything else as it is, backquoted
// identifiers included. It reports false, and dst is of no use, when sql
// holds what makes the shape unsafe (see DigestCache): a comment (#, --,
// /*), a double quote, a backslash, a mark byte, an unterminated quote,
// or the words ORDER or GROUP in any case.
func shapeOf(dst []byte, sql string) ([]byte, bool) {
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == markString || c == markInt || c == '"' || c == '\\' || c == '#':
			return dst, false
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-', c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			return dst, false
		case c == '`':
			j := i + 1
			for {
				k := indexByteFrom(sql, j, '`')
				if k < 0 {
					return dst, false
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
					return dst, false
				}
				for _, b := range []byte(sql[j:k]) {
					if b == '\\' {
						return dst, false
					}
				}
				if k+1 < len(sql) && sql[k+1] == '\'' { // a doubled quote
					j = k + 2
					continue
				}
				dst = append(dst, markString)
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
					return dst, false
				}
				if k+1 < len(sql) && sql[k+1] == '\'' {
					j = k + 2
					continue
				}
				for _, b := range []byte(sql[i:k]) {
					if b == '\\' || b == markString || b == markInt {
						return dst, false
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
			}
			i = j
		default:
			dst = append(dst, c)
			i++
		}
	}
	if containsFold(dst, "order") || containsFold(dst, "group") {
		return dst, false
	}
	return dst, true
}

func indexByteFrom(s string, from int, c byte) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

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
