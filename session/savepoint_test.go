package session_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestSavepointsThroughDriver: nested transactions as ORMs run them
// (SQLAlchemy's begin_nested, Django's atomic blocks) through
// go-sql-driver: SAVEPOINT, writes through prepared statements,
// ROLLBACK TO SAVEPOINT undoes only the inner block, RELEASE keeps it,
// and an unknown savepoint is 1305 (42000) with MySQL's message.
func TestSavepointsThroughDriver(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, q := range []string{"CREATE DATABASE sp", "CREATE TABLE sp.t (id INT PRIMARY KEY, name VARCHAR(10))"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("INSERT INTO sp.t VALUES (?, ?)", 1, "outer")
	exec("SAVEPOINT sa_savepoint_1")
	exec("INSERT INTO sp.t VALUES (?, ?)", 2, "inner")
	exec("UPDATE sp.t SET name = ? WHERE id = ?", "changed", 1)
	exec("ROLLBACK TO SAVEPOINT sa_savepoint_1")
	exec("SAVEPOINT s2")
	exec("INSERT INTO sp.t VALUES (?, ?)", 3, "kept")
	exec("RELEASE SAVEPOINT s2")

	_, err = tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT s2")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1305 || string(me.SQLState[:]) != "42000" || me.Message != "SAVEPOINT s2 does not exist" {
		t.Fatalf("ROLLBACK TO a released savepoint: %v, want 1305 (42000) SAVEPOINT s2 does not exist", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	rows, err := db.QueryContext(ctx, "SELECT id, name FROM sp.t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id int
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "outer" || got[1] != "kept" {
		t.Fatalf("after commit: %q, want [outer kept]", got)
	}
}
