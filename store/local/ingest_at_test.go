package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
)

func ingestAt(s *Store, txn kv.Txn, start, end string, kvs ...string) error {
	return s.IngestAt(context.Background(), txn, []byte(start), []byte(end), func(put func(k, v []byte) error) error {
		for i := 0; i+1 < len(kvs); i += 2 {
			if err := put([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestIngestAt: versions ingested at an open transaction's start ts S,
// into a range with versions below S (flushed to an SST) and above it (in
// the memtable), read as written at S; a commit after S wins over them
// where it wrote the key; below S nothing changes. They survive a
// restart. An ended transaction, or one of another store, is refused.
func TestIngestAt(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	mustCommit(t, s, "a", "a-old", "c", "c-old", "f", "f-old", "z0", "outside")
	if err := s.db.DB().Flush(); err != nil {
		t.Fatal(err)
	}
	txn, err := s.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		t.Fatal(err)
	}
	S := txn.StartTS()
	after, _ := s.Begin(kv.TxnOptions{})
	after.Delete([]byte("c"))
	after.Set([]byte("d"), []byte("d-new"))
	after.Set([]byte("g"), []byte("g-new"))
	if err := after.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	long := string(bytes.Repeat([]byte("L"), 1000))
	if err := ingestAt(s, txn, "a", "z", "b", "b-S", "c", "c-S", "d", "d-S", "e", long, "f", "f-S"); err != nil {
		t.Fatal(err)
	}
	now, _ := s.CurrentTS()
	check := func(s *Store) {
		t.Helper()
		for _, c := range []struct {
			ts       uint64
			key, val string
		}{
			{S - 1, "a", "a-old"}, {S - 1, "b", "<none>"}, {S - 1, "c", "c-old"}, {S - 1, "d", "<none>"}, {S - 1, "f", "f-old"},
			{S, "a", "a-old"}, {S, "b", "b-S"}, {S, "c", "c-S"}, {S, "d", "d-S"}, {S, "e", long}, {S, "f", "f-S"}, {S, "g", "<none>"},
			{now, "a", "a-old"}, {now, "b", "b-S"}, {now, "c", "<none>"}, {now, "d", "d-new"}, {now, "e", long}, {now, "f", "f-S"},
			{now, "g", "g-new"}, {now, "z0", "outside"},
		} {
			if got := mustGet(t, s, c.ts, c.key); got != c.val {
				t.Errorf("%s at S%+d: got %.20q, want %.20q", c.key, int64(c.ts-S), got, c.val)
			}
		}
	}
	check(s)
	if names, _ := s.db.FS().List(s.db.FS().PathJoin(s.db.Dir(), importDir)); len(names) != 0 {
		t.Errorf("files left after the ingest: %v", names)
	}
	txn.Rollback()
	if err := ingestAt(s, txn, "a", "z", "b", "x"); !errors.Is(err, errIngestTxn) {
		t.Errorf("ingest at an ended transaction: %v, want errIngestTxn", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	check(s)

	other, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	foreign, _ := other.Begin(kv.TxnOptions{})
	defer foreign.Rollback()
	if err := ingestAt(s, foreign, "a", "z", "b", "x"); !errors.Is(err, errIngestTxn) {
		t.Errorf("ingest at another store's transaction: %v, want errIngestTxn", err)
	}
}

// TestIngestAtFailureLeavesNothing: a fill that fails, keys out of order
// or outside the range: nothing is visible, no file is left.
func TestIngestAtFailureLeavesNothing(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	txn, _ := s.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	defer txn.Rollback()
	boom := errors.New("boom")
	err = s.IngestAt(context.Background(), txn, []byte("b"), []byte("c"), func(put func(k, v []byte) error) error {
		if err := put([]byte("b1"), []byte("v")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the fill's error", err)
	}
	for _, kvs := range [][]string{{"b2", "x", "b1", "y"}, {"b1", "x", "b1", "y"}, {"b1", "x", "c1", "y"}, {"a1", "x"}, {"b1", ""}} {
		if err := ingestAt(s, txn, "b", "c", kvs...); err == nil {
			t.Errorf("%q ingested", kvs)
		}
	}
	now, _ := s.CurrentTS()
	for _, k := range []string{"a1", "b1", "b2", "c1"} {
		if got := mustGet(t, s, now, k); got != "<none>" {
			t.Errorf("%s after failed ingests: %q", k, got)
		}
	}
	if names, _ := s.db.FS().List(s.db.FS().PathJoin(s.db.Dir(), importDir)); len(names) != 0 {
		t.Fatalf("files left by failed ingests: %v", names)
	}
}

// TestIngestAtChunks: pairs spread over many chunks, given to the
// writers in turn, are all ingested, each once, in files of disjoint key
// ranges (Pebble refuses an ingest of overlapping files), a value on
// either side of the short value limit (CFDefault or not) among them.
func TestIngestAtChunks(t *testing.T) {
	defer func(n int) { ingestChunkBytes = n }(ingestChunkBytes)
	ingestChunkBytes = 2 * pipeBatchBytes
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	txn, err := s.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Rollback()
	const n = 100000
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%07d", i)) }
	value := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%300) }
	err = s.IngestAt(context.Background(), txn, []byte("k"), []byte("l"), func(put func(k, v []byte) error) error {
		for i := range n {
			if err := put(key(i), value(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	now, _ := s.CurrentTS()
	it, err := s.Snapshot(now).Iter([]byte("k"), []byte("l"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	i := 0
	for ; it.Valid(); i++ {
		if !bytes.Equal(it.Key(), key(i)) || !bytes.Equal(it.Value(), value(i)) {
			t.Fatalf("pair %d: %q=%q, want %q", i, it.Key(), it.Value(), key(i))
		}
		if err := it.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if i != n {
		t.Fatalf("%d pairs read, want %d", i, n)
	}
	if m := s.Metrics(); m.Total().TablesCount < 10 {
		t.Fatalf("%d tables: the pairs were not written in chunks", m.Total().TablesCount)
	}
}

// BenchmarkIngestAt ingests 1M entries of a non-unique index on an int
// column (sorted, about 40 MB of pairs) at a snapshot, with the SSTs
// written by one goroutine and by ingestWriters; cpu-ns/op is the
// process's CPU time per ingest.
func BenchmarkIngestAt(b *testing.B) {
	const n = 1000000
	keys := make([][]byte, n)
	for i := range keys {
		k := []byte("t\x80\x00\x00\x00\x00\x00\x00\x69_i\x80\x00\x00\x00\x00\x00\x00\x02\x03")
		k = append(k, byte(0x80), 0, 0, 0, byte(i>>24), byte(i>>16), byte(i>>8), byte(i))
		k = append(k, 3, 0x80, 0, 0, 0, 0, byte(i>>16), byte(i>>8), byte(i))
		keys[i] = k
	}
	for _, writers := range []int{1, 4} {
		b.Run(fmt.Sprintf("writers=%d", min(writers, ingestWriters())), func(b *testing.B) {
			defer func(n int) { maxIngestWriters = n }(maxIngestWriters)
			maxIngestWriters = writers
			s, err := Open(b.TempDir(), Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var cpu time.Duration
			for range b.N {
				txn, err := s.Begin(kv.TxnOptions{Mode: kv.Optimistic})
				if err != nil {
					b.Fatal(err)
				}
				c0 := processCPU()
				err = s.IngestAt(context.Background(), txn, []byte("t"), []byte("u"), func(put func(k, v []byte) error) error {
					for _, k := range keys {
						if err := put(k, []byte{'0'}); err != nil {
							return err
						}
					}
					return nil
				})
				cpu += processCPU() - c0
				txn.Rollback()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
