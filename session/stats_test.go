package session_test

import (
	"database/sql"
	"strconv"
	"strings"
	"testing"
)

// showRows runs a SHOW and returns its rows as maps of column name to
// text.
func showRows(t *testing.T, db *sql.DB, q string) []map[string]string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i, c := range cols {
			m[c] = vals[i].String
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShowStats: ANALYZE TABLE's row count, NDVs, NULL counts and
// histograms, as SHOW STATS_META, SHOW STATS_HISTOGRAMS and SHOW
// STATS_BUCKETS show them (WITH n BUCKETS, LIKE and WHERE too).
func TestShowStats(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE DATABASE st", "USE st",
		"CREATE TABLE digits (x INT)",
		"INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)",
		"CREATE TABLE s (id INT PRIMARY KEY, a INT, b VARCHAR(10), c INT, KEY ia (a), KEY iab (a, b))",
		"INSERT INTO s SELECT n, CASE WHEN n <= 900 THEN 1 ELSE n END, CONCAT('v', n % 50), CASE WHEN n % 100 = 0 THEN NULL ELSE n END " +
			"FROM (SELECT d1.x * 100 + d2.x * 10 + d3.x + 1 AS n FROM digits d1, digits d2, digits d3) AS seq",
		"ANALYZE TABLE s",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	meta := showRows(t, db, "SHOW STATS_META WHERE Db_name = 'st'")
	if len(meta) != 1 || meta[0]["Table_name"] != "s" || meta[0]["Row_count"] != "1000" || meta[0]["Update_time"] == "" {
		t.Fatalf("SHOW STATS_META: %v", meta)
	}
	if got := showRows(t, db, "SHOW STATS_META LIKE 'nomatch%'"); len(got) != 0 {
		t.Errorf("SHOW STATS_META LIKE: %v", got)
	}

	hist := map[string]map[string]string{}
	for _, r := range showRows(t, db, "SHOW STATS_HISTOGRAMS WHERE Table_name = 's'") {
		hist[r["Column_name"]+"/"+r["Is_index"]] = r
	}
	for key, want := range map[string][2]string{
		"id/0": {"1000", "0"}, "a/0": {"101", "0"}, "b/0": {"50", "0"}, "c/0": {"990", "10"},
		"ia/1": {"101", "0"}, "iab/1": {"150", "0"},
	} {
		r := hist[key]
		if r == nil || r["Distinct_count"] != want[0] || r["Null_count"] != want[1] {
			t.Errorf("SHOW STATS_HISTOGRAMS %s: %v, want NDV %s and %s NULLs", key, r, want[0], want[1])
		}
	}

	buckets := showRows(t, db, "SHOW STATS_BUCKETS WHERE Column_name = 'a' AND Is_index = 0")
	if len(buckets) == 0 || len(buckets) > 256 {
		t.Fatalf("%d buckets for a", len(buckets))
	}
	last := buckets[len(buckets)-1]
	if last["Count"] != "1000" || last["Upper_Bound"] != "1000" {
		t.Errorf("last bucket of a: %v", last)
	}
	if first := buckets[0]; first["Lower_Bound"] != "1" || first["Upper_Bound"] != "1" || first["Repeats"] != "900" {
		t.Errorf("first bucket of a should hold the 900 ones: %v", first)
	}
	prev := int64(0)
	for _, b := range buckets {
		n, _ := strconv.ParseInt(b["Count"], 10, 64)
		if n <= prev {
			t.Fatalf("bucket counts not increasing: %v", buckets)
		}
		prev = n
	}
	ib := showRows(t, db, "SHOW STATS_BUCKETS WHERE Column_name = 'iab'")
	// (Keys of a utf8mb4_general_ci column hold its characters' weights,
	// which read back in upper case.)
	if len(ib) == 0 || !strings.EqualFold(ib[0]["Lower_Bound"], "(1, v0)") {
		t.Errorf("index buckets show tuples: %v", ib[:min(len(ib), 2)])
	}

	if _, err := db.Exec("ANALYZE TABLE s WITH 16 BUCKETS"); err != nil {
		t.Fatal(err)
	}
	if n := len(showRows(t, db, "SHOW STATS_BUCKETS WHERE Column_name = 'c' AND Is_index = 0")); n == 0 || n > 16 {
		t.Errorf("WITH 16 BUCKETS: %d buckets", n)
	}
	if _, err := db.Exec("ANALYZE TABLE s WITH 0 BUCKETS"); err == nil {
		t.Error("ANALYZE TABLE WITH 0 BUCKETS succeeded")
	}
}
