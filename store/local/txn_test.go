package local

import (
	"testing"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/kv/kvtest"
)

// TestTxn runs the scripts every kv.Storage passes (kv/kvtest) on the
// embedded store, each in a new data directory.
func TestTxn(t *testing.T) {
	kvtest.Run(t, openTemp)
}

// TestTxnRestart runs testdata/txn_*, the embedded store's own scripts in
// kvtest's language: what a restart keeps.
func TestTxnRestart(t *testing.T) {
	kvtest.RunFiles(t, "testdata", kvtest.Harness{
		Open: openTemp,
		Reopen: func(t *testing.T, s kv.Storage) kv.Storage {
			dir := s.(*Store).dir
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}

// openTemp opens a store in a new temporary directory.
func openTemp(t *testing.T) kv.Storage {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
