package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchRunTargetAlias: --target is --targets (the spelling,
// "basalt bench run --target playground"); a bad target is refused
// before anything starts.
func TestBenchRunTargetAlias(t *testing.T) {
	for _, flag := range []string{"--target", "--targets"} {
		var stderr bytes.Buffer
		code := benchRun([]string{flag, "nosuchkind", "--out", t.TempDir()}, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), `--targets: unknown target "nosuchkind"`) {
			t.Errorf("%s nosuchkind: exit %d, stderr %q; want 2 and the target refused", flag, code, stderr.String())
		}
	}
}
