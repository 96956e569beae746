package session

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
)

// A read below the GC safe point is TiDB's 9006, with TiDB's message.
func TestMapErrorGCTooEarly(t *testing.T) {
	start := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	sp := start.Add(time.Minute)
	err := mapError(fmt.Errorf("read: %w", &kv.GCTooEarlyError{StartTS: start, SafePoint: sp}), nil)
	var e *errno.Error
	if !errors.As(err, &e) || e.Code != 9006 || e.State != "HY000" ||
		e.Msg != "GC life time is shorter than transaction duration, transaction starts at 2026-11-26 23:00:00 +0000 UTC, GC safe point is 2026-11-26 23:01:00 +0000 UTC" {
		t.Fatalf("mapError = %#v", err)
	}
}
