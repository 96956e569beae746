package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/kv/kvtest"
	"github.com/cockroachdb/datadriven"
)

// TestTxn runs the scripts in testdata/txn_*: transactions through the
// kv.Txn interface on a real store in a temporary directory. Commands:
//
//	begin t=NAME [optimistic]
//	set t=NAME k=K v=V | insert t=NAME k=K v=V | delete t=NAME k=K
//	get t=NAME k=K
//	batch-get t=NAME keys=(K,...)
//	scan t=NAME [start=K] [end=K] [reverse]
//	lock t=NAME keys=(K,...) [nowait]   (for-update ts: a fresh timestamp)
//	commit t=NAME | rollback t=NAME
//	reopen                              close and reopen the store
//
// Values: Go-quoted strings where needed; "x*N" is N x's.
func TestTxn(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasPrefix(path[strings.LastIndex(path, "/")+1:], "txn_") {
			t.Skip()
		}
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { s.Close() }()
		txns := map[string]kv.Txn{}
		ctx := context.Background()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			arg := func(key string) []byte {
				a, ok := td.Arg(key)
				if !ok {
					t.Fatalf("%s: missing %s=", td.Pos, key)
				}
				return kvtest.Parse(t, a.SingleVal(t))
			}
			keys := func() [][]byte {
				a, _ := td.Arg("keys")
				var ks [][]byte
				for _, v := range a.Vals {
					ks = append(ks, kvtest.Parse(t, v))
				}
				return ks
			}
			tx := func() kv.Txn {
				a, _ := td.Arg("t")
				x, ok := txns[a.SingleVal(t)]
				if !ok {
					t.Fatalf("%s: no txn %s", td.Pos, a.SingleVal(t))
				}
				return x
			}
			switch td.Cmd {
			case "begin":
				mode := kv.Pessimistic
				if td.HasArg("optimistic") {
					mode = kv.Optimistic
				}
				x, err := s.Begin(kv.TxnOptions{Mode: mode})
				if err != nil {
					return errString(err)
				}
				a, _ := td.Arg("t")
				txns[a.SingleVal(t)] = x
				return "ok"
			case "set":
				return errString(tx().Set(arg("k"), arg("v")))
			case "insert":
				return errString(tx().Insert(arg("k"), arg("v")))
			case "delete":
				return errString(tx().Delete(arg("k")))
			case "get":
				v, err := tx().Get(ctx, arg("k"))
				if err != nil {
					return errString(err)
				}
				return kvtest.Format(v)
			case "batch-get":
				m, err := tx().BatchGet(ctx, keys())
				if err != nil {
					return errString(err)
				}
				var b strings.Builder
				for _, k := range keys() {
					if v, ok := m[string(k)]; ok {
						fmt.Fprintf(&b, "%s=%s\n", kvtest.Format(k), kvtest.Format(v))
					}
				}
				return b.String()
			case "scan":
				var start, end []byte
				if td.HasArg("start") {
					start = arg("start")
				}
				if td.HasArg("end") {
					end = arg("end")
				}
				var it kv.Iterator
				var err error
				if td.HasArg("reverse") {
					it, err = tx().IterReverse(start, end)
				} else {
					it, err = tx().Iter(start, end)
				}
				if err != nil {
					return errString(err)
				}
				defer it.Close()
				var b strings.Builder
				for it.Valid() {
					fmt.Fprintf(&b, "%s=%s\n", kvtest.Format(it.Key()), kvtest.Format(it.Value()))
					if err := it.Next(); err != nil {
						return b.String() + errString(err)
					}
				}
				if b.Len() == 0 {
					return "(empty)"
				}
				return b.String()
			case "lock":
				ts, err := s.CurrentTS()
				if err != nil {
					t.Fatal(err)
				}
				wait := 100 * time.Millisecond
				if td.HasArg("nowait") {
					wait = 0
				}
				return errString(tx().LockKeys(ctx, ts, wait, keys()...))
			case "commit":
				return errString(tx().Commit(ctx))
			case "rollback":
				return errString(tx().Rollback())
			case "reopen":
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if s, err = Open(dir, Options{}); err != nil {
					t.Fatal(err)
				}
				return "ok"
			}
			t.Fatalf("%s: unknown command %s", td.Pos, td.Cmd)
			return ""
		})
	})
}

func errString(err error) string {
	var wc *kv.WriteConflictError
	var ke *kv.KeyExistsError
	var tl *kv.EntryTooLargeError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, kv.ErrNotFound):
		return "not found"
	case errors.As(err, &wc):
		return fmt.Sprintf("error: write conflict on %s", kvtest.Format(wc.Key))
	case errors.As(err, &ke):
		return fmt.Sprintf("error: key %s exists", kvtest.Format(ke.Key))
	case errors.As(err, &tl):
		return fmt.Sprintf("error: %s of %d bytes too large (limit %d)", tl.What, tl.Size, tl.Limit)
	case errors.Is(err, kv.ErrLockWaitTimeout):
		return "error: lock wait timeout"
	case errors.Is(err, kv.ErrDeadlock):
		return "error: deadlock"
	case errors.Is(err, kv.ErrEmptyKey):
		return "error: empty key"
	case errors.Is(err, kv.ErrTxnClosed):
		return "error: txn closed"
	}
	return "error: " + err.Error()
}
