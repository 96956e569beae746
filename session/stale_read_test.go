package session_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/store/local"
	"github.com/go-sql-driver/mysql"
)

// TestStaleReadBelowSafePoint: a moment GC may have collected is refused
// with TiDB's 9006, when tidb_snapshot is set and when a statement reads
// there after a GC pass passed it; the present still reads.
func TestStaleReadBelowSafePoint(t *testing.T) {
	st, err := local.Open(t.TempDir(), local.Options{NoSync: true, GCLifeTime: time.Millisecond, GCInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, _, addr, stop := serveOn(t, st, session.Config{PessimisticByDefault: true})
	defer stop()
	db, err := sql.Open("mysql", "root@tcp("+addr.String()+")/test")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) error {
		_, err := conn.ExecContext(ctx, q)
		return err
	}
	for _, q := range []string{"CREATE TABLE gcsr (id INT PRIMARY KEY)", "INSERT INTO gcsr VALUES (1)", "BEGIN", "SET @ts = @@tidb_current_ts", "COMMIT",
		"UPDATE gcsr SET id = 2", "SET @@tidb_snapshot = @ts"} {
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var id int
	if err := conn.QueryRowContext(ctx, "SELECT id FROM gcsr").Scan(&id); err != nil || id != 1 {
		t.Fatalf("read before GC: id %d, %v; want 1", id, err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := st.RunGC(); err != nil {
		t.Fatal(err)
	}
	is9006 := func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 9006
	}
	if err := conn.QueryRowContext(ctx, "SELECT id FROM gcsr").Scan(&id); !is9006(err) {
		t.Fatalf("read below the safe point: %v, want error 9006", err)
	}
	if err := exec("SET @@tidb_snapshot = @ts"); !is9006(err) {
		t.Fatalf("SET tidb_snapshot below the safe point: %v, want error 9006", err)
	}
	if err := exec("SET @@tidb_snapshot = ''"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT id FROM gcsr").Scan(&id); err != nil || id != 2 {
		t.Fatalf("read of the present: id %d, %v; want 2", id, err)
	}
}

// TestStaleReadPrepared: AS OF TIMESTAMP in a prepared statement (the
// binary protocol), its moment a parameter, reads the past at every
// execution; a prepared statement without it reads the present.
func TestStaleReadPrepared(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"CREATE DATABASE spr", "CREATE TABLE spr.t (id INT PRIMARY KEY, v INT)", "INSERT INTO spr.t VALUES (1, 10)"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	var moment string
	if err := conn.QueryRowContext(ctx, "SELECT CAST(NOW(3) AS CHAR)").Scan(&moment); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := conn.ExecContext(ctx, "UPDATE spr.t SET v = 11 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	past, err := conn.PrepareContext(ctx, "SELECT v FROM spr.t AS OF TIMESTAMP ? WHERE id = 1")
	if err != nil {
		t.Fatal(err)
	}
	defer past.Close()
	now, err := conn.PrepareContext(ctx, "SELECT v FROM spr.t WHERE id = 1")
	if err != nil {
		t.Fatal(err)
	}
	defer now.Close()
	for i := range 2 {
		var v int
		if err := past.QueryRowContext(ctx, moment).Scan(&v); err != nil || v != 10 {
			t.Fatalf("execution %d AS OF %s: v = %d, %v; want 10", i, moment, v, err)
		}
		if err := now.QueryRowContext(ctx).Scan(&v); err != nil || v != 11 {
			t.Fatalf("execution %d of the present: v = %d, %v; want 11", i, v, err)
		}
	}
}
