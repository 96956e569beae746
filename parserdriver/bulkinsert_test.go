package parserdriver

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// TestParseBulkInsert compares ParseBulkInsert's statement with the
// parser's for random multi-row INSERTs, node by node (reflect.DeepEqual,
// the offsets in the text included), under several SQL modes; and checks
// that it declines what it must leave to the parser.
func TestParseBulkInsert(t *testing.T) {
	defer func(n int) { bulkInsertMinLen = n }(bulkInsertMinLen)
	bulkInsertMinLen = 0
	r := rand.New(rand.NewPCG(3, 5))
	// Literals it builds, and literals it must decline.
	built := []string{"1", "0", "-2", "+3", "-0", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"18446744073709551615", "18446744073709551616", "123456789012345678901234567890", "1.5", "-0.25", ".5", "+.5", "1.",
		"1e10", "-2.5E-3", "1e+2", "''", "'a'", "'it''s'", "'(,)'", "'68487932199-96439406143'", "NULL", "null", "Null",
		"'-- x'", "'/* y */'", "'#'"}
	// Built unless NO_BACKSLASH_ESCAPES.
	escaped := []string{`'a\'b'`, `'x\\y'`, `'\n\t\0\Z\b\r'`, `'50\%'`, `'a\_b'`, `'\q'`, `'\"'`, `'it\'s''x'`, `'\\'`}
	declined := []string{"0x1F", `"dq"`, "'\t'", "x'0f'", "now()", "1+2", "- 1", "-'a'", "TRUE", "DEFAULT", "_binary 'a'", "'a' 'b'", "'é'"}
	blank := func() string { return []string{"", " ", "  ", "\n", "\t"}[r.IntN(5)] }
	heads := []string{"INSERT INTO t VALUES", "insert into t(a, b, c) values", "REPLACE INTO `s`.`t` (`a`,`b`) VALUE",
		"INSERT IGNORE INTO t VALUES", "  insert into t values", "INSERT INTO t PARTITION (p0) VALUES", "INSERT LOW_PRIORITY INTO t VALUES"}
	modes := []mysql.SQLMode{0, mysql.ModeANSIQuotes, mysql.ModeNoBackslashEscapes, mysql.ModeStrictTransTables}
	parsers := map[mysql.SQLMode][2]*parser.Parser{}
	for _, m := range modes {
		a, b := parser.New(), parser.New()
		a.SetSQLMode(m)
		b.SetSQLMode(m)
		parsers[m] = [2]*parser.Parser{a, b}
	}
	took, declinedOK := 0, 0
	for n := 0; n < 4000; n++ {
		width := 1 + r.IntN(4)
		bad := r.IntN(6) == 0
		hasEscape := false
		var b strings.Builder
		b.WriteString(heads[r.IntN(len(heads))] + blank())
		rows := 2 + r.IntN(6)
		badRow, badCol := r.IntN(rows), r.IntN(width)
		for i := range rows {
			if i > 0 {
				b.WriteString(blank() + "," + blank())
			}
			b.WriteString("(")
			for j := range width {
				if j > 0 {
					b.WriteString(blank() + "," + blank())
				}
				if bad && i == badRow && j == badCol {
					b.WriteString(declined[r.IntN(len(declined))])
				} else if r.IntN(8) == 0 {
					b.WriteString(escaped[r.IntN(len(escaped))])
					hasEscape = true
				} else {
					b.WriteString(built[r.IntN(len(built))])
				}
			}
			b.WriteString(blank() + ")")
		}
		b.WriteString([]string{"", ";", " ; ", "\n"}[r.IntN(4)])
		sql := b.String()
		mode := modes[r.IntN(len(modes))]
		ps := parsers[mode]
		want, _, werr := ps[0].ParseSQL(sql)
		got, ok := ParseBulkInsert(ps[1], mode, sql)
		if bad || hasEscape && mode.HasNoBackslashEscapesMode() {
			if ok {
				t.Fatalf("mode %v: took %q, which holds a literal it must leave to the parser", mode, sql)
			}
			declinedOK++
			continue
		}
		if werr != nil {
			if ok {
				t.Fatalf("mode %v: took %q, which the parser refuses: %v", mode, sql, werr)
			}
			continue
		}
		if !ok {
			t.Fatalf("mode %v: declined %q", mode, sql)
		}
		took++
		if len(got) != 1 || len(want) != 1 {
			t.Fatalf("%q: %d statements, the parser %d", sql, len(got), len(want))
		}
		w, g := want[0], got[0]
		if w.Text() != g.Text() || w.OriginalText() != g.OriginalText() {
			t.Fatalf("%q: text %q, the parser %q", sql, g.Text(), w.Text())
		}
		w.SetText(nil, sql)
		g.SetText(nil, sql)
		if !reflect.DeepEqual(w, g) {
			t.Fatalf("mode %v: %q:\nbulk   %s\nparser %s", mode, sql, restore(t, g), restore(t, w))
		}
	}
	if took < 2000 || declinedOK < 300 {
		t.Fatalf("took %d, declined %d: the generator went wrong", took, declinedOK)
	}
}

func restore(t *testing.T, n ast.Node) string {
	var b strings.Builder
	if err := n.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &b)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestParseBulkInsertDeclines lists statements that ParseBulkInsert must
// leave to the parser whole.
func TestParseBulkInsertDeclines(t *testing.T) {
	defer func(n int) { bulkInsertMinLen = n }(bulkInsertMinLen)
	bulkInsertMinLen = 0
	for _, sql := range []string{
		"INSERT INTO t VALUES (1)",                                    // one row
		"INSERT INTO t VALUES (1), (2) ON DUPLICATE KEY UPDATE a = 1", // a tail
		"INSERT INTO t VALUES (1), (2); SELECT 1",                     // another statement
		"INSERT INTO t VALUES (1), (2);;",                             // two ';'
		"INSERT /* c */ INTO t VALUES (1), (2)",                       // a comment
		"INSERT INTO t VALUES ('é'), ('e')",                           // not ASCII
		"INSERT INTO t VALUES ('\x01'), ('e')",                        // a control character
		"INSERT INTO t VALUES (1), (2) AS new ON DUPLICATE KEY UPDATE a = new.a",
		"INSERT INTO t SELECT 1 UNION VALUES (1), (2)",
		"SELECT 1",
	} {
		if _, ok := ParseBulkInsert(parser.New(), 0, sql); ok {
			t.Errorf("took %q", sql)
		}
	}
}

func TestPrintableASCII(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for n := 0; n < 20000; n++ {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x5f))
		}
		want := true
		if len(b) > 0 && r.IntN(2) == 0 {
			c := byte(r.IntN(256))
			b[r.IntN(len(b))] = c
			want = c >= 0x20 && c <= 0x7e || c == '\t' || c == '\n' || c == '\r'
		}
		if got := printableASCII(string(b)); got != want {
			t.Fatalf("printableASCII(%q) = %v", b, got)
		}
	}
}

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

func BenchmarkParseBulkInsert(b *testing.B) {
	sql := sysbenchInsert(5000)
	p := parser.New()
	b.SetBytes(int64(len(sql)))
	b.Run("parser", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := p.ParseSQL(sql); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bulk", func(b *testing.B) {
		for b.Loop() {
			if _, ok := ParseBulkInsert(p, 0, sql); !ok {
				b.Fatal("declined")
			}
		}
	})
}
