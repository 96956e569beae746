package storenode_test

import (
	"testing"

	"github.com/basalt-db/basalt/testkit"
)

// TestMain removes the basalt binary that testkit builds for the cluster
// tests (97 MB under $TMPDIR, left behind by every run before).
func TestMain(m *testing.M) { testkit.Main(m) }
