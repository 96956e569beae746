package session_test

import (
	"context"
	"database/sql"
	"testing"
)

// TestSnapshotAtFirstRead: a transaction begun through go-sql-driver
// (BEGIN) and read with a prepared statement (the binary protocol) takes
// its snapshot at that first read, as InnoDB does: it sees what another
// connection committed after BEGIN and before the read, and nothing
// committed after.
func TestSnapshotAtFirstRead(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, q := range []string{"CREATE DATABASE snap", "CREATE TABLE snap.t (id INT PRIMARY KEY, v INT)", "INSERT INTO snap.t VALUES (1, 0)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	set := func(v int) {
		t.Helper()
		if _, err := other.ExecContext(ctx, "UPDATE snap.t SET v = ? WHERE id = 1", v); err != nil {
			t.Fatal(err)
		}
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	read, err := tx.PrepareContext(ctx, "SELECT v FROM snap.t WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	get := func() int {
		t.Helper()
		var v int
		if err := read.QueryRowContext(ctx, 1).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	set(1) // after BEGIN, before the first read
	if v := get(); v != 1 {
		t.Fatalf("first read: v = %d, want 1 (committed before it)", v)
	}
	set(2)
	if v := get(); v != 1 {
		t.Fatalf("second read: v = %d, want 1 (the snapshot of the first)", v)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := db.QueryRowContext(ctx, "SELECT v FROM snap.t WHERE id = 1").Scan(&v); err != nil || v != 2 {
		t.Fatalf("after commit: v = %d, %v; want 2", v, err)
	}
}
