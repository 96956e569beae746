package mvcc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitReadRangeKeysBetween checks that a range read waits for a
// commit in flight only if one of the commit's keys lies in its range,
// not when the range merely falls between two of them.
func TestWaitReadRangeKeysBetween(t *testing.T) {
	l := NewLatches()
	g, err := l.Acquire(context.Background(), 10, [][]byte{[]byte("t1_i5"), []byte("t4_r9")})
	if err != nil {
		t.Fatal(err)
	}
	l.MarkCommitting(g)
	wait := func(start, end string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var e []byte
		if end != "" {
			e = []byte(end)
		}
		return l.WaitReadRange(ctx, []byte(start), e, 20)
	}
	for _, c := range []struct {
		start, end string
		waits      bool
	}{
		{"t2_r1", "t2_r9", false}, // between the two keys
		{"t1_i6", "t4_r9", false}, // ends at the last key, excluded
		{"t0", "t1_i5", false},    // ends at the first key, excluded
		{"t4_r9", "", true},       // holds the last key
		{"t1_i5", "t1_i6", true},
		{"t4_r0", "", true},
		{"", "", true},
		{"t3", "t5", true},
	} {
		err := wait(c.start, c.end)
		if got := errors.Is(err, context.DeadlineExceeded); got != c.waits {
			t.Errorf("[%q, %q): waited %t, want %t (err %v)", c.start, c.end, got, c.waits, err)
		}
	}
	l.Release(g)
	if err := wait("", ""); err != nil {
		t.Errorf("after release: %v", err)
	}
}
