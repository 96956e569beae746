package testkit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// build is the one basalt binary of this test process.
var build struct {
	once sync.Once
	dir  string // a temporary directory holding bin; Main removes it
	bin  string
	err  error
}

// BuildBasalt builds ./cmd/basalt once per test process and returns the
// binary's path. It skips the test while cmd/basalt does not exist and fails
// it, with the compiler's output, when the build fails.
func BuildBasalt(t testing.TB) string {
	t.Helper()
	root := ModuleRoot(t)
	if _, err := os.Stat(filepath.Join(root, "cmd", "basalt")); errors.Is(err, fs.ErrNotExist) {
		t.Skip("testkit: cmd/basalt does not exist yet; nothing to test")
	}
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "basalt-testkit-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "basalt")
		cmd := exec.Command("go", "build", "-o", build.bin, "./cmd/basalt")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/basalt: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatalf("testkit: %v", build.err)
	}
	return build.bin
}

// Main runs the tests, removes the binary BuildBasalt built and exits.
// Packages that build basalt call it from TestMain:
//
//	func TestMain(m *testing.M) { testkit.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}
