package session

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/tikv"
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

// PD's timeouts are TiDB's 9001 with TiDB's text, "PD server timeout: "
// and the cause the store gives, if any.
func TestMapErrorPDTimeout(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("begin: %w", &tikv.PDTimeoutError{Cause: "no timestamp from PD within 15s"}), "PD server timeout: no timestamp from PD within 15s"},
		{kv.ErrPDTimeout, "PD server timeout: "},
	} {
		var e *errno.Error
		if err := mapError(tc.err, nil); !errors.As(err, &e) || e.Code != 9001 || e.State != "HY000" || e.Msg != tc.want {
			t.Errorf("mapError(%v) = %#v, want 9001 %q", tc.err, err, tc.want)
		}
	}
}
