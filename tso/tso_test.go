package tso

import "testing"

func TestCompose(t *testing.T) {
	for _, c := range []struct {
		physical, logical int64
		ts                uint64
	}{
		{0, 0, 0},
		{0, 1, 1},
		{0, MaxLogical - 1, 1<<18 - 1},
		{1, 0, 1 << 18},
		{1_700_000_000_000, 7, 1_700_000_000_000<<18 | 7},
	} {
		ts := ComposeTS(c.physical, c.logical)
		if ts != c.ts {
			t.Errorf("ComposeTS(%d, %d) = %d, want %d", c.physical, c.logical, ts, c.ts)
		}
		if p, l := PhysicalMs(ts), Logical(ts); p != c.physical || l != c.logical {
			t.Errorf("%d splits into (%d, %d), want (%d, %d)", ts, p, l, c.physical, c.logical)
		}
	}
}

// Timestamps order as their (physical, logical) pairs do.
func TestOrder(t *testing.T) {
	ts := []uint64{
		ComposeTS(5, 0), ComposeTS(5, 1), ComposeTS(5, MaxLogical-1),
		ComposeTS(6, 0), ComposeTS(1_700_000_000_000, 0),
	}
	for i := 1; i < len(ts); i++ {
		if ts[i-1] >= ts[i] {
			t.Errorf("timestamp %d (%d) is not above the one before (%d)", i, ts[i], ts[i-1])
		}
	}
}
