package parserdriver

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
)

// TestTemplateRandom binds random INSERTs to the template of the first
// statement of their shape and compares the tree with the parser's own
// (restored to text), and its text with the statement's.
func TestTemplateRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	plain := []string{"0", "1", "42", "007", "123456789012345678", "'a'", "''", "'it''s'", "'68487932199-96439406143'", "'?'", "'x;y'"}
	other := []string{"-3", "1.5", "1234567890123456789", "NULL", "TRUE", "x'0f'", "'a' 'b'", "now()", "1+2", "DEFAULT", "N'n'", "@v"}
	heads := []string{"INSERT INTO t VALUES", "insert into t(a, b, c) values", "REPLACE INTO `s`.`t` (`a`,`b`) VALUE",
		"INSERT IGNORE INTO t VALUES", "INSERT INTO t SET a ="}
	tails := []string{"", " ON DUPLICATE KEY UPDATE a = VALUES(a) + 1", " ON DUPLICATE KEY UPDATE b = 'z'"}
	p := parser.New()
	templates := map[string]*Template{}
	bound := 0
	for n := 0; n < 5000; n++ {
		var b strings.Builder
		head := heads[r.IntN(len(heads))]
		b.WriteString(head)
		lit := func() string {
			if r.IntN(5) > 0 {
				return plain[r.IntN(len(plain))]
			}
			return other[r.IntN(len(other))]
		}
		if strings.HasSuffix(head, "=") {
			b.WriteString(" " + lit() + ", b = " + lit())
		} else {
			for i := range 1 + r.IntN(2) {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(" (" + lit() + ", " + lit() + ")")
			}
		}
		b.WriteString(tails[r.IntN(len(tails))])
		sql := b.String()
		shape, lits, ok := Shape(nil, nil, sql)
		if !ok {
			continue
		}
		stmts, _, err := p.ParseSQL(sql)
		if err != nil || len(stmts) != 1 {
			continue
		}
		want := restore(t, stmts[0])
		if tp := templates[string(shape)]; tp != nil {
			st, ok := tp.Bind(sql, lits)
			if !ok {
				continue
			}
			if got := restore(t, st); got != want || st.Text() != sql {
				t.Fatalf("%s:\nbound  %s (text %q)\nparsed %s", sql, got, st.Text(), want)
			}
			bound++
			continue
		}
		if tp, ok := NewTemplate(sql, lits, stmts[0]); ok {
			templates[string(shape)] = tp
		}
	}
	t.Logf("%d statements bound", bound)
	// Templates must have been made and bound, or this test tests nothing.
	if bound < 1000 {
		t.Fatalf("%d statements bound", bound)
	}
}

// TestNewTemplateDeclines: statements whose literal nodes do not match
// their marks one to one get no template.
func TestNewTemplateDeclines(t *testing.T) {
	for _, sql := range []string{
		"INSERT INTO t VALUES (1, 1)",                   // equal values: which node is which mark?
		"INSERT INTO t VALUES ('a', 'a')",               // the same
		"INSERT INTO t VALUES (1, 'a' 'b')",             // two marks, one node
		"INSERT INTO t VALUES (1, NULL)",                // a literal of another kind
		"INSERT INTO t VALUES (1, 1.5)",                 // a literal not marked
		"INSERT INTO t VALUES (1234567890123456789, 2)", // 19 digits
		"INSERT INTO t SELECT 1, 2",                     // not VALUES
		"UPDATE t SET a = 1 WHERE b = 2",                // not an INSERT
	} {
		_, lits, ok := Shape(nil, nil, sql)
		if !ok {
			t.Fatalf("%s: not shaped", sql)
		}
		stmts, _, err := parser.New().ParseSQL(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if _, ok := NewTemplate(sql, lits, stmts[0]); ok {
			t.Errorf("%s: a template", sql)
		}
	}
}
