package tikv_test

import (
	"testing"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/kv/kvtest"
	"github.com/basalt-db/basalt/store/tikv"
)

// The kv suite every storage passes, on client-go's mock cluster.
func TestKV(t *testing.T) {
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	kvtest.Run(t, func(t *testing.T) kv.Storage {
		s, err := tikv.OpenMock()
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
