package session_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// TestPreparedJoinsAndSubqueries runs joins, correlated subqueries, set
// operations and CTEs as prepared statements (binary protocol, the plan
// planned once and cached), several times with different parameters, and
// checks each result against the same query with the values written
// inline (text protocol, planned afresh).
func TestPreparedJoinsAndSubqueries(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE DATABASE pj", "USE pj",
		"CREATE TABLE a (id INT PRIMARY KEY, k INT, s VARCHAR(10), KEY ik (k))",
		"CREATE TABLE b (id INT PRIMARY KEY, ak INT, v INT)",
		"INSERT INTO a VALUES (1, 10, 'p'), (2, 20, 'q'), (3, NULL, 'r'), (4, 20, 's'), (5, 30, 't')",
		"INSERT INTO b VALUES (1, 10, 5), (2, 10, 6), (3, 20, 7), (4, NULL, 8), (5, 40, 9)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	queries := []string{
		"SELECT a.id, b.id FROM a JOIN b ON a.k = b.ak WHERE a.id >= ? ORDER BY 1, 2",
		"SELECT a.id, b.v FROM a LEFT JOIN b ON b.ak = a.k AND b.v > ? ORDER BY 1, 2",
		"SELECT b.id, a.s FROM b JOIN a ON a.id = b.id - ? ORDER BY 1",
		"SELECT id, (SELECT SUM(v) FROM b WHERE b.ak = a.k AND b.v > ?) FROM a ORDER BY id",
		"SELECT id FROM a WHERE k IN (SELECT ak FROM b WHERE v < ?) ORDER BY id",
		"SELECT id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.ak = a.k AND b.v > ?) ORDER BY id",
		"SELECT k FROM a WHERE id > ? UNION SELECT ak FROM b ORDER BY 1",
		"WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < ?) SELECT COUNT(*), SUM(n) FROM r",
	}
	for _, q := range queries {
		st, err := db.Prepare(q)
		if err != nil {
			t.Fatalf("prepare %s: %v", q, err)
		}
		nonEmpty := false
		for _, p := range []int{0, 2, 5, 7, 2} {
			got := collect(t, st.Query, p)
			inline := strings.Replace(q, "?", fmt.Sprint(p), 1)
			want := collect(t, func(args ...any) (*sql.Rows, error) { return db.Query(inline) })
			if got != want {
				t.Errorf("%s with %d:\nprepared: %s\ninline:   %s", q, p, got, want)
			}
			nonEmpty = nonEmpty || want != ""
		}
		if !nonEmpty {
			t.Errorf("%s returned no rows for any parameter", q)
		}
		st.Close()
	}
}

func collect(t *testing.T, query func(args ...any) (*sql.Rows, error), args ...any) string {
	t.Helper()
	rows, err := query(args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			if v.Valid {
				parts = append(parts, v.String)
			} else {
				parts = append(parts, "NULL")
			}
		}
		out = append(out, strings.Join(parts, ","))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " | ")
}
