package pebble

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// TestWALMinSyncInterval: with Options.WALMinSyncInterval, a synced
// write that ends a sync with others in flight makes the next sync wait
// out the interval (so that the writes arriving meanwhile share it); a
// lone writer, one write at a time, is never held up, and neither are
// writers that arrive walGroupEnough or more to a sync.
func TestWALMinSyncInterval(t *testing.T) {
	const interval = 500 * time.Millisecond
	fs := &gatedSyncFS{FS: vfs.NewMem()}
	e, err := Open("db", Options{FS: fs, BlockCacheSize: 1 << 20, MemTableSize: 1 << 20, WALMinSyncInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	write := func(key string) {
		var b mvcc.Batch
		b.Put(mvcc.CFWrite, []byte(key), []byte("v"))
		if err := e.Write(&b, true); err != nil {
			t.Error(err)
		}
	}
	start := time.Now()
	for i := range 3 {
		write(fmt.Sprintf("lone%d", i))
	}
	if took := time.Since(start); took >= interval*9/10 {
		t.Errorf("3 synced writes one at a time took %v: a lone writer waited for the interval", took)
	}

	// The first writer's sync is held until the other writers are all
	// inside Write, so that it ends with them all in flight (the
	// scheduler alone may let them arrive one sync apart or all before
	// the first sync).
	concurrent := func(writers int) time.Duration {
		entered, release := fs.holdNextSync()
		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { write("w0") })
		<-entered
		for w := 1; w < writers; w++ {
			wg.Go(func() { write(fmt.Sprintf("w%d", w)) })
		}
		for e.syncing.Load() < int64(writers) {
			time.Sleep(time.Millisecond)
		}
		close(release)
		wg.Wait()
		return time.Since(start)
	}
	if n, took := walGroupEnough, concurrent(walGroupEnough); took >= interval*9/10 {
		t.Errorf("%d writers' synced writes took %v: a sync that %d writes arrived to waited for the interval", n, took, n)
	}
	// The last sync ended with the writers not yet returned, in flight:
	// let the interval it started pass.
	time.Sleep(interval)
	if n, took := walGroupEnough-1, concurrent(walGroupEnough-1); took < interval*9/10 {
		t.Errorf("%d writers' synced writes took %v: no sync waited for the interval", n, took)
	}
}

// gatedSyncFS is a filesystem whose next file sync can be held
// (holdNextSync) until the test releases it.
type gatedSyncFS struct {
	vfs.FS
	gate atomic.Pointer[syncGate]
}

type syncGate struct{ entered, release chan struct{} }

// holdNextSync makes the next sync of any file close entered and wait
// until release is closed.
func (fs *gatedSyncFS) holdNextSync() (entered <-chan struct{}, release chan struct{}) {
	g := &syncGate{entered: make(chan struct{}), release: make(chan struct{})}
	fs.gate.Store(g)
	return g.entered, g.release
}

func (fs *gatedSyncFS) wait() {
	if g := fs.gate.Swap(nil); g != nil {
		close(g.entered)
		<-g.release
	}
}

func (fs *gatedSyncFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return gatedSyncFile{File: f, fs: fs}, err
}

func (fs *gatedSyncFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return gatedSyncFile{File: f, fs: fs}, err
}

type gatedSyncFile struct {
	vfs.File
	fs *gatedSyncFS
}

func (f gatedSyncFile) Sync() error {
	f.fs.wait()
	return f.File.Sync()
}

func (f gatedSyncFile) SyncData() error {
	f.fs.wait()
	return f.File.SyncData()
}

func (f gatedSyncFile) SyncTo(length int64) (bool, error) {
	f.fs.wait()
	return f.File.SyncTo(length)
}
