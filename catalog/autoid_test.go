package catalog

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/local"
)

// Auto-increment values never repeat, across explicit values (rebase) and
// restarts.
func TestAutoIDNeverRepeats(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	tbl := &TableInfo{ID: 100, Name: "t"}
	seen := map[int64]bool{}
	take := func(c *Catalog, n int) {
		for range n {
			v, err := c.AllocAutoID(ctx, tbl, 1)
			if err != nil {
				t.Fatal(err)
			}
			if seen[v] {
				t.Fatalf("auto-increment value %d handed out twice", v)
			}
			seen[v] = true
		}
	}
	for restart := range 3 {
		st, err := local.Open(dir, local.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Open(st)
		if err != nil {
			t.Fatal(err)
		}
		// An explicit value below what was handed out before the restart
		// must not rewind the counter.
		if err := c.RebaseAutoID(ctx, tbl, int64(10*restart+5)); err != nil {
			t.Fatal(err)
		}
		take(c, 1500)
		// An explicit value above moves the next value past it.
		hi := int64(100000 * (restart + 1))
		if err := c.RebaseAutoID(ctx, tbl, hi); err != nil {
			t.Fatal(err)
		}
		seen[hi] = true
		v, err := c.AllocAutoID(ctx, tbl, 1)
		if err != nil {
			t.Fatal(err)
		}
		if v <= hi || seen[v] {
			t.Fatalf("after rebase to %d got %d", hi, v)
		}
		seen[v] = true
		st.Close()
	}
}

// gatedStore counts the transactions begun (each reservation is one) and,
// while gate is set, holds every Begin until gate is closed.
type gatedStore struct {
	kv.Storage
	begins atomic.Int64
	mu     sync.Mutex
	gate   chan struct{}
	held   chan struct{} // gets a value each time a Begin is held
}

func (s *gatedStore) Begin(opts kv.TxnOptions) (kv.Txn, error) {
	s.begins.Add(1)
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g != nil {
		s.held <- struct{}{}
		<-g
	}
	return s.Storage.Begin(opts)
}

// close the gate: Begins wait from now on until the returned open.
func (s *gatedStore) close() (open func()) {
	g := make(chan struct{})
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.gate = nil
			s.mu.Unlock()
			close(g)
		})
	}
}

// waitHeld waits for a Begin to be held at the gate.
func (s *gatedStore) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-s.held:
	case <-time.After(5 * time.Second):
		t.Fatal("no reservation began")
	}
}

func openGated(t *testing.T) (*Catalog, *gatedStore) {
	t.Helper()
	st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	gs := &gatedStore{Storage: st, held: make(chan struct{}, 16)}
	c, err := Open(gs)
	if err != nil {
		t.Fatal(err)
	}
	return c, gs
}

// alloc takes one value (safe in any goroutine: an error fails t and
// returns -1).
func alloc(t *testing.T, c *Catalog, tbl *TableInfo) int64 {
	t.Helper()
	v, err := c.AllocAutoID(context.Background(), tbl, 1)
	if err != nil {
		t.Error(err)
		return -1
	}
	return v
}

// A reservation for one table (a transaction that commits and syncs)
// does not hold up the allocations of another: each table has its own
// allocator.
func TestAutoIDTablesNotSerialized(t *testing.T) {
	c, gs := openGated(t)
	a, b := &TableInfo{ID: 100, Name: "a"}, &TableInfo{ID: 101, Name: "b"}
	if v := alloc(t, c, b); v != 1 {
		t.Fatalf("first value of b: %d", v)
	}
	open := gs.close()
	defer open()
	got := make(chan int64, 1)
	go func() { got <- alloc(t, c, a) }() // reserves: held
	gs.waitHeld(t)
	done := make(chan int64, 1)
	go func() { done <- alloc(t, c, b) }()
	select {
	case v := <-done:
		if v != 2 {
			t.Fatalf("second value of b: %d", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("allocating for table b waited for table a's reservation")
	}
	open()
	if v := <-got; v != 1 {
		t.Fatalf("first value of a: %d", v)
	}
}

// The next batch is reserved before the current one runs out, so the
// allocation that would have found the batch empty does not reserve; and
// while that reservation is under way the other allocations go on.
func TestAutoIDReservesAhead(t *testing.T) {
	c, gs := openGated(t)
	tbl := &TableInfo{ID: 100, Name: "t"}
	want := int64(1)
	for ; want <= autoIDBatch-autoIDRefill; want++ {
		if v := alloc(t, c, tbl); v != want {
			t.Fatalf("got %d, want %d", v, want)
		}
	}
	// The next allocation starts the spare's reservation: hold it, and
	// take the rest of the batch meanwhile.
	before := gs.begins.Load()
	open := gs.close()
	first := make(chan int64, 1)
	go func() { first <- alloc(t, c, tbl) }()
	gs.waitHeld(t)
	for want++; want <= autoIDBatch; want++ {
		done := make(chan int64, 1)
		go func() { done <- alloc(t, c, tbl) }()
		select {
		case v := <-done:
			if v != want {
				t.Fatalf("got %d, want %d", v, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("allocation %d waited for the spare's reservation", want)
		}
	}
	open()
	if v := <-first; v != autoIDBatch-autoIDRefill+1 {
		t.Fatalf("the allocation that reserved got %d", v)
	}
	if n := gs.begins.Load() - before; n != 1 {
		t.Fatalf("%d reservations for the spare, want 1", n)
	}
	// The batch is used up: the next values come from the spare, with no
	// reservation.
	before = gs.begins.Load()
	if v := alloc(t, c, tbl); v != autoIDBatch+1 {
		t.Fatalf("first value after the batch: %d", v)
	}
	if n := gs.begins.Load() - before; n != 0 {
		t.Fatalf("taking the spare reserved %d times", n)
	}
}

// Two nodes on one store, many sessions each, explicit values among them:
// no generated value is handed out twice, and each session's values
// increase (a node hands out its values in order).
func TestAutoIDConcurrentNodes(t *testing.T) {
	nodes := twoNodes(t)
	tables := []*TableInfo{{ID: 100, Name: "a"}, {ID: 101, Name: "b"}}
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[[2]int64]bool{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := nodes[g%2]
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			last := map[int64]int64{}
			for i := range 3000 {
				tbl := tables[rng.IntN(2)]
				if i%500 == 499 {
					// An explicit value, ahead of what is handed out.
					if err := c.RebaseAutoID(ctx, tbl, last[tbl.ID]+int64(rng.IntN(3000))); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				v, err := c.AllocAutoID(ctx, tbl, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if v <= last[tbl.ID] {
					t.Errorf("session %d, table %d: %d after %d", g, tbl.ID, v, last[tbl.ID])
					return
				}
				last[tbl.ID] = v
				mu.Lock()
				k := [2]int64{tbl.ID, v}
				if seen[k] {
					t.Errorf("table %d: %d handed out twice", tbl.ID, v)
				}
				seen[k] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// With AUTO_ID_CACHE 1 the values are consecutive across nodes, in the
// order they are handed out.
func TestAutoIDCacheOneConsecutive(t *testing.T) {
	nodes := twoNodes(t)
	tbl := &TableInfo{ID: 100, Name: "t", AutoIDCache: 1}
	for want := int64(1); want <= 2*autoIDBatch; want++ {
		if v := alloc(t, nodes[want%2], tbl); v != want {
			t.Fatalf("got %d, want %d", v, want)
		}
	}
	if err := nodes[0].RebaseAutoID(context.Background(), tbl, 5000); err != nil {
		t.Fatal(err)
	}
	if v := alloc(t, nodes[1], tbl); v != 5001 {
		t.Fatalf("after an explicit 5000 on the other node: %d", v)
	}
}

// An explicit value moves the next one past it: inside the current
// range, inside the spare, and beyond both.
func TestAutoIDRebase(t *testing.T) {
	c, gs := openGated(t)
	tbl := &TableInfo{ID: 100, Name: "t"}
	ctx := context.Background()
	rebase := func(v int64) {
		t.Helper()
		if err := c.RebaseAutoID(ctx, tbl, v); err != nil {
			t.Fatal(err)
		}
	}
	rebase(10) // nothing reserved yet
	if v := alloc(t, c, tbl); v != 11 {
		t.Fatalf("after 10: %d", v)
	}
	rebase(5) // below: no change
	if v := alloc(t, c, tbl); v != 12 {
		t.Fatalf("after 5: %d", v)
	}
	rebase(600) // inside the range; past the refill mark, so the spare is reserved
	if v := alloc(t, c, tbl); v != 601 {
		t.Fatalf("after 600: %d", v)
	}
	// The range is (10, 1010], the spare (1010, 2010].
	before := gs.begins.Load()
	rebase(1500)
	if v := alloc(t, c, tbl); v != 1501 {
		t.Fatalf("after 1500: %d", v)
	}
	if n := gs.begins.Load() - before; n != 0 {
		t.Fatalf("a value inside the spare reserved %d times", n)
	}
	rebase(50000)
	if v := alloc(t, c, tbl); v != 50001 {
		t.Fatalf("after 50000: %d", v)
	}
}

// BenchmarkAllocAutoID takes values of 4 tables from parallel sessions on
// a store that syncs its commits (a reservation waits for its WAL sync,
// as on a server).
func BenchmarkAllocAutoID(b *testing.B) {
	st, err := local.Open(b.TempDir(), local.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	c, err := Open(st)
	if err != nil {
		b.Fatal(err)
	}
	tables := []*TableInfo{{ID: 100, Name: "a"}, {ID: 101, Name: "b"}, {ID: 102, Name: "c"}, {ID: 103, Name: "d"}}
	var next atomic.Int64
	ctx := context.Background()
	b.SetParallelism(4) // 4 x GOMAXPROCS sessions
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		tbl := tables[next.Add(1)%4]
		for pb.Next() {
			if _, err := c.AllocAutoID(ctx, tbl, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// twoNodes opens two catalogs, as two SQL nodes would, on one fresh store
// that is closed when the test ends.
func twoNodes(t *testing.T) [2]*Catalog {
	t.Helper()
	st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var nodes [2]*Catalog
	for i := range nodes {
		if nodes[i], err = Open(st); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}
