package session

import (
	"fmt"
	"testing"
)

// TestMatchedInfo: an UPDATE's OK message reads as MySQL's, which
// fmt.Sprintf made before.
func TestMatchedInfo(t *testing.T) {
	for _, c := range []struct {
		matched, changed uint64
		warnings         int
	}{{0, 0, 0}, {1, 1, 0}, {1, 0, 0}, {12345, 678, 9}, {1 << 63, 1<<64 - 1, 65535}} {
		want := fmt.Sprintf("Rows matched: %d  Changed: %d  Warnings: %d", c.matched, c.changed, c.warnings)
		if got := matchedInfo(c.matched, c.changed, c.warnings); got != want {
			t.Errorf("matchedInfo(%d, %d, %d) = %q, want %q", c.matched, c.changed, c.warnings, got, want)
		}
	}
}
