package testkit

import (
	"testing"
)

// TestMariaDBLifecycle checks the Server lifecycle on MariaDB: a clean stop
// and restart keeps committed data, Kill is followed by crash recovery.
func TestMariaDBLifecycle(t *testing.T) {
	srv := StartMariaDB(t)
	db := srv.OpenDB(t, "")
	for _, q := range []string{
		"CREATE DATABASE life",
		"CREATE TABLE life.t (id INT PRIMARY KEY)",
		"INSERT INTO life.t VALUES (1), (2), (3)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	count := func() int {
		t.Helper()
		var n int
		if err := srv.OpenDB(t, "life").QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatalf("Restart after Stop: %v", err)
	}
	if n := count(); n != 3 {
		t.Fatalf("after a clean restart: %d rows, want 3", n)
	}

	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatalf("Restart after Kill: %v", err)
	}
	if n := count(); n != 3 {
		t.Fatalf("after a crash: %d rows, want 3", n)
	}
}
