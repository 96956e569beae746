package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
)

func importKVs(t *testing.T, s *Store, start, end string, kvs ...string) (uint64, error) {
	t.Helper()
	return s.Import(context.Background(), []byte(start), []byte(end), func(_ uint64, put func(k, v []byte) error) error {
		for i := 0; i+1 < len(kvs); i += 2 {
			if err := put([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
				return err
			}
		}
		return nil
	})
}

func mustGet(t *testing.T, s *Store, ts uint64, key string) string {
	t.Helper()
	v, err := s.Snapshot(ts).Get(context.Background(), []byte(key))
	if errors.Is(err, kv.ErrNotFound) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// TestImport: the keys imported are read at the commit ts and after (long
// values from CFDefault), not before; a range holding a key is refused; a
// range whose keys were all deleted is empty; a later transaction writes
// over imported keys.
func TestImport(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustCommit(t, s, "a0", "outside")
	before, _ := s.CurrentTS()
	long := string(bytes.Repeat([]byte("L"), 1000))
	ts, err := importKVs(t, s, "b", "c", "b1", "one", "b2", long, "b3", "three")
	if err != nil {
		t.Fatal(err)
	}
	if ts <= before {
		t.Fatalf("commit ts %d not above a ts taken before, %d", ts, before)
	}
	for _, c := range []struct {
		ts       uint64
		key, val string
	}{{before, "b1", "<none>"}, {ts - 1, "b1", "<none>"}, {ts, "b1", "one"}, {ts, "b2", long}, {ts + 1, "b3", "three"}, {ts, "a0", "outside"}} {
		if got := mustGet(t, s, c.ts, c.key); got != c.val {
			t.Errorf("%s at %d: got %.20q, want %.20q", c.key, c.ts, got, c.val)
		}
	}
	if _, err := importKVs(t, s, "b", "c", "b9", "x"); !errors.Is(err, kv.ErrImportTargetNotEmpty) {
		t.Fatalf("import into a range with keys: %v, want ErrImportTargetNotEmpty", err)
	}
	mustCommit(t, s, "b2", "two")
	now, _ := s.CurrentTS()
	if got := mustGet(t, s, now, "b2"); got != "two" {
		t.Fatalf("b2 after an update: %q", got)
	}

	// A range whose only key was deleted imports.
	mustCommit(t, s, "d1", "gone")
	txn, _ := s.Begin(kv.TxnOptions{})
	txn.Delete([]byte("d1"))
	if err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ts, err = importKVs(t, s, "d", "e", "d1", "back"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, ts, "d1"); got != "back" {
		t.Fatalf("d1 after its import: %q", got)
	}
}

// TestImportFailureLeavesNothing: a fill that fails after putting keys
// commits none of them, and leaves no file behind.
func TestImportFailureLeavesNothing(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boom := errors.New("boom")
	_, err = s.Import(context.Background(), []byte("b"), []byte("c"), func(_ uint64, put func(k, v []byte) error) error {
		if err := put([]byte("b1"), []byte("v")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the fill's error", err)
	}
	now, _ := s.CurrentTS()
	if got := mustGet(t, s, now, "b1"); got != "<none>" {
		t.Fatalf("b1 after a failed import: %q", got)
	}
	if names, _ := s.db.FS().List(s.db.FS().PathJoin(s.db.Dir(), importDir)); len(names) != 0 {
		t.Fatalf("files left by a failed import: %v", names)
	}
	// Out of order keys are the caller's bug, and fail the import too.
	_, err = importKVs(t, s, "b", "c", "b2", "x", "b1", "y")
	if err == nil {
		t.Fatal("keys out of order imported")
	}
}

// TestImportReadersWait: a reader whose ts is at or above the commit ts
// waits until the files are ingested, then reads them; one below does not
// wait, and reads nothing. A writer of a key in the range waits too.
func TestImportReadersWait(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inFill, release := make(chan uint64), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := s.Import(context.Background(), []byte("b"), []byte("c"), func(commitTS uint64, put func(k, v []byte) error) error {
			inFill <- commitTS
			<-release
			return put([]byte("b1"), []byte("one"))
		})
		done <- err
	}()
	commitTS := <-inFill
	readTS, _ := s.CurrentTS()
	read := make(chan string, 1)
	go func() {
		v, err := s.Snapshot(readTS).Get(context.Background(), []byte("b1"))
		if err != nil {
			read <- err.Error()
			return
		}
		read <- string(v)
	}()
	scanned := make(chan int, 1)
	go func() {
		it, err := s.Snapshot(readTS).Iter([]byte("a"), []byte("z"))
		n := 0
		for err == nil && it.Valid() {
			n++
			err = it.Next()
		}
		scanned <- n
	}()
	if got := mustGet(t, s, commitTS-1, "b1"); got != "<none>" {
		t.Fatalf("a read below the commit ts got %q", got)
	}
	select {
	case v := <-read:
		t.Fatalf("a read at %d (commit ts %d) did not wait for the import: %q", readTS, commitTS, v)
	case n := <-scanned:
		t.Fatalf("a scan did not wait for the import: %d keys", n)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v := <-read; v != "one" {
		t.Fatalf("the read that waited got %q", v)
	}
	if n := <-scanned; n != 1 {
		t.Fatalf("the scan that waited got %d keys", n)
	}
}

// TestImportDropsLatestCache: a range whose keys were deleted and then
// cached by the latest-version cache (as deletions) reads the imported
// values afterwards, not the cached deletions.
func TestImportDropsLatestCache(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// 16 keys of one chunk (same prefix, one byte longer), each updated a
	// few times so that scans over them are crowded, then deleted.
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprintf("p%c", 'a'+i)
	}
	for round := 0; round < 3; round++ {
		var kvs []string
		for _, k := range keys {
			kvs = append(kvs, k, fmt.Sprint(round))
		}
		mustCommit(t, s, kvs...)
	}
	txn, _ := s.Begin(kv.TxnOptions{})
	for _, k := range keys {
		txn.Delete([]byte(k))
	}
	if err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20 && s.LatestCacheStats().Chunks == 0; i++ {
		ts, _ := s.CurrentTS()
		// A scan from a key of the chunk's length names the chunk "p".
		it, err := s.Snapshot(ts).Iter([]byte("p\x00"), []byte("q"))
		if err != nil {
			t.Fatal(err)
		}
		for it.Valid() {
			it.Next()
		}
		it.Close()
	}
	if s.LatestCacheStats().Chunks == 0 {
		t.Fatal("the chunk of the deleted keys was not cached; the test needs it cached")
	}
	var kvs []string
	for _, k := range keys {
		kvs = append(kvs, k, "new-"+k)
	}
	ts, err := importKVs(t, s, "p", "q", kvs...)
	if err != nil {
		t.Fatal(err)
	}
	it, err := s.Snapshot(ts).Iter([]byte("p\x00"), []byte("q"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; it.Valid(); it.Next() {
		n++
	}
	it.Close()
	if n != len(keys) {
		t.Fatalf("a scan after the import read %d keys, want %d", n, len(keys))
	}
	if got := mustGet(t, s, ts, "pc"); got != "new-pc" {
		t.Fatalf("pc after the import: %q", got)
	}
}
