package local

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/basalt-db/basalt/tso"
)

// dirDigest summarizes every file name and content under dir, to prove a
// refused Open changed nothing.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			lines = append(lines, rel+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s %x", rel, sha256.Sum256(b)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func mustCommit(t *testing.T, s kv.Storage, kvs ...string) {
	t.Helper()
	txn, err := s.Begin(kv.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kvs); i += 2 {
		if err := txn.Set([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesBadDirectories(t *testing.T) {
	t.Run("foreign", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "ibdata1"), []byte("someone else's data"), 0o644); err != nil {
			t.Fatal(err)
		}
		before := dirDigest(t, dir)
		_, err := Open(dir, Options{})
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not a Basalt data directory") {
			t.Fatalf("Open(foreign dir) = %v, want an error naming %s as not Basalt's", err, dir)
		}
		if after := dirDigest(t, dir); after != before {
			t.Fatalf("Open changed a foreign directory:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
	t.Run("locked", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, err = Open(dir, Options{})
		if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), dir) {
			t.Fatalf("second Open = %v, want an in-use error naming %s", err, dir)
		}
		// The first store still works.
		mustCommit(t, s, "a", "1")
	})
	t.Run("unknown-format", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, markerFile), []byte("Basalt data directory, format 99\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		before := dirDigest(t, dir)
		if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "format 99") {
			t.Fatalf("Open = %v, want an unknown-format error", err)
		}
		if dirDigest(t, dir) != before {
			t.Fatal("Open changed a directory of unknown format")
		}
	})
	corrupt := func(t *testing.T, damage func(kvdir string)) {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustCommit(t, s, "a", "1", "b", "2")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		damage(filepath.Join(dir, kvDir))
		before := dirDigest(t, dir)
		_, err = Open(dir, Options{})
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Open(corrupt) = %v, want an error naming %s", err, dir)
		}
		t.Logf("refused with: %v", err)
		if after := dirDigest(t, dir); after != before {
			t.Fatalf("Open changed a corrupt directory:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}
	t.Run("corrupt-manifest", func(t *testing.T) {
		corrupt(t, func(kvdir string) {
			ms, _ := filepath.Glob(filepath.Join(kvdir, "MANIFEST-*"))
			if len(ms) == 0 {
				t.Fatal("no MANIFEST file")
			}
			for _, m := range ms {
				if err := os.WriteFile(m, []byte("garbage garbage garbage garbage"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	})
	t.Run("missing-database", func(t *testing.T) {
		corrupt(t, func(kvdir string) {
			ms, _ := filepath.Glob(filepath.Join(kvdir, "*"))
			for _, m := range ms {
				if err := os.RemoveAll(m); err != nil {
					t.Fatal(err)
				}
			}
		})
	})
	t.Run("deleted-database", func(t *testing.T) {
		corrupt(t, func(kvdir string) {
			if err := os.RemoveAll(kvdir); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("corrupt-oracle", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustCommit(t, s, "a", "1")
		s.Close()
		if err := os.WriteFile(filepath.Join(dir, oracleFile), []byte("xyz"), 0o644); err != nil {
			t.Fatal(err)
		}
		before := dirDigest(t, dir)
		if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), oracleFile) {
			t.Fatalf("Open = %v, want an error naming the oracle file", err)
		}
		if after := dirDigest(t, dir); after != before {
			t.Fatalf("Open changed a directory with a corrupt oracle file:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

func TestOracleNeverGoesBack(t *testing.T) {
	dir := t.TempDir()
	clock := time.UnixMilli(1_700_000_000_000)
	o, err := openOracle(dir)
	if err != nil {
		t.Fatal(err)
	}
	o.now = func() time.Time { return clock }
	var last uint64
	for i := range 1000 {
		ts, err := o.next()
		if err != nil {
			t.Fatal(err)
		}
		if ts <= last {
			t.Fatalf("timestamp %d: %d after %d", i, ts, last)
		}
		last = ts
		if i%100 == 0 {
			clock = clock.Add(time.Millisecond)
		}
	}
	// Restart with the wall clock an hour behind: timestamps still grow.
	// (A store closes its oracle first: no raise of the mark moving ahead
	// in the background may write the file after the restart's read.)
	o.close()
	o2, err := openOracle(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o2.close)
	o2.now = func() time.Time { return clock.Add(-time.Hour) }
	ts, err := o2.next()
	if err != nil {
		t.Fatal(err)
	}
	if ts <= last {
		t.Fatalf("after restart: %d, not above %d", ts, last)
	}
	// The logical counter overflowing moves the physical part forward.
	before := tso.PhysicalMs(o2.last.Load())
	o2.last.Store(tso.ComposeTS(before, tso.MaxLogical-1))
	ts, err = o2.next()
	if err != nil {
		t.Fatal(err)
	}
	if tso.PhysicalMs(ts) != before+1 || tso.Logical(ts) != 0 {
		t.Fatalf("logical overflow: physical %d (was %d), logical %d", tso.PhysicalMs(ts), before, tso.Logical(ts))
	}
}

// GC never removes a version that an open transaction can still read, and
// does remove what nobody can read.
func TestGCKeepsWhatOpenTxnsRead(t *testing.T) {
	s, err := Open(t.TempDir(), Options{GCLifeTime: time.Millisecond, GCInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	mustCommit(t, s, "k", "old")
	reader, err := s.Begin(kv.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustCommit(t, s, "k", fmt.Sprintf("new%d", i))
	}
	time.Sleep(5 * time.Millisecond)
	st, err := s.RunGC()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := reader.Get(ctx, []byte("k")); err != nil || string(v) != "old" {
		t.Fatalf("open reader after GC: %q, %v; want old", v, err)
	}
	if st.DeletedWrites != 0 {
		t.Fatalf("GC deleted %d versions while a reader of the oldest was open", st.DeletedWrites)
	}
	if err := reader.Rollback(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if st, err = s.RunGC(); err != nil {
		t.Fatal(err)
	}
	if st.DeletedWrites != 5 {
		t.Fatalf("GC with no readers deleted %d versions, want 5 (all but the newest)", st.DeletedWrites)
	}
	got, err := s.Snapshot(mustTS(t, s)).Get(ctx, []byte("k"))
	if err != nil || string(got) != "new4" {
		t.Fatalf("after GC: %q, %v; want new4", got, err)
	}
}

func mustTS(t testing.TB, s kv.Storage) uint64 {
	ts, err := s.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// A lock left on disk by a crashed process is cleared when the store opens.
func TestStaleLocksClearedAtOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	txn, _ := s.Begin(kv.TxnOptions{})
	if err := txn.LockKeys(ctx, txn.StartTS(), 0, []byte("row")); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash: close the database under the open transaction.
	if err := s.db.DB().Flush(); err != nil {
		t.Fatal(err)
	}
	s.closed.Store(true)
	close(s.stopGC)
	<-s.gcDone
	s.db.Close()
	s.lock.Close()

	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	txn2, _ := s.Begin(kv.TxnOptions{})
	if err := txn2.LockKeys(ctx, txn2.StartTS(), 0, []byte("row")); err != nil {
		t.Fatalf("lock after restart: %v", err)
	}
	_ = mvcc.CFLock
}
