package pd

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/tso"
)

// fakeOracle is an oracle serving with an etcd of its own: put records
// the window end, after waiting for block (if not nil) to be closed.
func fakeOracle(saved int64, block chan struct{}, stored *atomic.Int64) *oracle {
	t := &oracle{s: &Server{ctx: context.Background()}}
	stored.Store(saved)
	t.put = func(ctx context.Context, end int64) error {
		if block != nil {
			<-block
		}
		for {
			old := stored.Load()
			if end <= old || stored.CompareAndSwap(old, end) {
				return nil
			}
		}
	}
	t.physical, t.saved, t.serving = nowMs(), saved, true
	return t
}

// TestTSONoWaitForWindowSave: a timestamp request does not wait for the
// next window's save while the saved one has room. The oracle saves the
// next window tsoSaveAhead before the saved one ends, without holding
// the lock requests take; when it saved with the physical time at the
// window's end, under that lock, every request waited for etcd's write
// and sync (fails so: "next waited for the window's save").
func TestTSONoWaitForWindowSave(t *testing.T) {
	var stored atomic.Int64
	block := make(chan struct{})
	now := nowMs()
	o := fakeOracle(now+tsoSaveAhead.Milliseconds()/2, block, &stored)
	updated := make(chan error, 1)
	go func() { updated <- o.update() }()
	time.Sleep(50 * time.Millisecond) // update is in its save now
	got := make(chan uint64, 1)
	go func() {
		p, l, err := o.next(1)
		if err != nil {
			t.Error(err)
		}
		got <- tso.ComposeTS(p, l)
	}()
	select {
	case <-got:
	case <-time.After(time.Second):
		t.Fatal("next waited for the window's save")
	}
	close(block)
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	if s := stored.Load(); s < now+tsoSaveWindow.Milliseconds() {
		t.Fatalf("saved end %d, want >= %d", s, now+tsoSaveWindow.Milliseconds())
	}
}

// TestTSOWindowUnique: timestamps from many callers while the window is
// saved ahead again and again (a window of a few ms, the logical counter
// used up fast by large counts) are unique, increase per caller, and
// every physical time issued is below the end saved in "etcd".
func TestTSOWindowUnique(t *testing.T) {
	var stored atomic.Int64
	o := fakeOracle(nowMs()+5, nil, &stored)
	var mu sync.Mutex
	var issued [][2]uint64 // [first, last] of each request
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := o.update(); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for i := 0; i < 2000; i++ {
				count := uint32(1 + i%3*20000)
				p, l, err := o.next(count)
				if err != nil {
					t.Error(err)
					return
				}
				if p >= stored.Load() {
					t.Errorf("physical %d issued at or above the saved end %d", p, stored.Load())
					return
				}
				ts := tso.ComposeTS(p, l)
				if ts <= last {
					t.Errorf("timestamp %d after %d", ts, last)
					return
				}
				last = ts
				mu.Lock()
				issued = append(issued, [2]uint64{ts - uint64(count) + 1, ts})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	sort.Slice(issued, func(i, j int) bool { return issued[i][0] < issued[j][0] })
	for i := 1; i < len(issued); i++ {
		if issued[i][0] <= issued[i-1][1] {
			t.Fatalf("timestamps %v and %v overlap", issued[i-1], issued[i])
		}
	}
}
