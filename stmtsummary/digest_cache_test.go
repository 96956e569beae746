package stmtsummary

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/parserdriver"
	"github.com/pingcap/tidb/pkg/parser"
)

// TestDigestCacheRandom checks the promise DigestCache rests on: two
// statements of one shape have one normalized text and digest, the
// normalizer's own. It draws statements from templates whose holes take
// literals of every kind (numbers of all forms, signed ones, strings
// with doubled quotes and escapes, introducers, hex and bit values, NULL)
// and compares each statement's cached result with the normalizer's on
// that statement, through one cache, so that later statements of a shape
// seen before are answered by the cache.
func TestDigestCacheRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 25))
	plain := []string{"1", "42", "0", "7", "'a'", "''", "'it''s'", "'x y'"} // shaped as marks
	lits := []string{"1", "42", "-2", "+3", "0", "-0.5", ".5", "1.25", "1e10", "-2.5E-3", "0x1F", "0X1", "x'0f'", "b'01'",
		"123456789012345678901234567890", "'a'", "''", "'it''s'", `'a\'b'`, `'(,)'`, `"dq"`, "NULL", "null",
		"'-- no comment'", "'/* nor */'", "N'n'", "_utf8mb4'u'", "'a' 'b'", "'order by 1'", "'é'", "TRUE", "@v", "@1", "@@sql_mode"}
	templates := []string{
		"INSERT INTO sbtest1 (id, k, c, pad) VALUES (%s, %s, %s, %s)",
		"insert into t values (%s), (%s), (%s)",
		"SELECT c FROM sbtest1 WHERE id=%s",
		"SELECT c FROM sbtest1 WHERE id BETWEEN %s AND %s",
		"SELECT c FROM t WHERE id IN (%s, %s, %s) LIMIT %s",
		"SELECT a, b FROM t ORDER BY %s, %s",
		"SELECT a, COUNT(*) FROM t GROUP BY %s",
		"select a from t group by a order by %s limit %s",
		"UPDATE sbtest1 SET k=k+%s WHERE id=%s",
		"UPDATE t SET c=%s WHERE id = -%s",
		"DELETE FROM sbtest1 WHERE id=%s",
		"SELECT %s + %s, -%s, t1.a%s FROM t1",
		"SELECT * FROM t FORCE INDEX(k_1) WHERE k > %s",
		"SELECT /*+ USE_INDEX(t, k_1) */ a FROM t WHERE k = %s",
		"SELECT a FROM t WHERE b = %s -- %s",
		"SELECT `a%s` FROM `t``x` WHERE c = %s",
		"SELECT a FROM t WHERE (a, b) IN ((%s, %s), (%s, %s))",
		"SELECT a FROM t%s WHERE c = %s",
		"SELECT a FROM t WHERE c = %s;",
		"SET @x = %s",
	}
	var c DigestCache
	hits := 0
	for n := 0; n < 20000; n++ {
		tmpl := templates[r.IntN(len(templates))]
		args := make([]any, strings.Count(tmpl, "%s"))
		for i := range args {
			if r.IntN(4) > 0 {
				args[i] = plain[r.IntN(len(plain))]
			} else {
				args[i] = lits[r.IntN(len(lits))]
			}
		}
		sql := fmt.Sprintf(tmpl, args...)
		shape, _, ok := parserdriver.Shape(nil, nil, sql)
		_, seen := c.m[string(shape)]
		got, gotD := c.NormalizeDigest(sql)
		want, wantD := parser.NormalizeDigest(sql)
		if got != want || gotD != wantD.String() {
			t.Fatalf("%q (shape %q, seen %v):\ncached     %q %s\nnormalizer %q %s", sql, shape, ok && seen, got, gotD, want, wantD)
		}
		if ok && seen {
			hits++
		}
	}
	t.Logf("the cache answered %d of 20000 statements", hits)
	// The cache must have answered, or this test tests nothing.
	if hits < 5000 {
		t.Fatalf("the cache answered %d of 20000 statements", hits)
	}
}

// TestDigestCacheSysbench: sysbench's text INSERTs (oltp_insert) all have
// one shape, so the normalizer runs once for them.
func TestDigestCacheSysbench(t *testing.T) {
	var c DigestCache
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		sql := fmt.Sprintf("INSERT INTO sbtest%d (id, k, c, pad) VALUES (%d, %d, '%011d-%011d', '%011d')",
			1+i%4, r.IntN(1000000), r.IntN(100000), r.Int64N(1e11), r.Int64N(1e11), r.Int64N(1e11))
		n, d := c.NormalizeDigest(sql)
		if wantN, wantD := NormalizeDigest(sql); n != wantN || d != wantD {
			t.Fatalf("%s: %q %s, want %q %s", sql, n, d, wantN, wantD)
		}
	}
	if len(c.m) != 4 {
		t.Errorf("%d shapes cached, want 4 (one per table)", len(c.m))
	}
}

// BenchmarkDigestCache: a sysbench INSERT's digest through the cache
// (a shape seen before) and through the normalizer.
func BenchmarkDigestCache(b *testing.B) {
	sql := "INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 50123, '68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441', '22195207048-70116052123-74140395089-76317954521-98694025897')"
	b.Run("normalizer", func(b *testing.B) {
		for b.Loop() {
			NormalizeDigest(sql)
		}
	})
	b.Run("cache", func(b *testing.B) {
		var c DigestCache
		for b.Loop() {
			c.NormalizeDigest(sql)
		}
	})
}
