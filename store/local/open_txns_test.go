package local

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tso"
)

// fastClock makes s's oracle see a wall clock that moves 1 ms per
// reading, so that every timestamp has a ms of its own and a safe point
// with no life time (GCLifeTime under 1 ms) is the oracle's now: a start
// ts taken before a safe point's now is then at or below the safe point.
func fastClock(s *Store) {
	var ms atomic.Int64
	ms.Store(time.Now().UnixMilli())
	s.oracle.now = func() time.Time { return time.UnixMilli(ms.Add(1)) }
}

// A safe point is below the start ts of every transaction open (its
// Begin returned, its end not begun) after it was computed: one that
// registered before the safe point read its shard is seen there, one
// that registered after took a ts above the safe point's now. It fails
// if Begin takes its ts from the oracle before it registers (a ts below
// now, and a registration the read missed).
func TestSafePointBelowOpenTxns(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true, GCLifeTime: time.Nanosecond, GCInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fastClock(s)
	beginStep = runtime.Gosched
	defer func() { beginStep = nil }()
	// open[i] is the start ts of goroutine i's open transaction, 0 when it
	// has none: set after Begin returns, cleared before Rollback.
	const workers = 8
	var open [workers]atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true)
	for i := range workers {
		wg.Go(func() {
			for !stop.Load() {
				tx, err := s.Begin(kv.TxnOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				open[i].Store(tx.StartTS())
				open[i].Store(0)
				tx.Rollback()
			}
		})
	}
	deadline := time.Now().Add(2 * time.Second)
	checks := 0
	for time.Now().Before(deadline) && !t.Failed() {
		// A transaction open after the safe point was computed had not
		// begun to end while it was: the safe point either saw it or was
		// computed before it took its ts.
		sp, err := s.GCSafePoint()
		if err != nil {
			t.Fatal(err)
		}
		for i := range open {
			if ts := open[i].Load(); ts != 0 && sp >= ts {
				t.Fatalf("safe point %d at or above the start ts %d of an open transaction", sp, ts)
			}
		}
		checks++
	}
	t.Logf("%d safe points checked", checks)
}

// A transaction with a start ts of its own (a stale read) that a caller
// accepts because its ts is not below LastGCSafePoint holds every later
// GC safe point below its ts, however its Begin and the GC pass
// interleave.
func TestStaleBeginAgainstRecordedSafePoint(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true, GCLifeTime: time.Nanosecond, GCInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fastClock(s)
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true)
	wg.Go(func() {
		for !stop.Load() {
			if _, err := s.safePoint(true); err != nil {
				t.Error(err)
				return
			}
		}
	})
	deadline := time.Now().Add(2 * time.Second)
	accepted := 0
	for time.Now().Before(deadline) && !t.Failed() {
		// A start ts just above the last safe point, as a stale read of a
		// moment ago would have.
		ts := s.LastGCSafePoint() + 1
		tx, err := s.Begin(kv.TxnOptions{StartTS: ts})
		if err != nil {
			t.Fatal(err)
		}
		if ts >= s.LastGCSafePoint() { // session/stale_read.go's check
			accepted++
			time.Sleep(10 * time.Microsecond)
			if sp := s.LastGCSafePoint(); sp >= ts {
				t.Fatalf("GC safe point %d reached the start ts %d of an open, accepted transaction", sp, ts)
			}
		}
		tx.Rollback()
	}
	t.Logf("%d stale transactions accepted", accepted)
}

// Concurrent callers of the oracle get distinct timestamps, each below a
// high-water mark already on disk when it is returned.
func TestOracleConcurrent(t *testing.T) {
	dir := t.TempDir()
	o, err := openOracle(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Before TempDir's removal: the mark may still be moving ahead in the
	// background (raiseAhead).
	t.Cleanup(o.close)
	// A clock that moves 100 ms every 16 readings: timestamps of one ms
	// share it (the logical counter counts them), and the 3 s window is
	// crossed every 480 readings.
	var readings atomic.Int64
	base := time.Now().UnixMilli()
	o.now = func() time.Time { return time.UnixMilli(base + readings.Add(1)/16*100) }
	const workers, each = 8, 2000
	got := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ts, err := o.next()
				if err != nil {
					t.Error(err)
					return
				}
				b, err := os.ReadFile(filepath.Join(dir, oracleFile))
				if err != nil {
					t.Error(err)
					return
				}
				if mark := int64(binary.BigEndian.Uint64(b)); tso.PhysicalMs(ts) >= mark {
					t.Errorf("timestamp %d (ms %d) not below the mark on disk, %d", ts, tso.PhysicalMs(ts), mark)
					return
				}
				if n := len(got[w]); n > 0 && ts <= got[w][n-1] {
					t.Errorf("timestamp %d after %d", ts, got[w][n-1])
					return
				}
				got[w] = append(got[w], ts)
			}
		})
	}
	wg.Wait()
	seen := make(map[uint64]bool)
	for _, tss := range got {
		for _, ts := range tss {
			if seen[ts] {
				t.Fatalf("timestamp %d issued twice", ts)
			}
			seen[ts] = true
		}
	}
}
