package server

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConnYieldsBetweenCommands checks that a connection whose next
// commands are already waiting in its socket still lets the other runnable
// goroutines run once it has held its processor for yieldQuantum, as a
// thread per connection would be time-sliced: with one processor and
// commands that each take longer than the quantum, a goroutine that spins
// (and yields) beside it must move on between most pairs of consecutive
// commands.
func TestConnYieldsBetweenCommands(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ts := startServer(t, Config{})
	c, err := dialRaw(ts.addr, "root", "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()

	const n = 100
	var spins atomic.Int64
	var mu sync.Mutex
	seen := make([]int64, 0, n) // spins at the start of each query
	onQuery := func() {
		mu.Lock()
		seen = append(seen, spins.Load())
		mu.Unlock()
		for start := time.Now(); time.Since(start) < yieldQuantum+50*time.Microsecond; {
		}
	}
	ts.drv.onQuery.Store(&onQuery)
	stop := make(chan struct{})
	spun := make(chan struct{})
	go func() {
		defer close(spun)
		for {
			select {
			case <-stop:
				return
			default:
			}
			spins.Add(1)
			runtime.Gosched()
		}
	}()

	// Every command in one write, so that the connection never waits for
	// its next one.
	var batch []byte
	for range n {
		q := append([]byte{comQuery}, "select 1"...)
		batch = append(batch, byte(len(q)), byte(len(q)>>8), byte(len(q)>>16), 0)
		batch = append(batch, q...)
	}
	if _, err := c.nc.Write(batch); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c.seq = 1 // the response to a command that was sent with 0
		if got := c.readResults(false); len(got) == 0 || got[len(got)-1] == "" {
			t.Fatalf("command %d: %q", i, got)
		}
	}
	close(stop)
	<-spun
	ts.drv.onQuery.Store(nil)
	mu.Lock()
	defer mu.Unlock()

	if len(seen) != n {
		t.Fatalf("%d queries seen, want %d", len(seen), n)
	}
	moved := 0
	for i := 1; i < n; i++ {
		if seen[i] > seen[i-1] {
			moved++
		}
	}
	if moved < (n-1)*3/4 {
		t.Errorf("the other goroutine ran between %d of %d pairs of consecutive commands, want most", moved, n-1)
	}
}
