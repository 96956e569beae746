package pebble

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func openMem(t *testing.T, fs vfs.FS) *Engine {
	t.Helper()
	e, err := Open("db", Options{FS: fs, BlockCacheSize: 1 << 20, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// dump lists cf's keys in [lower, upper), forward or backward.
func dump(t *testing.T, e *Engine, cf mvcc.CF, lower, upper []byte, reverse bool) string {
	t.Helper()
	it, err := e.NewIter(cf, lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	first, next := it.First, it.Next
	if reverse {
		first, next = it.Last, it.Prev
	}
	for ok := first(); ok; ok = next() {
		out = append(out, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// The column families are disjoint keyspaces: writes, reads, iterators
// and range deletions of one never see another's keys.
func TestColumnFamilies(t *testing.T) {
	e := openMem(t, vfs.NewMem())
	defer e.Close()
	var b mvcc.Batch
	for _, cf := range []mvcc.CF{mvcc.CFDefault, mvcc.CFLock, mvcc.CFWrite} {
		for _, k := range []string{"a", "b", "c", "\xff"} {
			b.Put(cf, []byte(k), []byte(cf.String()))
		}
	}
	if err := e.Write(&b, true); err != nil {
		t.Fatal(err)
	}
	if v, err := e.Get(mvcc.CFLock, []byte("b")); err != nil || string(v) != "lock" {
		t.Fatalf("Get(lock, b) = %q, %v", v, err)
	}
	if got, want := dump(t, e, mvcc.CFWrite, []byte("b"), nil, false), "b=write c=write \xff=write"; got != want {
		t.Fatalf("write [b, end): %q, want %q", got, want)
	}
	if got, want := dump(t, e, mvcc.CFDefault, nil, []byte("c"), true), "b=default a=default"; got != want {
		t.Fatalf("default [, c) backwards: %q, want %q", got, want)
	}
	it, err := e.NewIter(mvcc.CFLock, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.SeekGE([]byte("bb")) || string(it.Key()) != "c" || !it.SeekLT([]byte("b")) || string(it.Key()) != "a" {
		t.Fatal("seeks in the lock column family went astray")
	}
	it.Close()

	b.Reset()
	b.DelRange(mvcc.CFWrite, []byte("a"), []byte("c"))
	b.Del(mvcc.CFDefault, []byte("c"))
	if err := e.Write(&b, false); err != nil {
		t.Fatal(err)
	}
	if err := e.ClearCF(mvcc.CFLock, false); err != nil {
		t.Fatal(err)
	}
	for cf, want := range map[mvcc.CF]string{
		mvcc.CFDefault: "a=default b=default \xff=default",
		mvcc.CFLock:    "",
		mvcc.CFWrite:   "c=write \xff=write",
	} {
		if got := dump(t, e, cf, nil, nil, false); got != want {
			t.Errorf("%s after deletes: %q, want %q", cf, got, want)
		}
	}
	if _, err := e.Get(mvcc.CFLock, []byte("b")); !errors.Is(err, mvcc.ErrEngineNotFound) {
		t.Fatalf("Get of a cleared key: %v, want ErrEngineNotFound", err)
	}
}

// A database that exists reopens with what was written; one whose files
// are gone is refused, not created afresh.
func TestOpenExisting(t *testing.T) {
	fs := vfs.NewMem()
	e := openMem(t, fs)
	var b mvcc.Batch
	b.Put(mvcc.CFWrite, []byte("k"), []byte("v"))
	if err := e.Write(&b, true); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openMem(t, fs)
	if v, err := e.Get(mvcc.CFWrite, []byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("after reopen: %q, %v", v, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := fs.Remove(fs.PathJoin("db", n)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open("db", Options{FS: fs}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Open of an emptied database = %v, want an error about missing files", err)
	}
}
