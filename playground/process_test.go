package playground

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartChildEnv: a child runs in the playground's environment with
// its node's Env added, a later entry winning; its log's first line
// shows the command as a shell would have it.
func TestStartChildEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BASALT_PLAYGROUND_TEST_OUTER", "outer")
	t.Setenv("BASALT_PLAYGROUND_TEST_A", "playground's")
	n := &Node{Name: "x", Dir: dir, LogFile: filepath.Join(dir, "x.log"),
		Args: []string{"-c", `echo "A=$BASALT_PLAYGROUND_TEST_A B=$BASALT_PLAYGROUND_TEST_B OUTER=$BASALT_PLAYGROUND_TEST_OUTER"`},
		Env:  []string{"BASALT_PLAYGROUND_TEST_A=1", "BASALT_PLAYGROUND_TEST_B=2", "BASALT_PLAYGROUND_TEST_A=3"}}
	c, err := startChild("/bin/sh", n)
	if err != nil {
		t.Fatal(err)
	}
	<-c.exited
	if c.err != nil {
		t.Fatal(c.err)
	}
	b, err := os.ReadFile(n.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("log:\n%s", b)
	}
	if want := "BASALT_PLAYGROUND_TEST_A=1 BASALT_PLAYGROUND_TEST_B=2 BASALT_PLAYGROUND_TEST_A=3 /bin/sh -c"; !strings.Contains(lines[0], want) {
		t.Errorf("first line %q, want it to contain %q", lines[0], want)
	}
	if want := "A=3 B=2 OUTER=outer"; lines[1] != want {
		t.Errorf("the child saw %q, want %q", lines[1], want)
	}
}
