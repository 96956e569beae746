package sqllogictest

import (
	"testing"

	"github.com/basalt-db/basalt/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
