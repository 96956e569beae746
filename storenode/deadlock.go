package storenode

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/pingcap/kvproto/pkg/deadlock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Deadlocks across stores are found as TiKV finds them: one store, the
// one leading the region that holds the empty key, keeps the cluster's
// wait-for graph (waitGraph), and every store reports its lock waits to it
// on kvproto's Deadlock.Detect stream (detectorClient). A wait that closes
// a cycle is answered with a DeadlockResponse, and the store that parked it
// wakes it with a Deadlock error. A store's own waits are also checked
// locally at once (mvcc.WaitManager), so a cycle within one store needs no
// round trip.

// waitEntryTTL: an edge not cleaned up by then is dropped (its store may
// have died). Lock waits end within pessimistic-txn.wait-for-lock-timeout
// (1 s by default) and are registered again if they go on; a longer
// timeout makes the edges live that much longer (waitGraphTTL).
const waitEntryTTL = 3 * time.Second

// waitGraphTTL is how long the detector keeps an edge for a store whose
// lock waits last up to lockWait.
func waitGraphTTL(lockWait time.Duration) time.Duration {
	return max(waitEntryTTL, lockWait+2*time.Second)
}

type waitEdge struct {
	entry deadlock.WaitForEntry
	at    time.Time
}

// waitGraph is the cluster's wait-for graph, kept by the detector's owner.
type waitGraph struct {
	ttl   time.Duration // an edge older than this is dropped
	mu    sync.Mutex
	edges map[uint64]map[uint64]*waitEdge // txn → the txn it waits for → edge
}

func newWaitGraph(ttl time.Duration) *waitGraph {
	return &waitGraph{ttl: ttl, edges: map[uint64]map[uint64]*waitEdge{}}
}

// detect adds e's edge unless it closes a cycle; then it returns the
// cycle's edges, ending with e.
func (g *waitGraph) detect(e *deadlock.WaitForEntry) []*deadlock.WaitForEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if chain := g.path(e.WaitForTxn, e.Txn, now, map[uint64]bool{}); chain != nil {
		return append(chain, e)
	}
	out := g.edges[e.Txn]
	if out == nil {
		out = map[uint64]*waitEdge{}
		g.edges[e.Txn] = out
	}
	out[e.WaitForTxn] = &waitEdge{entry: *e, at: now}
	return nil
}

// path returns the edges of a path from txn to target, or nil.
func (g *waitGraph) path(txn, target uint64, now time.Time, seen map[uint64]bool) []*deadlock.WaitForEntry {
	if seen[txn] {
		return nil
	}
	seen[txn] = true
	for next, e := range g.edges[txn] {
		if now.Sub(e.at) > g.ttl {
			delete(g.edges[txn], next)
			continue
		}
		if next == target {
			return []*deadlock.WaitForEntry{&e.entry}
		}
		if rest := g.path(next, target, now, seen); rest != nil {
			return append([]*deadlock.WaitForEntry{&e.entry}, rest...)
		}
	}
	return nil
}

// entries lists the graph's live edges.
func (g *waitGraph) entries() []deadlock.WaitForEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	var out []deadlock.WaitForEntry
	for _, edges := range g.edges {
		for _, e := range edges {
			if now.Sub(e.at) <= g.ttl {
				out = append(out, e.entry)
			}
		}
	}
	return out
}

func (g *waitGraph) cleanUpWaitFor(txn, waitFor uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if out := g.edges[txn]; out != nil {
		delete(out, waitFor)
		if len(out) == 0 {
			delete(g.edges, txn)
		}
	}
}

func (g *waitGraph) clear() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.edges)
}

func (g *waitGraph) cleanUp(txn uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.edges, txn)
}

// handle serves one request; it returns the response for a deadlock.
func (g *waitGraph) handle(req *deadlock.DeadlockRequest) *deadlock.DeadlockResponse {
	switch req.Tp {
	case deadlock.DeadlockRequestType_Detect:
		if chain := g.detect(&req.Entry); chain != nil {
			resp := &deadlock.DeadlockResponse{Entry: req.Entry, WaitChain: chain}
			// The edge of the chain that ends at the victim names the key
			// the victim holds and the others wait for.
			for _, e := range chain {
				if e.WaitForTxn == req.Entry.Txn {
					resp.DeadlockKey, resp.DeadlockKeyHash = e.Key, e.KeyHash
				}
			}
			return resp
		}
	case deadlock.DeadlockRequestType_CleanUpWaitFor:
		g.cleanUpWaitFor(req.Entry.Txn, req.Entry.WaitForTxn)
	case deadlock.DeadlockRequestType_CleanUp:
		g.cleanUp(req.Entry.Txn)
	}
	return nil
}

// deadlockService is kvproto's Deadlock service: the detector, when this
// store owns it.
type deadlockService struct {
	deadlock.UnimplementedDeadlockServer
	graph *waitGraph
	owner func() bool
}

// Detect serves a store's stream of wait reports. A store that is not the
// owner answers nothing: the reporter finds the owner again.
func (d *deadlockService) Detect(stream deadlock.Deadlock_DetectServer) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		if !d.owner() {
			return errNotDetectorOwner
		}
		if resp := d.graph.handle(req); resp != nil {
			if err := stream.Send(resp); err != nil {
				return err
			}
		}
	}
}

// GetWaitForEntries lists the waits the detector knows, as TiKV's does;
// a store that is not the owner refuses.
func (d *deadlockService) GetWaitForEntries(context.Context, *deadlock.WaitForEntriesRequest) (*deadlock.WaitForEntriesResponse, error) {
	if !d.owner() {
		return nil, errNotDetectorOwner
	}
	return &deadlock.WaitForEntriesResponse{Entries: d.graph.entries()}, nil
}

var errNotDetectorOwner = &detectorError{"this store does not run the deadlock detector"}

type detectorError struct{ s string }

func (e *detectorError) Error() string { return e.s }

func keyHash(key []byte) uint64 {
	h := fnv.New64a()
	h.Write(key)
	return h.Sum64()
}

// detectorClient is mvcc.Detector for a store: it queues the store's wait
// reports for the owner, in order, and hands the owner's deadlock answers
// to the store's WaitManager.
type detectorClient struct {
	n     *Node
	waits *mvcc.WaitManager
	queue chan *deadlock.DeadlockRequest
}

func newDetectorClient(n *Node, waits *mvcc.WaitManager) *detectorClient {
	return &detectorClient{n: n, waits: waits, queue: make(chan *deadlock.DeadlockRequest, 4096)}
}

func detectorRequest(tp deadlock.DeadlockRequestType, key []byte, txn, holder uint64) *deadlock.DeadlockRequest {
	return &deadlock.DeadlockRequest{Tp: tp, Entry: deadlock.WaitForEntry{Txn: txn, WaitForTxn: holder,
		Key: append([]byte(nil), key...), KeyHash: keyHash(key)}}
}

func (d *detectorClient) push(tp deadlock.DeadlockRequestType, key []byte, txn, holder uint64) {
	select {
	case d.queue <- detectorRequest(tp, key, txn, holder):
	default: // the owner is unreachable and the queue full: local detection only
	}
}

// liveWaits are Detect requests for the store's current waits. Reports
// sent to a store that had just stopped owning the detector are lost (it
// refuses them), and so are those dropped while no owner was known: a
// reporter that reaches an owner sends its live waits first, so that the
// owner's graph has every wait that goes on, not only those that begin
// after it took over.
func (d *detectorClient) liveWaits() []*deadlock.DeadlockRequest {
	var reqs []*deadlock.DeadlockRequest
	d.waits.Waits(func(key []byte, txn, holder uint64) {
		reqs = append(reqs, detectorRequest(deadlock.DeadlockRequestType_Detect, key, txn, holder))
	})
	return reqs
}

// Detect implements mvcc.Detector.
func (d *detectorClient) Detect(key []byte, txn, holder uint64) {
	d.push(deadlock.DeadlockRequestType_Detect, key, txn, holder)
}

// CleanUpWaitFor implements mvcc.Detector.
func (d *detectorClient) CleanUpWaitFor(key []byte, txn, holder uint64) {
	d.push(deadlock.DeadlockRequestType_CleanUpWaitFor, key, txn, holder)
}

func (d *detectorClient) deliver(resp *deadlock.DeadlockResponse) {
	cycle := make([]uint64, 0, len(resp.WaitChain))
	for _, e := range resp.WaitChain {
		cycle = append(cycle, e.Txn)
	}
	// The chain ends with the victim's own edge; the cycle starts with it.
	if n := len(cycle); n > 0 {
		cycle = append([]uint64{cycle[n-1]}, cycle[:n-1]...)
	}
	d.waits.Deadlock(resp.Entry.Txn, resp.Entry.WaitForTxn, &kv.DeadlockError{Key: resp.Entry.Key,
		StartTS: resp.Entry.Txn, Holder: resp.Entry.WaitForTxn, Cycle: cycle})
}

// run sends the queue to the owner, finding it again when it changes.
func (d *detectorClient) run(ctx context.Context, graph *waitGraph) {
	defer d.n.wg.Done()
	var served bool // the last round served the queue here
	for ctx.Err() == nil {
		owner, addr := d.n.detectorOwner(ctx)
		if served && owner != d.n.storeID {
			// The graph is stale from now on: the waits' clean-ups go to
			// the new owner. Should this store own the detector again, it
			// starts from the waits reported to it then.
			graph.clear()
			served = false
		}
		switch {
		case owner == 0:
			d.drainFor(ctx, 200*time.Millisecond, nil)
		case owner == d.n.storeID:
			// Served here, until this store stops owning the detector.
			if !served {
				for _, req := range d.liveWaits() {
					d.handle(graph, req)
				}
			}
			served = true
			d.drainFor(ctx, time.Second, graph)
		default:
			if err := d.stream(ctx, addr); err != nil && ctx.Err() == nil {
				d.n.log.Debug("deadlock detector stream failed", "owner", owner, "err", err)
				d.drainFor(ctx, 200*time.Millisecond, nil)
			}
		}
	}
}

// drainFor handles the queue for a while: with graph, as the owner; without,
// dropping reports (no owner is known: waits end by timeout instead).
func (d *detectorClient) drainFor(ctx context.Context, dur time.Duration, graph *waitGraph) {
	t := time.NewTimer(dur)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case req := <-d.queue:
			if graph != nil {
				d.handle(graph, req)
			}
		}
	}
}

// handle serves one of this store's own requests on its graph.
func (d *detectorClient) handle(graph *waitGraph, req *deadlock.DeadlockRequest) {
	if resp := graph.handle(req); resp != nil {
		d.deliver(resp)
	}
}

func (d *detectorClient) stream(ctx context.Context, addr string) error {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := deadlock.NewDeadlockClient(cc).Detect(sctx)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		for {
			resp, err := st.Recv()
			if err != nil {
				errc <- err
				return
			}
			d.deliver(resp)
		}
	}()
	for _, req := range d.liveWaits() {
		if err := st.Send(req); err != nil {
			return err
		}
	}
	// Check the owner again now and then: leadership of the first region
	// may move.
	recheck := time.NewTicker(time.Second)
	defer recheck.Stop()
	owner, _ := d.n.detectorOwner(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case <-recheck.C:
			if o, _ := d.n.detectorOwner(ctx); o != owner {
				return nil
			}
		case req := <-d.queue:
			if err := st.Send(req); err != nil {
				return err
			}
		}
	}
}

// detectorOwner returns the store that leads the region holding the empty
// key, and its address; 0 if unknown.
func (n *Node) detectorOwner(ctx context.Context) (uint64, string) {
	for _, p := range n.rs.Peers() {
		if len(p.Meta().StartKey) == 0 && p.IsLeader() {
			return n.storeID, ""
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	leader, err := n.pd.regionLeader(cctx, nil)
	if err != nil || leader == 0 {
		return 0, ""
	}
	if leader == n.storeID {
		return 0, "" // PD has yet to hear that leadership moved
	}
	addr, err := n.resolve(cctx, leader)
	if err != nil {
		return 0, ""
	}
	return leader, addr
}

// ownsDetector says whether this store runs the detector now.
func (n *Node) ownsDetector() bool {
	for _, p := range n.rs.Peers() {
		if len(p.Meta().StartKey) == 0 && p.IsLeader() {
			return true
		}
	}
	return false
}
