package brie

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocalPath(t *testing.T) {
	for _, c := range []struct{ url, path, err string }{
		{"local:///tmp/bk", "/tmp/bk", ""},
		{"local:///tmp/bk/../bk2/", "/tmp/bk2", ""},
		{"local://tmp/bk", "", "must name an absolute path"},
		{"local://relative", "", "must name an absolute path"},
		{"/tmp/bk", "", "has no scheme"},
		{"s3://bucket/prefix", "", `storage "s3://" is not supported`},
		{"noop://", "", `storage "noop://" is not supported`},
	} {
		p, err := LocalPath(c.url)
		if c.err == "" && (err != nil || p != c.path) {
			t.Errorf("LocalPath(%q) = %q, %v; want %q", c.url, p, err, c.path)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("LocalPath(%q) = %q, %v; want an error with %q", c.url, p, err, c.err)
		}
	}
}

// TestDataFile: what a fileWriter writes reads back, entry for entry, and
// a file that differs from its description in any way is ErrCorrupt.
func TestDataFile(t *testing.T) {
	dir := t.TempDir()
	fw, err := createFile(dir, "t1_0.kv")
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("t\x80\x00\x00\x00\x00\x00\x00\x01")
	want := [][2]string{{string(prefix) + "_r1", "one"}, {string(prefix) + "_r2", strings.Repeat("x", 300)}, {string(prefix) + "_i1", "v"}}
	for _, e := range want {
		if err := fw.add([]byte(e[0]), []byte(e[1])); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fw.close()
	if err != nil {
		t.Fatal(err)
	}
	if f.Keys != 3 {
		t.Fatalf("keys %d, want 3", f.Keys)
	}
	var got [][2]string
	if err := readFile(dir, f, prefix, func(k, v []byte) error {
		got = append(got, [2]string{string(k), string(v)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %q, want %q", i, got[i], want[i])
		}
	}

	corrupt := func(what string, desc File, prefix []byte, wantMsg string) {
		t.Helper()
		err := readFile(dir, desc, prefix, nil)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), wantMsg) {
			t.Errorf("%s: %v, want ErrCorrupt with %q", what, err, wantMsg)
		}
	}
	bad := f
	bad.Keys = 4
	corrupt("a key count off by one", bad, prefix, "holds 3 keys")
	corrupt("keys of another table", f, []byte("t\x80\x00\x00\x00\x00\x00\x00\x02"), "is not the table's")
	bad = f
	bad.Name = "t1_1.kv"
	corrupt("a missing file", bad, prefix, "is missing")

	b, err := os.ReadFile(filepath.Join(dir, f.Name))
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0x40
		if err := os.WriteFile(filepath.Join(dir, f.Name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		corrupt("a changed byte", f, prefix, "checksum mismatch")
		b[i] ^= 0x40
	}
	if err := os.WriteFile(filepath.Join(dir, f.Name), b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt("a truncated file", f, prefix, "checksum mismatch")
	// A truncated file whose description was made to match still fails to
	// decode.
	if _, err := decodeEntries(b[:len(b)-1], prefix); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("decoding a truncated file: %v", err)
	}
}
