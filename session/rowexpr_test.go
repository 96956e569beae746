package session_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// TestPreparedRowConstructors runs row comparisons and row IN lists whose
// values are parameters (binary protocol, the plan cached after the first
// execution) with several sets of values, and checks each result against
// the query with the values written inline. The tables have a clustered
// composite primary key and a composite secondary index, so the same
// queries also exercise key ranges built from parameters.
func TestPreparedRowConstructors(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE DATABASE pr", "USE pr",
		"CREATE TABLE s (w INT, i INT, q INT, v VARCHAR(5), PRIMARY KEY (w, i), KEY iq (q, i))",
		"INSERT INTO s VALUES (1, 1, 10, 'a'), (1, 2, 20, 'b'), (1, 3, NULL, 'c'), (2, 1, 10, 'd'), (2, 2, 30, 'e'), (3, 5, 10, NULL)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	queries := []string{
		"SELECT w, i, v FROM s WHERE (w, i) IN ((?, ?), (?, ?), (?, ?)) ORDER BY w, i",
		"SELECT w, i, v FROM s WHERE (w, i) IN ((?, ?), (?, ?), (?, ?)) FOR UPDATE",
		"SELECT w, i FROM s WHERE (w, i) > (?, ?) AND (w, i) <= (?, ?) ORDER BY w, i",
		"SELECT w, i FROM s WHERE (q, i) = (?, ?) OR (q, i) < (?, ?) ORDER BY w, i",
		"SELECT w, i FROM s WHERE (w, i) <> (?, ?) AND (i, q) NOT IN ((?, ?), (?, ?)) ORDER BY w, i",
		// Row subqueries, uncorrelated and correlated.
		"SELECT w, i FROM s WHERE (w, i) = (SELECT w, i FROM s WHERE q = ? AND w = ?) ORDER BY w, i",
		"SELECT w, i FROM s WHERE (w, ?) <= (SELECT w, i FROM s AS s2 WHERE s2.w = s.w + ? AND s2.i = ?) ORDER BY w, i",
		"SELECT w, i FROM s WHERE (SELECT ?, ?) > (w, i) OR (i, w) IN (SELECT ?, ?) ORDER BY w, i",
	}
	sets := [][]any{
		{1, 2, 2, 1, 3, 5},
		{1, 1, 1, 3, 9, 9},
		{2, 2, 1, 1, 1, 2},
		{0, 0, 3, 5, 2, 1},
		{10, 1, 20, 2, 30, 2},
	}
	for _, q := range queries {
		st, err := db.Prepare(q)
		if err != nil {
			t.Fatalf("prepare %s: %v", q, err)
		}
		n := strings.Count(q, "?")
		nonEmpty := false
		for _, set := range sets {
			args := set[:n]
			got := collect(t, st.Query, args...)
			inline := q
			for _, a := range args {
				inline = strings.Replace(inline, "?", fmt.Sprint(a), 1)
			}
			want := collect(t, func(...any) (*sql.Rows, error) { return db.Query(inline) })
			if got != want {
				t.Errorf("%s with %v:\nprepared: %s\ninline:   %s", q, args, got, want)
			}
			nonEmpty = nonEmpty || want != ""
		}
		if !nonEmpty {
			t.Errorf("%s returned no rows for any parameters", q)
		}
		st.Close()
	}
	// The inline answers themselves, for the first query and set.
	got := collect(t, func(...any) (*sql.Rows, error) {
		return db.Query("SELECT w, i, v FROM s WHERE (w, i) IN ((1, 2), (2, 1), (3, 5)) ORDER BY w, i")
	})
	if want := "1,2,b | 2,1,d | 3,5,NULL"; got != want {
		t.Errorf("row IN: got %s, want %s", got, want)
	}
	if _, err := db.Prepare("SELECT w FROM s WHERE (w, i) = (?, ?, ?)"); err == nil || !strings.Contains(err.Error(), "1241") {
		t.Errorf("prepare with mismatched rows: %v, want error 1241", err)
	}
}
