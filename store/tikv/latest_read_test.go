package tikv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/tikv/client-go/v2/testutils"
	tikvclient "github.com/tikv/client-go/v2/tikv"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/tikv"
)

// TestLatestRead runs testdata/latest_read on client-go's mock cluster:
// what a read of the newest versions (LatestSnapshot) answers next to a
// read at a fresh timestamp, with the locks a transaction leaves between
// its prewrite and its commit. The commands:
//
//	commit k=v ...               a transaction through the storage
//	prewrite primary=K k=v ...   a transaction's prewrite, straight on the
//	                             mock (its locks, with a TTL of a minute);
//	                             the transaction stays open
//	commit-primary               the open transaction's commit of its
//	                             primary key alone, as a client that died
//	                             after it leaves it
//	get k=K                      the key read at the newest versions
//	                             (latest), then at a fresh timestamp (now)
//
// A read that waits for a lock would wait for its TTL: every read is
// bounded by 5 s.
func TestLatestRead(t *testing.T) {
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	datadriven.Walk(t, "testdata/latest_read", func(t *testing.T, path string) {
		var mock testutils.MVCCStore
		st, err := tikv.OpenMockWrapped(func(c tikvclient.Client) tikvclient.Client {
			mock = c.(*testutils.MockClient).MvccStore
			return c
		})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var open mockTxn
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "commit":
				txn, err := st.Begin(kv.TxnOptions{Mode: kv.Optimistic})
				if err != nil {
					t.Fatal(err)
				}
				writeArgs(t, txn, td.CmdArgs)
				if err := txn.Commit(context.Background()); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "prewrite":
				return open.prewrite(t, st, mock, td)
			case "commit-primary":
				return open.commitPrimary(t, st, mock)
			case "get":
				var k string
				td.ScanArgs(t, "k", &k)
				// The newest versions first: a lock the read at a
				// timestamp resolves would be gone for it.
				latest := read(st.LatestSnapshot(), k)
				ts, err := st.CurrentTS()
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprintf("latest: %s\nnow: %s", latest, read(st.Snapshot(ts), k))
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}

// read is the value of k in snap, or what kept it from being read.
func read(snap kv.Snapshot, k string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := snap.Get(ctx, []byte(k))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return "not found"
	case ctx.Err() != nil:
		return "timed out (waited for a lock)"
	case err != nil:
		return "error: " + strings.SplitN(err.Error(), "\n", 2)[0]
	}
	return string(v)
}

// mockTxn is a transaction a test script writes straight to the mock's
// MVCC store: "prewrite k=v ... primary=k" leaves its locks, and
// "commit-primary" commits its primary only (its secondaries stay locked
// for a reader to resolve).
type mockTxn struct {
	startTS uint64
	primary []byte
}

func (o *mockTxn) prewrite(t *testing.T, st *tikv.Storage, mock testutils.MVCCStore, td *datadriven.TestData) string {
	ts, err := st.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	// client-go's prewrites carry a min commit ts, which a reader at a
	// timestamp pushes past its own to pass.
	req := &kvrpcpb.PrewriteRequest{StartVersion: ts, MinCommitTs: ts + 1, LockTtl: uint64(time.Minute.Milliseconds())}
	for _, a := range td.CmdArgs {
		if a.Key == "primary" {
			req.PrimaryLock = []byte(a.Vals[0])
			continue
		}
		req.Mutations = append(req.Mutations, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: []byte(a.Key), Value: []byte(a.Vals[0])})
	}
	for _, err := range mock.Prewrite(req) {
		if err != nil {
			return "error: " + err.Error()
		}
	}
	o.startTS, o.primary = ts, req.PrimaryLock
	return "ok"
}

func (o *mockTxn) commitPrimary(t *testing.T, st *tikv.Storage, mock testutils.MVCCStore) string {
	ts, err := st.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	if err := mock.Commit([][]byte{o.primary}, o.startTS, ts); err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}
