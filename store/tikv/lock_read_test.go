package tikv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	tikvclient "github.com/tikv/client-go/v2/tikv"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/tikv"
)

// TestLockRead runs testdata/lock_read on client-go's mock cluster: a
// pessimistic transaction's locking reads (a DML statement's point get
// locks its key, then reads it at the lock's forUpdateTS), how many RPCs
// they send, and what they read. The commands:
//
//	commit k=v ...            a transaction through the storage (v "-":
//	                          delete k)
//	begin                     open a pessimistic transaction
//	lock k ... [fresh]        lock the keys at the transaction's newest
//	                          forUpdateTS (its start, or with fresh a new
//	                          timestamp, which becomes the newest)
//	read k ... [start]        read the keys (Get for one, BatchGet for
//	                          more) at the newest forUpdateTS, or at the
//	                          start timestamp (a plain read)
//	set k=v ...               buffer writes in the open transaction
//	rollback                  end it
//
// lock and read report the PessimisticLock and the Get/BatchGet RPCs
// they sent.
func TestLockRead(t *testing.T) {
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	datadriven.Walk(t, "testdata/lock_read", func(t *testing.T, path string) {
		counter := &rpcCounter{}
		st, err := tikv.OpenMockWrapped(func(c tikvclient.Client) tikvclient.Client {
			counter.Client = c
			return counter
		})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ctx := context.Background()
		var txn kv.Txn
		var forUpdateTS uint64
		defer func() {
			if txn != nil {
				txn.Rollback()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			var keys [][]byte
			for _, a := range td.CmdArgs {
				if a.Key != "fresh" && a.Key != "start" {
					keys = append(keys, []byte(a.Key))
				}
			}
			switch td.Cmd {
			case "commit", "set":
				w := txn
				if td.Cmd == "commit" {
					if w, err = st.Begin(kv.TxnOptions{Mode: kv.Optimistic}); err != nil {
						t.Fatal(err)
					}
				}
				writeArgs(t, w, td.CmdArgs)
				if td.Cmd == "commit" {
					if err := w.Commit(ctx); err != nil {
						return "error: " + err.Error()
					}
				}
				return "ok"
			case "begin":
				if txn, err = st.Begin(kv.TxnOptions{Mode: kv.Pessimistic}); err != nil {
					t.Fatal(err)
				}
				forUpdateTS = txn.StartTS()
				return "ok"
			case "rollback":
				err := txn.Rollback()
				txn = nil
				if err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "lock":
				if td.HasArg("fresh") {
					if forUpdateTS, err = st.CurrentTS(); err != nil {
						t.Fatal(err)
					}
				}
				locks := counter.locks.Load()
				out := "ok"
				if err := txn.LockKeys(ctx, forUpdateTS, 0, keys...); err != nil {
					out = "error: " + err.Error()
					if errors.Is(err, kv.ErrWriteConflict) {
						out = "write conflict"
					}
				}
				return fmt.Sprintf("%s, PessimisticLock RPCs: %d", out, counter.locks.Load()-locks)
			case "read":
				ts := forUpdateTS
				if td.HasArg("start") {
					ts = txn.StartTS()
				}
				r := txn.ReaderAt(ts)
				gets := counter.reads()
				var b strings.Builder
				if len(keys) == 1 {
					v, err := r.Get(ctx, keys[0])
					switch {
					case errors.Is(err, kv.ErrNotFound):
						fmt.Fprintf(&b, "%s: not found\n", keys[0])
					case err != nil:
						b.WriteString("error: " + err.Error() + "\n")
					default:
						fmt.Fprintf(&b, "%s: %q\n", keys[0], v)
					}
				} else {
					got, err := r.BatchGet(ctx, keys)
					if err != nil {
						b.WriteString("error: " + err.Error() + "\n")
					}
					names := make([]string, 0, len(got))
					for k := range got {
						names = append(names, k)
					}
					slices.Sort(names)
					for _, k := range names {
						fmt.Fprintf(&b, "%s: %q\n", k, got[k])
					}
				}
				fmt.Fprintf(&b, "Get RPCs: %d", counter.reads()-gets)
				return b.String()
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}

// writeArgs buffers the writes k=v ... in w (v "-": delete k).
func writeArgs(t *testing.T, w kv.Txn, args []datadriven.CmdArg) {
	t.Helper()
	for _, a := range args {
		var err error
		if a.Vals[0] == "-" {
			err = w.Delete([]byte(a.Key))
		} else {
			err = w.Set([]byte(a.Key), []byte(a.Vals[0]))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
