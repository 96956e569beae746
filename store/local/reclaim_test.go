package local

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// dirSize is the bytes of every file under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			// A file Pebble deleted while we walked.
			if d != nil && !d.IsDir() {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// loadRange commits n keys of prefix with incompressible values of size
// bytes, in transactions of 1,000 keys.
func loadRange(t *testing.T, s *Store, prefix string, n, size int) {
	t.Helper()
	r := rand.New(rand.NewSource(int64(len(prefix))))
	for i := 0; i < n; {
		txn, err := s.Begin(kv.TxnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 1000 && i < n; i, j = i+1, j+1 {
			v := make([]byte, size)
			r.Read(v)
			if err := txn.Set([]byte(fmt.Sprintf("%s%08d", prefix, i)), v); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeleteRangeGivesSpaceBack loads about 32 MB under one prefix and a
// little under another, drops the first with DeleteRange (what DROP TABLE,
// DROP DATABASE and TRUNCATE do once no transaction can read the table),
// and checks that the data directory shrinks back near its size before the
// load within a bounded time, and that the other keys are intact.
func TestDeleteRangeGivesSpaceBack(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	loadRange(t, s, "keep", 2000, 1000)
	empty := dirSize(t, dir)
	const n, size = 32000, 1000
	loadRange(t, s, "drop", n, size)
	loaded := dirSize(t, dir)
	t.Logf("data directory: %.1f MB before the load, %.1f MB after loading %.1f MB (Pebble's DiskSpaceUsage %.1f MB)",
		mb(empty), mb(loaded), mb(n*size), mb(int64(s.Metrics().DiskSpaceUsage())))
	if loaded-empty < n*size/2 {
		t.Fatalf("the load added only %d bytes", loaded-empty)
	}

	start := time.Now()
	if err := s.DeleteRange(context.Background(), []byte("drop"), []byte("dropz")); err != nil {
		t.Fatal(err)
	}
	// Back within a quarter of the load, in a bounded time.
	want := empty + n*size/4
	var now int64
	for {
		now = dirSize(t, dir)
		if now <= want || time.Since(start) > 20*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("after DeleteRange: %.1f MB after %v (Pebble's DiskSpaceUsage %.1f MB)",
		mb(now), time.Since(start).Round(time.Millisecond), mb(int64(s.Metrics().DiskSpaceUsage())))
	if now > want {
		t.Fatalf("data directory is %.1f MB %v after DeleteRange; want at most %.1f MB", mb(now), time.Since(start).Round(time.Second), mb(want))
	}

	snap := s.Snapshot(mustTS(t, s))
	it, err := snap.Iter([]byte("drop"), []byte("dropz"))
	if err != nil {
		t.Fatal(err)
	}
	if it.Valid() {
		t.Fatalf("key %q survived DeleteRange", it.Key())
	}
	it.Close()
	it, err = snap.Iter([]byte("keep"), []byte("keepz"))
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for ; it.Valid(); it.Next() {
		kept++
	}
	it.Close()
	if kept != 2000 {
		t.Fatalf("%d keys of the other range left, want 2000", kept)
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// TestCloseWhileReclaiming closes the store just after a DeleteRange, with
// its compaction queued or running: Close waits for it to stop (Pebble
// panics on a compaction of a closed database), and the deletion stays.
func TestCloseWhileReclaiming(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	loadRange(t, s, "drop", 5000, 1000)
	if err := s.DeleteRange(context.Background(), []byte("drop"), []byte("dropz")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	it, err := s.Snapshot(mustTS(t, s)).Iter([]byte("drop"), []byte("dropz"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.Valid() {
		t.Fatalf("key %q is back after a restart", it.Key())
	}
}
