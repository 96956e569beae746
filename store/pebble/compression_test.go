package pebble

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestCompression: tables are written with Pebble's fastest compression,
// MinLZ (Snappy on arm64).
func TestCompression(t *testing.T) {
	e := openMem(t, vfs.NewMem())
	defer e.Close()
	var b mvcc.Batch
	for i := range 5000 {
		b.Put(mvcc.CFDefault, fmt.Appendf(nil, "k%06d", i), []byte(strings.Repeat("0123456789-", 10)))
	}
	if err := e.Write(&b, false); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := e.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	if len(levels[0]) == 0 {
		t.Fatal("no table in L0 after a flush")
	}
	want := "MinLZ"
	if runtime.GOARCH == "arm64" {
		want = "Snappy"
	}
	// CompressionStats: "<setting>:<compressed>/<uncompressed>,...".
	if got := levels[0][0].Properties.CompressionStats; !strings.HasPrefix(got, want) {
		t.Errorf("table's compression: %q, want %s", got, want)
	}
}
