package local

import (
	"context"
	"fmt"
	"testing"

	"github.com/basalt-db/basalt/kv"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// failWrites fails every filesystem operation that writes.
func failWrites(op errorfs.Op) error {
	if op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
		return errorfs.ErrInjected
	}
	return nil
}

// When the disk fails under a commit, the commit is not acknowledged: Commit
// fails (today by panicking, see store/pebble's Engine.Write; the server
// turns that into an error for the client and closes the connection).
// Every commit acknowledged before the fault is there after a restart.
func TestDiskFaultFailsCommit(t *testing.T) {
	dir := t.TempDir()
	disk := &errorfs.Toggle{Injector: errorfs.InjectorFunc(failWrites)}
	s, err := Open(dir, Options{FS: errorfs.Wrap(vfs.Default, disk)})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, "a", "1", "b", "1")
	mustCommit(t, s, "b", "2")

	disk.On()
	for i, k := range []string{"b", "c", "a"} {
		txn, err := s.Begin(kv.TxnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := txn.Set([]byte(k), []byte("lost")); err != nil {
			t.Fatal(err)
		}
		err = commitOrPanic(txn)
		if err == nil {
			t.Fatalf("commit %d on a failing disk succeeded", i)
		}
		t.Logf("commit %d on a failing disk: %v", i, err)
	}
	if err := s.Close(); err != nil {
		t.Logf("close on a failing disk: %v", err)
	}
	disk.Off()

	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap := s.Snapshot(mustTS(t, s))
	for k, want := range map[string]string{"a": "1", "b": "2"} {
		if v, err := snap.Get(context.Background(), []byte(k)); err != nil || string(v) != want {
			t.Errorf("after restart %s = %q, %v; want %q, acknowledged before the fault", k, v, err, want)
		}
	}
	mustCommit(t, s, "c", "3")
}

// commitOrPanic commits txn, turning a panic into an error: Pebble treats a
// failed WAL write as fatal (Logger.Fatalf), and the store's logger panics.
func commitOrPanic(txn kv.Txn) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return txn.Commit(context.Background())
}
