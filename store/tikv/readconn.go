package tikv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/kvproto/pkg/tikvpb"
	"github.com/pingcap/log"
	tikvconfig "github.com/tikv/client-go/v2/config"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// The direct reads of get.go and scan.go go to a store on a BatchCommands
// stream of their own (one gRPC connection per store), not through
// client-go's RPC client. client-go's sends every request through a
// channel to a send loop goroutine, which batches what is waiting and
// hands it to gRPC; each request also takes a timer, a select over
// three channels, request metrics and client-go's request codec: ~15% of
// a SQL node's CPU under oltp_point_select (docs/cluster-bench/README.md).
// Here the caller's goroutine sends: requests that arrive while another
// caller is sending queue up and go, together, in the next message that
// caller sends (a batch forms only when requests overlap; nothing
// waits for one). One goroutine per stream receives and hands each
// answer to its caller.
//
// The requests and their answers are client-go's (the same KvGet and
// Scan, the same region context, the same kvproto on the same kind of
// stream), and get.go and scan.go use an answer only when it is clean.
// Any failure here (no stream yet, the stream broken, no answer within
// client-go's read timeout) is the caller's !ok: it reads through
// client-go instead, which backs off, marks a failed store and follows
// a new leader. A broken stream is made again on a later read, at most
// once a second; a late answer fails only its own call (the stream
// stays, as in client-go's batch client). After repeated failures
// without an answer in between, callers go straight to client-go for a
// while: 1 s, doubling to 30 s.

// readClient holds the read streams, one per store address.
type readClient struct {
	mu     sync.Mutex
	conns  map[string]*readConn
	closed bool
	// calls counts the requests answered on the read streams, for tests.
	calls atomic.Int64
}

func newReadClient() *readClient {
	return &readClient{conns: make(map[string]*readConn)}
}

// readConn is one store's connection and its current stream.
type readConn struct {
	c    *readClient
	addr string
	cc   *grpc.ClientConn

	mu       sync.Mutex
	stream   *readStream // nil while there is none
	opening  bool
	failedAt time.Time // when the last failure (see fails) was
	loggedAt time.Time // when a failure was last logged
	// fails counts the failures (a stream broke or failed to open, or a
	// watch round found calls past their timeout) since the last answer;
	// from the second on, callers read through client-go for
	// backoff(fails-1).
	fails atomic.Int32
}

// readStream is one BatchCommands stream and the calls waiting on it.
type readStream struct {
	bc     tikvpb.Tikv_BatchCommandsClient
	cancel context.CancelFunc

	mu      sync.Mutex
	pending map[uint64]*readCall
	nextID  uint64
	err     error // set once the stream is broken: no new calls

	// The send side: queue holds the calls not yet sent; sending is set
	// while a caller's goroutine sends them.
	qmu     sync.Mutex
	queue   []*readCall
	spare   []*readCall
	sending bool
	msg     tikvpb.BatchCommandsRequest // reused by the sending goroutine
}

type readCall struct {
	id       uint64
	req      *tikvpb.BatchCommandsRequest_Request
	timeout  time.Duration
	deadline time.Time
	done     chan struct{}
	resp     *tikvpb.BatchCommandsResponse_Response
	err      error
}

var errReadStream = errors.New("tikv: read stream unavailable")

// watchEvery is how often a stream's calls are checked for their timeout.
var watchEvery = time.Second

// reopenAfter is how long after a stream broke (or failed to open) the
// next one is made.
const reopenAfter = time.Second

// maxBackoff bounds how long callers read through client-go after
// repeated failures.
const maxBackoff = 30 * time.Second

// readBackoff is how long callers read through client-go after the n-th
// repeated failure (n >= 1): 1 s, doubling up to maxBackoff.
func readBackoff(n int32) time.Duration {
	if n > 5 {
		return maxBackoff
	}
	return min(time.Second<<(n-1), maxBackoff)
}

// call sends req to the store at addr and returns its answer, or an error
// if the stream cannot carry it (the caller then reads through client-go):
// there is no stream (none yet, the last broke, or callers are backing
// off after repeated failures), it broke, or the store did not answer
// within timeout (client-go's timeout for the request; only this call
// fails). It is safe for concurrent use; the stream keeps req until the
// answer (or the call's failure), so the caller must not change it
// before call returns.
func (c *readClient) call(ctx context.Context, addr string, req *tikvpb.BatchCommandsRequest_Request, timeout time.Duration) (*tikvpb.BatchCommandsResponse_Response, error) {
	rc := c.conn(addr)
	if rc == nil {
		return nil, errReadStream
	}
	st := rc.current()
	if st == nil {
		return nil, errReadStream
	}
	call := &readCall{req: req, timeout: timeout, done: make(chan struct{}, 1)}
	if !st.add(call) {
		return nil, errReadStream
	}
	st.send(call)
	select {
	case <-call.done:
	case <-ctx.Done():
		if st.remove(call) {
			return nil, ctx.Err()
		}
		<-call.done
	}
	if call.err != nil {
		return nil, call.err
	}
	c.calls.Add(1)
	return call.resp, nil
}

// conn is addr's connection, dialled (without waiting) if there is none.
func (c *readClient) conn(addr string) *readConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if rc := c.conns[addr]; rc != nil {
		return rc
	}
	rc := &readConn{c: c, addr: addr}
	opts, err := readDialOptions()
	if err == nil {
		rc.cc, err = grpc.NewClient(addr, opts...)
	}
	if err != nil {
		// No stream to addr: its reads go through client-go.
		rc.logLocked("cannot dial", err)
	}
	c.conns[addr] = rc
	return rc
}

// logEvery bounds how often a store's stream failures are logged.
const logEvery = time.Minute

// logLocked logs a failure of rc's stream, at most once per logEvery;
// rc.mu is held (or rc is not shared yet).
func (rc *readConn) logLocked(what string, err error) {
	if now := time.Now(); now.Sub(rc.loggedAt) >= logEvery {
		rc.loggedAt = now
		log.Warn("tikv: read stream "+what+"; reads go through client-go", zap.String("store", rc.addr), zap.Error(err))
	}
}

// readDialOptions are client-go's options for its connections to stores
// (internal/client's connPool.Init), with a codec that marshals kvproto's
// messages directly; an error if TLS is configured and its configuration
// cannot be read (never plaintext then).
func readDialOptions() ([]grpc.DialOption, error) {
	cfg := tikvconfig.GetGlobalConfig()
	creds := grpc.WithTransportCredentials(insecure.NewCredentials())
	if len(cfg.Security.ClusterSSLCA) != 0 {
		tlsConfig, err := cfg.Security.ToTLSConfig()
		if err != nil {
			return nil, err
		}
		creds = grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig))
	}
	return []grpc.DialOption{
		creds,
		grpc.WithInitialWindowSize(cfg.TiKVClient.GrpcInitialWindowSize),
		grpc.WithInitialConnWindowSize(cfg.TiKVClient.GrpcInitialConnWindowSize),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<31-1), grpc.ForceCodecV2(newReadCodec())),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  100 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   3 * time.Second,
			},
			MinConnectTimeout: 5 * time.Second,
		}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:    time.Duration(cfg.TiKVClient.GrpcKeepAliveTime) * time.Second,
			Timeout: cfg.TiKVClient.GetGrpcKeepAliveTimeout(),
		}),
	}, nil
}

// current is the connection's stream, or nil if it has none now (then
// one is made in the background, unless the last broke within
// reopenAfter) or if callers are backing off after repeated failures.
func (rc *readConn) current() *readStream {
	if rc.cc == nil {
		return nil // not dialled (readClient.conn)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if f := rc.fails.Load(); f >= 2 && time.Since(rc.failedAt) < readBackoff(f-1) {
		return nil
	}
	if rc.stream != nil {
		return rc.stream
	}
	if !rc.opening && time.Since(rc.failedAt) >= reopenAfter {
		rc.opening = true
		go rc.open()
	}
	return nil
}

func (rc *readConn) open() {
	ctx, cancel := context.WithCancel(context.Background())
	bc, err := tikvpb.NewTikvClient(rc.cc).BatchCommands(ctx)
	closed := rc.c.isClosed()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.opening = false
	if err != nil || closed {
		cancel()
		rc.failedLocked()
		if !closed {
			rc.logLocked("cannot open", err)
		}
		return
	}
	st := &readStream{bc: bc, cancel: cancel, pending: make(map[uint64]*readCall)}
	rc.stream = st
	go rc.recvLoop(st)
	go rc.watch(st)
}

func (c *readClient) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// recvLoop hands each answer on st to its call until st breaks.
func (rc *readConn) recvLoop(st *readStream) {
	for {
		msg, err := st.bc.Recv()
		if err != nil {
			rc.broken(st, fmt.Errorf("%w: %v", errReadStream, err))
			return
		}
		ids, resps := msg.GetRequestIds(), msg.GetResponses()
		if len(ids) != len(resps) {
			// Which answer is whose is not known: every call on st fails.
			rc.broken(st, fmt.Errorf("%w: %d request ids and %d responses in a message", errReadStream, len(ids), len(resps)))
			return
		}
		if rc.fails.Load() != 0 {
			rc.fails.Store(0)
		}
		st.mu.Lock()
		for i, id := range ids {
			call := st.pending[id]
			if call == nil {
				continue // its caller gave up on it
			}
			delete(st.pending, id)
			call.resp = resps[i]
			call.done <- struct{}{}
		}
		st.mu.Unlock()
	}
}

// watch fails the calls that have waited longer than their timeout for
// their answer, each on its own (as client-go's batch client does): the
// stream stays, and an answer that comes later is dropped. A round that
// fails calls counts as one failure for the back-off (a store that
// stopped answering without closing the connection). watch ends when st
// breaks.
func (rc *readConn) watch(st *readStream) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for now := range t.C {
		st.mu.Lock()
		done := st.err != nil
		late := 0
		for id, call := range st.pending {
			if now.After(call.deadline) {
				delete(st.pending, id)
				call.err = fmt.Errorf("%w: no answer from %s in %v", errReadStream, rc.addr, call.timeout)
				call.done <- struct{}{}
				late++
			}
		}
		st.mu.Unlock()
		if done {
			return
		}
		if late > 0 {
			rc.mu.Lock()
			rc.failedLocked()
			rc.mu.Unlock()
		}
	}
}

// failedLocked counts a failure; rc.mu is held.
func (rc *readConn) failedLocked() {
	rc.failedAt = time.Now()
	rc.fails.Add(1)
}

// broken fails st's calls with err and drops st, so that a later call
// makes a new stream.
func (rc *readConn) broken(st *readStream, err error) {
	st.cancel()
	st.mu.Lock()
	if st.err == nil {
		st.err = err
	}
	for id, call := range st.pending {
		delete(st.pending, id)
		call.err = err
		call.done <- struct{}{}
	}
	st.mu.Unlock()
	closed := rc.c.isClosed()
	rc.mu.Lock()
	if rc.stream == st {
		rc.stream = nil
		rc.failedLocked()
		if !closed {
			rc.logLocked("broken", err)
		}
	}
	rc.mu.Unlock()
}

// add gives call an id on st; false if st is broken.
func (st *readStream) add(call *readCall) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		return false
	}
	st.nextID++
	call.id = st.nextID
	call.deadline = time.Now().Add(call.timeout)
	st.pending[call.id] = call
	return true
}

// remove takes call off st's pending calls; false if its answer (or
// error) has been given to it already.
func (st *readStream) remove(call *readCall) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.pending[call.id] != call {
		return false
	}
	delete(st.pending, call.id)
	return true
}

// send queues call and, unless another goroutine is sending, sends what
// is queued, in one message for each round, until the queue is empty.
func (st *readStream) send(call *readCall) {
	st.qmu.Lock()
	st.queue = append(st.queue, call)
	if st.sending {
		st.qmu.Unlock()
		return
	}
	st.sending = true
	for len(st.queue) > 0 {
		calls := st.queue
		st.queue = st.spare[:0]
		st.qmu.Unlock()
		m := &st.msg
		for _, c := range calls {
			m.Requests = append(m.Requests, c.req)
			m.RequestIds = append(m.RequestIds, c.id)
		}
		err := st.bc.Send(m)
		clear(m.Requests)
		m.Requests, m.RequestIds = m.Requests[:0], m.RequestIds[:0]
		clear(calls)
		st.qmu.Lock()
		st.spare = calls[:0]
		if err != nil {
			// Recv sees the stream's error too; the calls' pending entries
			// are failed there (or by broken, below, if it already has).
			st.qmu.Unlock()
			st.cancel()
			st.qmu.Lock()
		}
	}
	st.sending = false
	st.qmu.Unlock()
}

// close closes every connection; calls in flight fail.
func (c *readClient) close() {
	c.mu.Lock()
	c.closed = true
	conns := c.conns
	c.conns = nil
	c.mu.Unlock()
	for _, rc := range conns {
		rc.mu.Lock()
		if rc.stream != nil {
			rc.stream.cancel()
		}
		rc.mu.Unlock()
		if rc.cc != nil {
			rc.cc.Close()
		}
	}
}
