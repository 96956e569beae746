package stmtsummary

import "github.com/basalt-db/basalt/parserdriver"

// DigestCache gives the normalized text and digest of text statements
// (COM_QUERY) that differ from one seen before only in their literals
// without normalizing them again. Statement text is not cached by its
// text (every sysbench INSERT differs) but by its shape: the text with
// each plain string and integer literal replaced by a one-byte mark of its
// kind (parserdriver.Shape). The normalizer (parser.NormalizeDigest) replaces literals
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
	shape []byte // scratch for parserdriver.Shape
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
	c.shape, _, ok = parserdriver.Shape(c.shape[:0], nil, sql)
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
