package storenode

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"github.com/pingcap/log"
	"go.uber.org/zap"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/tikv"
)

// TestServiceReadStream: the SQL node's storage (store/tikv) over a
// storage node with client-go's batching on (the default) reads keys and
// ranges on its own read stream (store/tikv/readconn.go) and reads what
// was committed: a present key, an absent key, a range, at the newest
// version and at a timestamp, and a key written after the timestamp is
// not seen at it.
func TestServiceReadStream(t *testing.T) {
	log.SetLevel(zap.FatalLevel)
	pdAddr := startPD(t)
	rs := oneRegion(t)
	pdc := newPDClient([]string{pdAddr})
	t.Cleanup(pdc.close)
	storeAddr, calls, _ := serveStore(t, rs, func(s *Service) { s.TSO = pdc.tso })
	bootstrap(t, pdAddr, storeAddr)
	st, err := tikv.Open([]string{pdAddr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key := func(i int) []byte { return fmt.Appendf(nil, "rs%03d", i) }
	write := func(from, to int, v string) {
		t.Helper()
		txn, err := st.Begin(kv.TxnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := from; i < to; i++ {
			if err := txn.Set(key(i), []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 50, "a")
	ts, err := st.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	write(50, 60, "b")

	ctx := context.Background()
	// The read stream is made at the first read, in the background: reads
	// go through client-go until it is there.
	for deadline := time.Now().Add(10 * time.Second); st.StreamReads() == 0; time.Sleep(10 * time.Millisecond) {
		if v, err := st.LatestSnapshot().Get(ctx, key(1)); err != nil || string(v) != "a" {
			t.Fatalf("get: %q, %v", v, err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no read on the read stream")
		}
	}
	n := st.StreamReads()
	if v, err := st.LatestSnapshot().Get(ctx, key(55)); err != nil || string(v) != "b" {
		t.Fatalf("newest get: %q, %v", v, err)
	}
	if v, err := st.Snapshot(ts).Get(ctx, key(55)); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("get at ts of a key written after it: %q, %v", v, err)
	}
	if v, err := st.Snapshot(ts).Get(ctx, key(7)); err != nil || string(v) != "a" {
		t.Fatalf("get at ts: %q, %v", v, err)
	}
	it, err := st.Snapshot(ts).Iter(key(10), key(70))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for ; it.Valid(); rows++ {
		if want := key(10 + rows); string(it.Key()) != string(want) || string(it.Value()) != "a" {
			t.Fatalf("row %d: %q=%q, want %q=a", rows, it.Key(), it.Value(), want)
		}
		if err := it.Next(); err != nil {
			t.Fatal(err)
		}
	}
	it.Close()
	if rows != 40 {
		t.Fatalf("%d rows at ts, want 40", rows)
	}
	if got := st.StreamReads() - n; got != 4 {
		t.Fatalf("%d reads on the read stream, want 4 (three gets and a scan)", got)
	}

	// A lock in the range: the scan's answer on the stream has it, and
	// client-go's scanner reads the range at once (resolving the lock),
	// without a second Scan of firstBatch's own through client-go's sender
	// (which would get the same lock).
	lockTS, err := st.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	pw, err := tikvpb.NewTikvClient(dial(t, storeAddr)).KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: regionCtx(),
		PrimaryLock: key(20), StartVersion: lockTS, LockTtl: 1, MinCommitTs: lockTS + 1, TxnSize: 1,
		Mutations: []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: key(20), Value: []byte("locked")}}})
	if err != nil || pw.GetRegionError() != nil || len(pw.GetErrors()) > 0 {
		t.Fatalf("prewrite: %v, %v", pw, err)
	}
	time.Sleep(50 * time.Millisecond) // past the lock's TTL
	scans := func() int {
		n := calls.snapshot()
		return n["BatchScan"] + n["KvScan"]
	}
	before := scans()
	readTS, err := st.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	it, err = st.Snapshot(readTS).Iter(key(10), key(70))
	if err != nil {
		t.Fatal(err)
	}
	for rows = 0; it.Valid(); rows++ {
		if err := it.Next(); err != nil {
			t.Fatal(err)
		}
	}
	it.Close()
	if rows != 50 {
		t.Fatalf("%d rows past a lock, want 50", rows)
	}
	// One on the stream, two of client-go's scanner (the lock, then the
	// range once the lock is rolled back).
	if got := scans() - before; got > 3 {
		t.Fatalf("%d Scans of a range with a lock, want at most 3", got)
	}
}
