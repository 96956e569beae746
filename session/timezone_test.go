package session_test

import (
	"context"
	"strings"
	"testing"
)

// TestTimestampDupEntryInSessionZone checks that a duplicate TIMESTAMP key
// is reported with the value the statement gave (its session's zone), not
// the stored UTC value.
func TestTimestampDupEntryInSessionZone(t *testing.T) {
	ctx := context.Background()
	conn := startConn(t)
	for _, q := range []string{
		"CREATE DATABASE tzd", "USE tzd",
		"CREATE TABLE t (id INT PRIMARY KEY, u TIMESTAMP NULL UNIQUE)",
		"SET time_zone = '+03:00'",
		"INSERT INTO t VALUES (1, '2021-03-03 04:00:00')",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The INSERT's duplicate, then the UPDATE's.
	for _, q := range []string{
		"INSERT INTO t VALUES (2, '2021-03-03 04:00:00')",
		"INSERT INTO t VALUES (2, '2021-03-03 05:00:00')",
		"UPDATE t SET u = '2021-03-03 04:00:00' WHERE id = 2",
	} {
		_, err := conn.ExecContext(ctx, q)
		if strings.HasPrefix(q, "INSERT INTO t VALUES (2, '2021-03-03 05") {
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "Duplicate entry '2021-03-03 04:00:00' for key 't.u'") {
			t.Errorf("%s: got %v, want the duplicate at 04:00", q, err)
		}
	}
}
