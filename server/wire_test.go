package server

import (
	"bytes"
	"testing"
)

func TestLenenc(t *testing.T) {
	for _, n := range []uint64{0, 250, 251, 1<<16 - 1, 1 << 16, 1<<24 - 1, 1 << 24, 1<<64 - 1} {
		b := appendLenencInt(nil, n)
		r := newReader(b)
		if got := r.lenencInt(); got != n || r.bad || r.remaining() != 0 {
			t.Errorf("%d: encoded % x, read back %d (bad=%v)", n, b, got, r.bad)
		}
	}
	// A NULL marker, or a length longer than the packet, is malformed.
	for _, b := range [][]byte{{0xfb}, {0xff}, {0xfc, 1}, {5, 'a'}} {
		r := newReader(b)
		if r.lenencBytes(); !r.bad {
			t.Errorf("% x read as a lenenc string", b)
		}
	}
}

// patchLenenc must give the same bytes as encoding a known length.
func TestPatchLenenc(t *testing.T) {
	for _, n := range []int{0, 1, 250, 251, 1<<16 - 1, 1 << 16, 1 << 24} {
		text := bytes.Repeat([]byte{'x'}, n)
		b := append([]byte("prefix"), 0)
		b = patchLenenc(append(b, text...), len("prefix"))
		want := appendLenencBytes([]byte("prefix"), text)
		if !bytes.Equal(b, want) {
			t.Errorf("length %d: patched encoding differs", n)
		}
	}
}

func TestReaderNulBytes(t *testing.T) {
	r := newReader([]byte("user\x00db"))
	if got := string(r.nulBytes()); got != "user" {
		t.Errorf("first: %q", got)
	}
	if got := string(r.nulBytes()); got != "db" || r.bad {
		t.Errorf("last, unterminated: %q bad=%v", got, r.bad)
	}
}
