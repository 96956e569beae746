package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// ModuleRoot returns the directory holding this module's go.mod, found by
// walking up from the working directory (a test's package directory).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testkit: no go.mod above the working directory")
		}
		dir = parent
	}
}
