package stmtsummary

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/tidb/pkg/parser"
)

// TestDigestShortcut runs testdata/digest: each "digest" command's input
// is one statement; the output is the text the normalizer is given (the
// statement without its later rows of literals, when it has some) and the
// normalized text. Every case is also checked against the normalizer run
// on the whole statement. Rewrite with -rewrite.
func TestDigestShortcut(t *testing.T) {
	defer func(n int) { shortcutMinLen = n }(shortcutMinLen)
	shortcutMinLen = 0
	datadriven.RunTest(t, "testdata/digest", func(t *testing.T, d *datadriven.TestData) string {
		sql := strings.TrimSuffix(d.Input, "\n")
		kept := dropLiteralRows(sql)
		n, dg := NormalizeDigest(sql)
		wantN, wantD := parser.NormalizeDigest(sql)
		if n != wantN || dg != wantD.String() {
			t.Fatalf("%s:\nshortcut %q %s\nwhole    %q %s", d.Pos, n, dg, wantN, wantD)
		}
		return fmt.Sprintf("kept: %s\nnormalized: %s\n", kept, n)
	})
}

// TestDigestShortcutRandom compares NormalizeDigest with the normalizer on
// the whole text for random multi-row INSERTs: literal rows of numbers,
// signed numbers, strings with quotes, escapes, commas and parentheses,
// NULLs; rows with expressions among them; suffixes.
func TestDigestShortcutRandom(t *testing.T) {
	defer func(n int) { shortcutMinLen = n }(shortcutMinLen)
	shortcutMinLen = 0
	r := rand.New(rand.NewPCG(7, 11))
	lits := []string{"1", "-2", "+3", "0", "-0.5", ".5", "+.25", "1e10", "-2.5E-3", "0x1F", "123456789012345678901234567890",
		"'a'", "''", "'it''s'", `'a\'b'`, `'(,)'`, `"dq"`, `'x\\'`, "NULL", "null", "'-- no comment'", "'/* nor */'"}
	others := []string{"now()", "1+2", "-'a'", "- 1", "_utf8mb4'a'", "x'0f'", "b'01'", "TRUE", "DEFAULT", "@v", "(1)", "'a' 'b'", "N'n'", "0X1"}
	blank := func() string { return []string{"", " ", "  ", "\n", "\t"}[r.IntN(5)] }
	row := func(width int, literal bool) string {
		var b strings.Builder
		b.WriteString("(")
		for i := range width {
			if i > 0 {
				b.WriteString(blank() + "," + blank())
			}
			if literal || r.IntN(4) > 0 {
				b.WriteString(lits[r.IntN(len(lits))])
			} else {
				b.WriteString(others[r.IntN(len(others))])
			}
		}
		b.WriteString(blank() + ")")
		return b.String()
	}
	heads := []string{"INSERT INTO t VALUES", "insert into t(a, b) values", "REPLACE INTO `s`.`t` (`a`,`b`) VALUE",
		"INSERT IGNORE INTO t VALUES", "  insert into t values", "INSERT INTO t PARTITION (p0) VALUES"}
	tails := []string{"", ";", " ON DUPLICATE KEY UPDATE a = VALUES(a)", " ON DUPLICATE KEY UPDATE b = 1, c = 'x'", " ; "}
	dropped := 0
	for n := 0; n < 3000; n++ {
		width := 1 + r.IntN(4)
		var b strings.Builder
		b.WriteString(heads[r.IntN(len(heads))])
		b.WriteString(blank())
		rows := 1 + r.IntN(8)
		for i := range rows {
			if i > 0 {
				b.WriteString(blank() + "," + blank())
			}
			b.WriteString(row(width, r.IntN(5) > 0))
		}
		b.WriteString(tails[r.IntN(len(tails))])
		sql := b.String()
		if len(dropLiteralRows(sql)) < len(sql) {
			dropped++
		}
		got, gotD := NormalizeDigest(sql)
		want, wantD := parser.NormalizeDigest(sql)
		if got != want || gotD != wantD.String() {
			t.Fatalf("%q\nkept %q\nshortcut %q\nwhole    %q", sql, dropLiteralRows(sql), got, want)
		}
	}
	// The shortcut must have been taken, or this test tests nothing.
	if dropped < 500 {
		t.Fatalf("rows dropped in only %d of 3000 statements", dropped)
	}
}

// sysbenchInsert is an INSERT as sysbench's oltp_common prepare sends
// it: rows of (id, k, c, pad), about 1 MB in all.
func sysbenchInsert(rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO sbtest1(k, c, pad) VALUES")
	for i := range rows {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "(%d, '%s', '%s')", 500000+i*7919%1000000,
			"68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441",
			"22195207048-70116052123-74140395089-76317954521-98694025897")
	}
	return b.String()
}

func BenchmarkNormalizeDigestBulkInsert(b *testing.B) {
	sql := sysbenchInsert(5000)
	b.SetBytes(int64(len(sql)))
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			parser.NormalizeDigest(sql)
		}
	})
	b.Run("shortcut", func(b *testing.B) {
		for b.Loop() {
			NormalizeDigest(sql)
		}
	})
}

func BenchmarkNormalizeDigestPointSelect(b *testing.B) {
	sql := "SELECT c FROM sbtest1 WHERE id=4711"
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			parser.NormalizeDigest(sql)
		}
	})
	b.Run("shortcut", func(b *testing.B) {
		for b.Loop() {
			NormalizeDigest(sql)
		}
	})
}
