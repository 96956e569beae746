package storenode

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/basalt-db/basalt/storenode/raftstore"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
)

// hookedEngine is an in-memory engine that a test can stop, as a region's
// replicated engine: a read first passes readGate (if set); a write is
// ordered at once (it is an mvcc.ProposingEngine, whose proposed hook
// stands for raft accepting the proposal) and then, while writes are
// held, waits to be let through before it applies; with fail set, a held
// write fails unapplied, as when the leader loses its leadership. Every
// applied write and every answer a test records goes to events, in order.
type hookedEngine struct {
	mvcc.Engine
	readGate atomic.Pointer[gate]

	mu      sync.Mutex
	hold    chan struct{} // non-nil: writes wait for it to close
	fail    bool
	events  []string
	ordered chan struct{} // a write was ordered and is held
}

func newHookedEngine() *hookedEngine {
	return &hookedEngine{Engine: mvcc.NewMemEngine(), ordered: make(chan struct{})}
}

func (e *hookedEngine) Get(cf mvcc.CF, key []byte) ([]byte, error) {
	e.read()
	return e.Engine.Get(cf, key)
}

func (e *hookedEngine) NewIter(cf mvcc.CF, lower, upper []byte) (mvcc.EngineIter, error) {
	e.read()
	return e.Engine.NewIter(cf, lower, upper)
}

func (e *hookedEngine) read() {
	if g := e.readGate.Load(); g != nil {
		g.pass()
	}
}

func (e *hookedEngine) Write(b *mvcc.Batch, sync bool) error { return e.WriteProposed(b, sync, nil) }

func (e *hookedEngine) WriteProposed(b *mvcc.Batch, sync bool, proposed func()) error {
	if proposed != nil {
		proposed()
	}
	e.mu.Lock()
	hold := e.hold
	e.mu.Unlock()
	if hold != nil {
		e.ordered <- struct{}{}
		<-hold
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if hold != nil && e.fail {
		return raftstore.NotLeader(2, nil)
	}
	if err := e.Engine.Write(b, sync); err != nil {
		return err
	}
	e.events = append(e.events, "applied")
	return nil
}

// holdWrites makes the writes from now on wait until the channel it
// returns is closed.
func (e *hookedEngine) holdWrites() chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hold = make(chan struct{})
	return e.hold
}

// openWrites lets the writes from now on through.
func (e *hookedEngine) openWrites() {
	e.mu.Lock()
	e.hold = nil
	e.mu.Unlock()
}

// await waits for a write to be ordered and held.
func (e *hookedEngine) await(t *testing.T, what string) {
	t.Helper()
	select {
	case <-e.ordered:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no write reached the engine", what)
	}
}

func (e *hookedEngine) record(event string) {
	e.mu.Lock()
	e.events = append(e.events, event)
	e.mu.Unlock()
}

func (e *hookedEngine) log() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.events, ", ")
}

// gate stops the first caller of pass until opened, and counts the
// callers that passed after it.
type gate struct {
	first   atomic.Bool
	arrived chan struct{}
	open    chan struct{}
	others  atomic.Int64
}

func newGate() *gate { return &gate{arrived: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) pass() {
	if g.first.CompareAndSwap(false, true) {
		close(g.arrived)
		<-g.open
		return
	}
	g.others.Add(1)
}

// stopNextRead makes the engine's next read wait until the gate it
// returns is opened.
func (e *hookedEngine) stopNextRead(t *testing.T) *gate {
	g := newGate()
	e.readGate.Store(g)
	t.Cleanup(func() {
		select {
		case <-g.open:
		default:
			close(g.open)
		}
	})
	return g
}

// oneHookedRegion serves region 2, all keys, over a hookedEngine.
func oneHookedRegion(t *testing.T) (*testRegions, *hookedEngine) {
	eng := newHookedEngine()
	st, err := mvcc.NewStore(eng, mvcc.RealClock{}, mvcc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &testRegions{waits: st.Waits(), regions: map[uint64]*testRegion{2: {meta: &metapb.Region{Id: 2, RegionEpoch: epoch,
		Peers: []*metapb.Peer{{Id: 3, StoreId: 1}}}, st: st}}}, eng
}

// sized sets the service's pools as the config keys would.
func sized(reads, workers int) func(*Service) {
	return func(s *Service) {
		cfg := DefaultConfig()
		cfg.ReadPool.Unified.MaxThreadCount = reads
		cfg.Storage.SchedulerWorkerPoolSize = workers
		cfg.Txn.WaitForLockTimeout = Duration{s.WaitForLockTimeout}
		cfg.Txn.Pipelined = s.Pipelined
		s.Configure(cfg)
	}
}

// answer is a call's response, or its error.
type answer struct {
	resp fmt.Stringer
	err  error
}

func async(f func() (fmt.Stringer, error)) chan answer {
	ch := make(chan answer, 1)
	go func() {
		resp, err := f()
		ch <- answer{resp, err}
	}()
	return ch
}

// expectAnswer waits for ch's answer and checks it.
func expectAnswer(t *testing.T, what string, ch chan answer, want string) {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%s: %v", what, a.err)
		}
		if got := strings.TrimSpace(a.resp.String()); got != want {
			t.Errorf("%s:\n got: %s\nwant: %s", what, got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no answer", what)
	}
}

// waitQueued waits until n tasks queue for a slot of p.
func waitQueued(t *testing.T, p *workerPool, n int64, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if p.waiting.Load() == n {
			return
		}
	}
	t.Fatalf("%s: %d queued, want %d", what, p.waiting.Load(), n)
}

// readpool.unified.max-thread-count bounds the reads that run at once,
// unary and batched alike: with one slot, a read that waits for a slot
// does not touch the engine while another reads.
func TestReadPool(t *testing.T) {
	for _, slots := range []int{1, 2} {
		t.Run(fmt.Sprint(slots), func(t *testing.T) {
			rs, eng := oneHookedRegion(t)
			c, svc := startService(t, rs, time.Second, sized(slots, 4))
			ctx := context.Background()
			commit(t, c, 2, 10, 11, put("a", "1"), put("b", "2"))

			stopped := eng.stopNextRead(t)
			first := async(func() (fmt.Stringer, error) {
				return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("a"), Version: 20})
			})
			<-stopped.arrived // the first read holds its slot, reading
			b := newBatchClient(t, c)
			b.send([]uint64{1}, &tikvpb.BatchCommandsRequest_Request{Cmd: &tikvpb.BatchCommandsRequest_Request_BatchGet{
				BatchGet: &kvrpcpb.BatchGetRequest{Context: rc(2), Keys: keys("a", "b"), Version: 20}}})
			if slots == 1 {
				waitQueued(t, svc.reads, 1, "the batched read")
				if n := stopped.others.Load(); n != 0 {
					t.Fatalf("%d engine reads while another read held the only slot", n)
				}
			} else if got := strings.TrimSpace(b.wait(1).String()); got != `BatchGet:<pairs:<key:"a" value:"1" > pairs:<key:"b" value:"2" > >` {
				t.Errorf("the batched read beside the stopped one: %s", got)
			}
			close(stopped.open)
			expectAnswer(t, "the first read", first, `value:"1"`)
			if got := strings.TrimSpace(b.wait(1).String()); got != `BatchGet:<pairs:<key:"a" value:"1" > pairs:<key:"b" value:"2" > >` {
				t.Errorf("the batched read: %s", got)
			}
			if n := svc.reads.running(); n != 0 {
				t.Errorf("%d read slots still taken", n)
			}
		})
	}
}

// storage.scheduler-worker-pool-size bounds the commands that decide
// their writes at once, but a command whose write is being replicated
// holds no worker: with one worker, another command decides and hands
// over its write while the first one's is held.
func TestSchedulerPool(t *testing.T) {
	rs, eng := oneHookedRegion(t)
	c, svc := startService(t, rs, time.Second, sized(4, 1))
	ctx := context.Background()
	prewrite := func(start uint64, key string) func() (fmt.Stringer, error) {
		return func() (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put(key, "v")},
				PrimaryLock: []byte(key), StartVersion: start, LockTtl: 3000})
		}
	}
	commitKey := func(start, commitTS uint64, key string) func() (fmt.Stringer, error) {
		return func() (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: start, Keys: keys(key), CommitVersion: commitTS})
		}
	}
	ok(t, failed(prewrite(5, "c")()))

	// Writes held in replication: a prewrite and a commit both get theirs
	// to the engine with the one worker.
	hold := eng.holdWrites()
	pw := async(prewrite(10, "a"))
	eng.await(t, "the prewrite")
	cm := async(commitKey(5, 6, "c"))
	eng.await(t, "the commit, decided while the prewrite's write is held")
	if n := svc.sched.running(); n != 0 {
		t.Errorf("%d workers taken by commands whose writes replicate", n)
	}
	eng.openWrites()
	close(hold)
	expectAnswer(t, "the prewrite", pw, ``)
	expectAnswer(t, "the commit", cm, `commit_version:6`)

	// A command deciding holds the worker: another waits for it before it
	// reads anything.
	stopped := eng.stopNextRead(t)
	first := async(prewrite(20, "d"))
	<-stopped.arrived
	second := async(commitKey(10, 11, "a"))
	waitQueued(t, svc.sched, 1, "the commit")
	if n := stopped.others.Load(); n != 0 {
		t.Fatalf("%d engine reads while another command held the only worker", n)
	}
	close(stopped.open)
	expectAnswer(t, "the stopped prewrite", first, ``)
	expectAnswer(t, "the commit behind it", second, `commit_version:11`)

	// With two workers it goes ahead.
	rs, eng = oneHookedRegion(t)
	c, _ = startService(t, rs, time.Second, sized(4, 2))
	ok(t, failed(prewrite(10, "a")()))
	stopped = eng.stopNextRead(t)
	first = async(prewrite(20, "d"))
	<-stopped.arrived
	expectAnswer(t, "the commit beside the stopped prewrite", async(commitKey(10, 11, "a")), `commit_version:11`)
	close(stopped.open)
	expectAnswer(t, "the stopped prewrite", first, ``)
}
