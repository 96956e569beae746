package testkit

import (
	"database/sql"
	"testing"
	"time"
)

// WaitFor polls cond every 50 ms until it holds, and fails the test after
// limit with cond's last description of what it saw.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s: %s", limit, what, desc)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MustExec runs a statement on db and fails the test if it fails.
func MustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
