package session_test

import (
	"database/sql"
	"testing"
)

// SHOW CREATE TABLE names the table's default collation and, for a text
// column whose collation differs from it, the column's.
func TestShowCreateTableCollations(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE DATABASE sc",
		"CREATE TABLE sc.t (a VARCHAR(10), b VARCHAR(10) COLLATE utf8mb4_bin, c CHAR(2) CHARACTER SET utf8mb4, d VARBINARY(4), e ENUM('x','y') COLLATE utf8mb4_bin)",
		"CREATE TABLE sc.u (a TEXT, b VARCHAR(3) COLLATE utf8mb4_general_ci) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := map[string]string{
		"t": "CREATE TABLE `t` (\n" +
			"  `a` varchar(10) DEFAULT NULL,\n" +
			"  `b` varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL,\n" +
			"  `c` char(2) DEFAULT NULL,\n" +
			"  `d` varbinary(4) DEFAULT NULL,\n" +
			"  `e` enum('x','y') CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL\n" +
			") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
		"u": "CREATE TABLE `u` (\n" +
			"  `a` text DEFAULT NULL,\n" +
			"  `b` varchar(3) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci DEFAULT NULL\n" +
			") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
	}
	for name, w := range want {
		var tbl, got string
		if err := db.QueryRow("SHOW CREATE TABLE sc."+name).Scan(&tbl, &got); err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("SHOW CREATE TABLE %s:\n%s\nwant\n%s", name, got, w)
		}
	}
}
