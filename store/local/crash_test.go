package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// The crash test: a child process commits numbered transactions of four
// keys each (plus one contended "slot" key under a pessimistic lock) from
// several goroutines and prints "ack N" once Commit(N) returns. The parent
// kills it with SIGKILL at a random moment, reopens the store, and checks
// that every acknowledged transaction is fully present and that no
// transaction is partly visible. Then it starts the next cycle on the same
// directory.

const (
	crashDirEnv  = "BASALT_CRASH_DIR"
	crashBaseEnv = "BASALT_CRASH_BASE"
	crashKeys    = 4
	crashSlots   = 8
	crashWriters = 4
)

func TestCrashRecovery(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		t.Skip("running as the crash writer")
	}
	cycles := 20
	if testing.Short() {
		cycles = 5
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	totalAcked := 0
	for c := range cycles {
		acked := runCrashWriter(t, dir, c*1_000_000, time.Duration(rng.IntN(400))*time.Millisecond)
		totalAcked += len(acked)
		verifyCrashState(t, dir, acked)
	}
	t.Logf("%d cycles, %d acknowledged transactions, all present and none partial", cycles, totalAcked)
	if totalAcked == 0 {
		t.Fatal("the writer never acknowledged a transaction")
	}
}

// runCrashWriter runs the child until it has acknowledged something and
// then for killAfter more, kills it, and returns the ids it acknowledged.
func runCrashWriter(t *testing.T, dir string, base int, killAfter time.Duration) []int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriterProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashBaseEnv+"="+strconv.Itoa(base))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked []int
		first = make(chan struct{})
		once  sync.Once
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
				id, err := strconv.Atoi(s)
				if err == nil {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
					once.Do(func() { close(first) })
				}
			}
		}
	}()
	select {
	case <-first:
	case <-done:
	case <-time.After(20 * time.Second):
	}
	time.Sleep(killAfter)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	<-done
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("writer did not die by SIGKILL: %v\nstderr:\n%s", err, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return acked
}

func verifyCrashState(t *testing.T, dir string, acked []int) {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	snap := s.Snapshot(mustTS(t, s))
	// Group every transaction key by id.
	present := map[int]int{}
	it, err := snap.Iter([]byte("t/"), []byte("t0"))
	if err != nil {
		t.Fatal(err)
	}
	for it.Valid() {
		idStr, _, _ := strings.Cut(strings.TrimPrefix(string(it.Key()), "t/"), "/")
		id, err := strconv.Atoi(idStr)
		if err != nil || string(it.Value()) != idStr {
			t.Fatalf("bad key %q = %q", it.Key(), it.Value())
		}
		present[id]++
		if err := it.Next(); err != nil {
			t.Fatal(err)
		}
	}
	it.Close()
	for id, n := range present {
		if n != crashKeys {
			t.Fatalf("transaction %d is partly visible: %d of %d keys", id, n, crashKeys)
		}
	}
	for _, id := range acked {
		if present[id] != crashKeys {
			t.Fatalf("acknowledged transaction %d lost (%d of %d keys present)", id, present[id], crashKeys)
		}
	}
	for slot := range crashSlots {
		v, err := snap.Get(ctx, []byte(fmt.Sprintf("slot/%d", slot)))
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		id, err := strconv.Atoi(string(v))
		if err != nil || present[id] != crashKeys || id%crashSlots != slot {
			t.Fatalf("slot %d names transaction %q, which is not committed there", slot, v)
		}
	}
}

// TestCrashWriterProcess is the child of TestCrashRecovery; it does nothing
// unless started by it.
func TestCrashWriterProcess(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("only run as a child of TestCrashRecovery")
	}
	base, _ := strconv.Atoi(os.Getenv(crashBaseEnv))
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var next atomic.Int64
	next.Store(int64(base))
	var outMu sync.Mutex
	ctx := context.Background()
	var wg sync.WaitGroup
	for range crashWriters {
		wg.Go(func() {
			for {
				id := int(next.Add(1))
				err := writeCrashTxn(ctx, s, id)
				if errors.Is(err, kv.ErrDeadlock) || errors.Is(err, kv.ErrWriteConflict) {
					continue
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "txn:", err)
					os.Exit(3)
				}
				outMu.Lock()
				fmt.Fprintf(os.Stdout, "ack %d\n", id)
				outMu.Unlock()
			}
		})
	}
	wg.Wait()
}

func writeCrashTxn(ctx context.Context, s *Store, id int) error {
	txn, err := s.Begin(kv.TxnOptions{})
	if err != nil {
		return err
	}
	defer txn.Rollback()
	slot := []byte(fmt.Sprintf("slot/%d", id%crashSlots))
	ts, err := s.CurrentTS()
	if err != nil {
		return err
	}
	if err := txn.LockKeys(ctx, ts, 10*time.Second, slot); err != nil {
		return err
	}
	v := []byte(strconv.Itoa(id))
	for k := range crashKeys {
		if err := txn.Set([]byte(fmt.Sprintf("t/%d/%d", id, k)), v); err != nil {
			return err
		}
	}
	if err := txn.Set(slot, v); err != nil {
		return err
	}
	return txn.Commit(ctx)
}
