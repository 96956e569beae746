package session_test

import (
	"database/sql"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/session"
	"github.com/go-sql-driver/mysql"
)

func TestNestingBound(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want int
	}{
		{"SELECT 1", 0},
		{"SELECT c FROM sbtest1 WHERE id = ?", 1},
		{"SELECT ((1))", 2},
		{"SELECT ABS(ABS(-1))", 3},
		{"SELECT a FROM t WHERE a = 1 OR a = 2 AND NOT b", 5},
		{"SELECT 1+1, 2+2, 3+3", 1},                  // list elements do not add up
		{"INSERT INTO t VALUES (1, -1), (2, -2)", 2}, // nor do rows
		{"SELECT '((((((' , \"-- + + +\", `a+b`", 0}, // quoted
		{"SELECT 'it''s (', 'a\\'(('", 0},            // escaped quotes
		{"SELECT 1 -- ((((( +++\n", 0},               // comments
		{"SELECT 1 # ((((( +++", 0},
		{"SELECT /* (((( */ 1", 0},
		{"SELECT /*+ hint(a) */ 1", 1},    // hints are scanned
		{"SELECT 1 + 1; SELECT 2 + 2", 1}, // statements do not add up
		{"SELECT CASE WHEN a THEN b ELSE c END", 4},
		{"SELECT x FROM android, orange", 0}, // keywords only as words
	} {
		if got := session.NestingBound(c.sql, 100); got != c.want {
			t.Errorf("nestingBound(%q) = %d, want %d", c.sql, got, c.want)
		}
	}
}

// deepStatements are statements nested depth levels deep in each way the
// grammar allows.
func deepStatements(depth int) map[string]string {
	return map[string]string{
		"parentheses": "SELECT " + strings.Repeat("(", depth) + "1" + strings.Repeat(")", depth),
		"functions":   "SELECT " + strings.Repeat("ABS(", depth) + "1" + strings.Repeat(")", depth),
		"minus":       "SELECT " + strings.Repeat("- ", depth) + "1",
		"not":         "SELECT " + strings.Repeat("NOT ", depth) + "0",
		"plus chain":  "SELECT " + strings.Repeat("1 + ", depth) + "1",
		"or chain":    "SELECT 1 FROM dual WHERE " + strings.Repeat("0 OR ", depth) + "1",
		"subqueries":  "SELECT * FROM " + strings.Repeat("(SELECT * FROM ", depth) + "(SELECT 1 AS x) t" + strings.Repeat(") t", depth),
	}
}

// TestDeepNesting sends statements nested beyond maxNesting, as text and
// to prepare: each fails with 1436 instead of overflowing the stack,
// which would kill the server; the server goes on. Statements a thousand
// levels deep still run.
func TestDeepNesting(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, q := range deepStatements(2_000_000) {
		var me *mysql.MySQLError
		if _, err := db.Exec(q); !errors.As(err, &me) || me.Number != 1436 {
			t.Errorf("%s, 2,000,000 deep: got %v, want error 1436", name, err)
		}
		if _, err := db.Prepare(q); !errors.As(err, &me) || me.Number != 1436 {
			t.Errorf("%s, 2,000,000 deep, prepared: got %v, want error 1436", name, err)
		}
	}
	for name, q := range deepStatements(1000) {
		rows, err := db.Query(q)
		if err != nil {
			// The subqueries are nested in the syntax MySQL has, which
			// Basalt may not plan yet; it must still answer.
			var me *mysql.MySQLError
			if !errors.As(err, &me) {
				t.Errorf("%s, 1000 deep: %v", name, err)
			}
			continue
		}
		if !rows.Next() {
			t.Errorf("%s, 1000 deep: no row (%v)", name, rows.Err())
		}
		rows.Close()
	}
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the server does not answer after deep statements: %v", err)
	}
}

// TestSkipQuotedFastPath compares skipQuoted, whose common case finds the
// closing quote with IndexByte, with a byte-by-byte scan on random
// quoted text with escapes, doubled quotes and no end.
func TestSkipQuotedFastPath(t *testing.T) {
	slow := func(sql string, i int) int {
		q := sql[i]
		for j := i + 1; j < len(sql); j++ {
			switch sql[j] {
			case '\\':
				if q != '`' {
					j++
				}
			case q:
				if j+1 < len(sql) && sql[j+1] == q {
					j++
					continue
				}
				return j
			}
		}
		return len(sql) - 1
	}
	r := rand.New(rand.NewPCG(9, 9))
	alphabet := "ab'\"`\\ ,)"
	for n := 0; n < 20000; n++ {
		b := []byte{"'\"`"[r.IntN(3)]}
		for range r.IntN(12) {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		if got, want := session.SkipQuoted(string(b), 0), slow(string(b), 0); got != want {
			t.Fatalf("skipQuoted(%q) = %d, want %d", b, got, want)
		}
	}
}
