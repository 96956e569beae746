package kvtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/cockroachdb/datadriven"
)

// Harness gives the suite the storages it tests.
type Harness struct {
	// Open returns a new, empty storage. The suite closes it when the
	// script ends.
	Open func(t *testing.T) kv.Storage
	// Reopen, if not nil, closes s and returns a storage over the same
	// data, as after a restart: the "reopen" command. The suite's own
	// scripts do not use it; a store's scripts of its own may.
	Reopen func(t *testing.T, s kv.Storage) kv.Storage
}

// Run runs the suite's scripts (kv/kvtest/testdata, found beside this
// source file) on storages from open, a new one for each script. Every
// kv.Storage passes them.
func Run(t *testing.T, open func(t *testing.T) kv.Storage) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("kvtest: cannot find the suite's scripts")
	}
	RunFiles(t, filepath.Join(filepath.Dir(file), "testdata"), Harness{Open: open})
}

// RunFiles runs the scripts at path (a file, or a directory of them) as
// Run does, on storages from h. The scripts drive transactions through
// kv.Txn:
//
//	begin t=NAME [optimistic]
//	set t=NAME k=K v=V | insert t=NAME k=K v=V | delete t=NAME k=K
//	get t=NAME k=K
//	batch-get t=NAME keys=(K,...)
//	scan t=NAME [start=K] [end=K] [reverse]
//	lock t=NAME keys=(K,...) [nowait]   (for-update ts: a fresh timestamp;
//	                                     waits up to 100 ms, or not at all)
//	commit t=NAME | rollback t=NAME
//	reopen                              restart the storage (Harness.Reopen)
//
// Keys and values are written as Parse reads them; errors as errString
// names them. Rewrite expected output with -rewrite.
func RunFiles(t *testing.T, path string, h Harness) {
	datadriven.Walk(t, path, func(t *testing.T, path string) {
		r := &runner{h: h, s: h.Open(t), txns: map[string]kv.Txn{}}
		defer func() { r.s.Close() }()
		datadriven.RunTest(t, path, r.run)
	})
}

// runner runs one script.
type runner struct {
	h    Harness
	s    kv.Storage
	txns map[string]kv.Txn
}

func (r *runner) run(t *testing.T, td *datadriven.TestData) string {
	ctx := context.Background()
	arg := func(key string) []byte {
		a, ok := td.Arg(key)
		if !ok {
			t.Fatalf("%s: missing %s=", td.Pos, key)
		}
		return Parse(t, a.SingleVal(t))
	}
	keys := func() [][]byte {
		a, _ := td.Arg("keys")
		var ks [][]byte
		for _, v := range a.Vals {
			ks = append(ks, Parse(t, v))
		}
		return ks
	}
	tx := func() kv.Txn {
		a, _ := td.Arg("t")
		x, ok := r.txns[a.SingleVal(t)]
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
		x, err := r.s.Begin(kv.TxnOptions{Mode: mode})
		if err != nil {
			return errString(err)
		}
		a, _ := td.Arg("t")
		r.txns[a.SingleVal(t)] = x
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
		return Format(v)
	case "batch-get":
		m, err := tx().BatchGet(ctx, keys())
		if err != nil {
			return errString(err)
		}
		var b strings.Builder
		for _, k := range keys() {
			if v, ok := m[string(k)]; ok {
				fmt.Fprintf(&b, "%s=%s\n", Format(k), Format(v))
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
			fmt.Fprintf(&b, "%s=%s\n", Format(it.Key()), Format(it.Value()))
			if err := it.Next(); err != nil {
				return b.String() + errString(err)
			}
		}
		if b.Len() == 0 {
			return "(empty)"
		}
		return b.String()
	case "lock":
		ts, err := r.s.CurrentTS()
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
		if r.h.Reopen == nil {
			t.Fatalf("%s: reopen: this storage cannot restart", td.Pos)
		}
		r.s = r.h.Reopen(t, r.s)
		return "ok"
	}
	t.Fatalf("%s: unknown command %s", td.Pos, td.Cmd)
	return ""
}

// errString names err as the scripts expect it.
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
		return fmt.Sprintf("error: write conflict on %s", Format(wc.Key))
	case errors.As(err, &ke):
		return fmt.Sprintf("error: key %s exists", Format(ke.Key))
	case errors.As(err, &tl):
		return fmt.Sprintf("error: %s of %d bytes too large (limit %d)", tl.What, tl.Size, tl.Limit)
	case errors.Is(err, kv.ErrLockWaitTimeout):
		return "error: lock wait timeout"
	case errors.Is(err, kv.ErrDeadlock):
		return "error: deadlock"
	case errors.Is(err, kv.ErrEmptyKey):
		return "error: empty key"
	case errors.Is(err, kv.ErrEmptyValue):
		return "error: empty value"
	case errors.Is(err, kv.ErrTxnClosed):
		return "error: txn closed"
	}
	return "error: " + err.Error()
}
