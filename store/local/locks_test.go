package local

import (
	"fmt"
	"strings"
	"testing"
)

// TestLockTable checks the in-memory lock column family's point and range
// operations against what an ordered store would answer.
func TestLockTable(t *testing.T) {
	lt := newLockTable()
	lt.apply([]lockWrite{
		{key: []byte("b"), value: []byte("1")},
		{key: []byte("d"), value: []byte("2")},
		{key: []byte("a"), value: []byte("3")},
		{key: []byte("c"), value: []byte("4")},
		{key: []byte("e"), value: []byte("5")},
		{key: []byte("b"), value: []byte("6")},
	})
	dump := func(lower, upper string) string {
		var up []byte
		if upper != "" {
			up = []byte(upper)
		}
		it := lt.iter([]byte(lower), up)
		var out []string
		for ok := it.First(); ok; ok = it.Next() {
			out = append(out, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
		}
		return strings.Join(out, " ")
	}
	if got, want := dump("", ""), "a=3 b=6 c=4 d=2 e=5"; got != want {
		t.Fatalf("all: %q, want %q", got, want)
	}
	if got, want := dump("b", "d"), "b=6 c=4"; got != want {
		t.Fatalf("[b, d): %q, want %q", got, want)
	}
	it := lt.iter([]byte("a"), nil)
	if !it.SeekGE([]byte("bb")) || string(it.Key()) != "c" {
		t.Fatalf("SeekGE(bb) stopped at %q", it.Key())
	}
	if !it.SeekLT([]byte("c")) || string(it.Key()) != "b" {
		t.Fatalf("SeekLT(c) stopped at %q", it.Key())
	}
	if !it.Last() || string(it.Key()) != "e" || !it.Prev() || string(it.Key()) != "d" {
		t.Fatal("Last/Prev")
	}
	// A stored value is a copy: changing the caller's slice changes nothing.
	v := []byte("7")
	lt.apply([]lockWrite{{key: []byte("f"), value: v}})
	v[0] = 'x'
	if got, ok := lt.get([]byte("f")); !ok || string(got) != "7" {
		t.Fatalf("get(f) = %q, %v", got, ok)
	}
	lt.apply([]lockWrite{{key: []byte("b"), end: []byte("d")}, {key: []byte("e"), delete: true}})
	if got, want := dump("", ""), "a=3 d=2 f=7"; got != want {
		t.Fatalf("after deletes: %q, want %q", got, want)
	}
	if _, ok := lt.get([]byte("c")); ok {
		t.Fatal("c survived its range delete")
	}
}
