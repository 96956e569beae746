package storenode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/coprocessor"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// BatchCommands serves the stream client-go sends its commands on by
// default: each message carries requests[i] under request_ids[i], and
// every request is answered, under its id, by a response of its own kind.
//
// A point get that can be answered without waiting for anything (led
// here under the lease, no commit in flight on its key, a read slot free:
// kvGetNow) is answered by the goroutine that receives the stream (every
// such get of a message when the process has one processor, else only
// the message's last request), and the message's answers are sent from
// there, each message's in one, with whatever the workers have ready. Every other request runs on a
// goroutine of its own (an idle worker's), so that one that waits (a
// pessimistic lock behind another transaction's, a read behind a commit
// in flight) holds up no other; a sender goroutine writes the workers'
// responses, as many as are ready in one message. Handing a get to a
// worker and its answer to the sender cost the store two goroutine
// switches per get (docs/cluster-bench/README.md). Commands this store
// does not serve (raw KV, coprocessor, flashback, pipelined DML) are
// answered with an error of their kind.
func (s *Service) BatchCommands(stream tikvpb.Tikv_BatchCommandsServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	out := make(chan batchResult, 256)
	snd := &batchSender{stream: stream, out: out}
	sent := make(chan error, 1)
	go func() {
		err := snd.loop(ctx)
		if err != nil {
			cancel() // the stream is broken: stop the requests in flight
		}
		sent <- err
	}()

	var running sync.WaitGroup
	var now []batchResult // this message's answers given here
	for {
		msg, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				// The client is done sending: answer what it asked, then end.
				running.Wait()
				close(out)
				return <-sent
			}
			cancel()
			<-sent
			return err
		}
		now = now[:0]
		// With one processor every request of the message is answered
		// here if it can be; with more, only the last, so that the others
		// run in parallel on workers meanwhile, and a read that misses the
		// block cache holds up the stream for one read at most.
		inlineFrom := 0
		if gomaxprocs() > 1 {
			inlineFrom = len(msg.GetRequests()) - 1
		}
		for i, req := range msg.GetRequests() {
			if i >= len(msg.GetRequestIds()) {
				break
			}
			if err := s.checkBatchCluster(req); err != nil {
				cancel()
				<-sent
				return err
			}
			id := msg.GetRequestIds()[i]
			if i >= inlineFrom {
				if resp := s.dispatchNow(ctx, req); resp != nil {
					now = append(now, batchResult{id: id, resp: resp})
					continue
				}
			}
			s.handoffs.Add(1)
			running.Add(1)
			run := func() {
				defer running.Done()
				res := batchResult{id: id}
				res.resp, res.scan = s.dispatchBatched(ctx, req)
				select {
				case out <- res:
				case <-ctx.Done():
				}
			}
			// An idle worker takes it if there is one; otherwise it gets a
			// goroutine of its own, so that a lock wait holds up nothing.
			select {
			case s.work <- run:
			default:
				go run()
			}
		}
		if len(now) > 0 {
			if err := snd.send(now); err != nil {
				cancel()
				<-sent
				return err
			}
			clear(now) // let the responses go once sent
		}
	}
}

// checkBatchCluster is CheckCluster for a batched request: as TiKV, a
// request that names another cluster fails the whole stream with
// InvalidArgument (the requests before it on the stream are answered or
// cancelled).
func (s *Service) checkBatchCluster(req *tikvpb.BatchCommandsRequest_Request) error {
	if s.ClusterID == 0 {
		return nil
	}
	if id := requestContext(req).GetClusterId(); id != 0 && id != s.ClusterID {
		return status.Errorf(codes.InvalidArgument, "cluster of request=%d does not match TiKV cluster id=%d", id, s.ClusterID)
	}
	return nil
}

// requestContext is the context of a batched request of any kind (nil
// if it has none): each kind's request has a GetContext, and is the one
// field of its case of the oneof.
func requestContext(req *tikvpb.BatchCommandsRequest_Request) *kvrpcpb.Context {
	cmd := reflect.ValueOf(req.GetCmd())
	if cmd.Kind() != reflect.Pointer || cmd.IsNil() || cmd.Elem().Kind() != reflect.Struct || cmd.Elem().NumField() == 0 {
		return nil
	}
	if r, ok := cmd.Elem().Field(0).Interface().(interface{ GetContext() *kvrpcpb.Context }); ok {
		return r.GetContext()
	}
	return nil
}

// batchResult is one response of the stream, under its request's id.
type batchResult struct {
	id   uint64
	resp *tikvpb.BatchCommandsResponse_Response
	scan *scanAnswer // resp's memory, to free once resp is sent (nil: none)
}

// gomaxprocs is runtime.GOMAXPROCS(0); a test sets it.
var gomaxprocs = func() int { return runtime.GOMAXPROCS(0) }

// maxResponsesPerMessage bounds how many responses one message carries.
const maxResponsesPerMessage = 128

// batchSender writes a stream's responses: those of the workers, from
// out, on its own goroutine (loop), and those the receiving goroutine gave
// itself (send). One at a time: gRPC's Send is not safe for concurrent use.
type batchSender struct {
	stream tikvpb.Tikv_BatchCommandsServer
	out    chan batchResult
	mu     sync.Mutex
	scans  []*scanAnswer // a message's scans to free once it is sent (under mu)
}

// loop writes the results from out to the stream until out is closed
// or ctx ends.
func (b *batchSender) loop(ctx context.Context) error {
	for {
		var res batchResult
		var ok bool
		select {
		case res, ok = <-b.out:
			if !ok {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
		if err := b.send([]batchResult{res}); err != nil {
			return err
		}
	}
}

// send writes results, and what else is ready in out, in as few messages
// as maxResponsesPerMessage allows.
func (b *batchSender) send(results []batchResult) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for more := true; more; {
		// Sized for what is ready: one allocation per slice, not a
		// growth per response. (gRPC forbids reusing a sent message.)
		n := min(len(results)+len(b.out), maxResponsesPerMessage)
		msg := &tikvpb.BatchCommandsResponse{Responses: make([]*tikvpb.BatchCommandsResponse_Response, 0, n),
			RequestIds: make([]uint64, 0, n)}
		scans := b.scans[:0]
		for len(msg.Responses) < maxResponsesPerMessage {
			var res batchResult
			if len(results) > 0 {
				res, results = results[0], results[1:]
			} else {
				var ok bool
				select {
				case res, ok = <-b.out:
				default:
				}
				if !ok {
					// Nothing ready (or out closed: loop sees that).
					more = false
					break
				}
			}
			msg.Responses = append(msg.Responses, res.resp)
			msg.RequestIds = append(msg.RequestIds, res.id)
			if res.scan != nil {
				scans = append(scans, res.scan)
			}
		}
		if len(msg.Responses) > 0 {
			err := b.stream.Send(msg)
			// Send has marshalled msg (the store's codec, into gRPC's
			// buffer, and no stats handler keeps it): the scans' memory
			// can serve other scans.
			for i, a := range scans {
				a.free()
				scans[i] = nil
			}
			b.scans = scans[:0]
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// dispatchNow answers req here and now if it is a point get that can be
// answered without waiting (kvGetNow), and returns nil otherwise.
func (s *Service) dispatchNow(ctx context.Context, req *tikvpb.BatchCommandsRequest_Request) *tikvpb.BatchCommandsResponse_Response {
	r, ok := req.GetCmd().(*tikvpb.BatchCommandsRequest_Request_Get)
	if !ok {
		return nil
	}
	a := newGetAnswer()
	if !s.kvGetNow(ctx, r.Get, &a.get) {
		return nil
	}
	return a.response()
}

// getAnswer is a get's response, the oneof's case and the response of
// the stream in one allocation.
type getAnswer struct {
	resp tikvpb.BatchCommandsResponse_Response
	cmd  tikvpb.BatchCommandsResponse_Response_Get
	get  kvrpcpb.GetResponse
}

func newGetAnswer() *getAnswer { return &getAnswer{} }

func (a *getAnswer) response() *tikvpb.BatchCommandsResponse_Response {
	a.cmd.Get = &a.get
	a.resp.Cmd = &a.cmd
	return &a.resp
}

// dispatchBatched is dispatch for a request of the stream that a worker
// runs: a scan's response is a scanAnswer's, whose memory the sender frees
// for the next scan once it has sent it.
func (s *Service) dispatchBatched(ctx context.Context, req *tikvpb.BatchCommandsRequest_Request) (*tikvpb.BatchCommandsResponse_Response, *scanAnswer) {
	r, ok := req.GetCmd().(*tikvpb.BatchCommandsRequest_Request_Scan)
	if !ok {
		return s.dispatch(ctx, req), nil
	}
	a := scanAnswers.Get().(*scanAnswer)
	a.scan.Pairs = a.ptrs[:0]
	s.kvScan(ctx, r.Scan, &a.scan, &a.pairs)
	if cap(a.scan.Pairs) > cap(a.ptrs) {
		a.ptrs = a.scan.Pairs[:0]
	}
	a.cmd.Scan = &a.scan
	a.resp.Cmd = &a.cmd
	return &a.resp, a
}

// scanAnswer is a scan's response on the stream with the memory of its
// pairs, kept for the next scan (scanPairs.keep) rather than made anew
// and zeroed for every one.
type scanAnswer struct {
	resp  tikvpb.BatchCommandsResponse_Response
	cmd   tikvpb.BatchCommandsResponse_Response_Scan
	scan  kvrpcpb.ScanResponse
	ptrs  []*kvrpcpb.KvPair
	pairs scanPairs
}

// scanAnswerMaxKept bounds the bytes of pairs a freed scanAnswer may keep:
// one that served a larger scan is left to the garbage collector.
const scanAnswerMaxKept = 256 << 10

var scanAnswers = sync.Pool{New: func() any { return &scanAnswer{pairs: scanPairs{keep: true}} }}

// free returns a to scanAnswers once its response has been sent: nothing
// may use the response or its pairs after that.
func (a *scanAnswer) free() {
	if a.pairs.kept > scanAnswerMaxKept {
		return
	}
	a.ptrs = a.ptrs[:0]
	a.scan = kvrpcpb.ScanResponse{}
	a.cmd = tikvpb.BatchCommandsResponse_Response_Scan{}
	a.resp = tikvpb.BatchCommandsResponse_Response{}
	a.pairs.reset()
	scanAnswers.Put(a)
}

// dispatch runs one request of the stream.
func (s *Service) dispatch(ctx context.Context, req *tikvpb.BatchCommandsRequest_Request) *tikvpb.BatchCommandsResponse_Response {
	type resp = tikvpb.BatchCommandsResponse_Response
	switch r := req.GetCmd().(type) {
	case *tikvpb.BatchCommandsRequest_Request_Get:
		a := newGetAnswer()
		s.kvGet(ctx, r.Get, &a.get)
		return a.response()
	case *tikvpb.BatchCommandsRequest_Request_Scan:
		v, _ := s.KvScan(ctx, r.Scan)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_Scan{Scan: v}}
	case *tikvpb.BatchCommandsRequest_Request_Prewrite:
		v, _ := s.KvPrewrite(ctx, r.Prewrite)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_Prewrite{Prewrite: v}}
	case *tikvpb.BatchCommandsRequest_Request_Commit:
		v, _ := s.KvCommit(ctx, r.Commit)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_Commit{Commit: v}}
	case *tikvpb.BatchCommandsRequest_Request_Cleanup:
		v, _ := s.KvCleanup(ctx, r.Cleanup)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_Cleanup{Cleanup: v}}
	case *tikvpb.BatchCommandsRequest_Request_BatchGet:
		v, _ := s.KvBatchGet(ctx, r.BatchGet)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_BatchGet{BatchGet: v}}
	case *tikvpb.BatchCommandsRequest_Request_BatchRollback:
		v, _ := s.KvBatchRollback(ctx, r.BatchRollback)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_BatchRollback{BatchRollback: v}}
	case *tikvpb.BatchCommandsRequest_Request_ScanLock:
		v, _ := s.KvScanLock(ctx, r.ScanLock)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_ScanLock{ScanLock: v}}
	case *tikvpb.BatchCommandsRequest_Request_ResolveLock:
		v, _ := s.KvResolveLock(ctx, r.ResolveLock)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_ResolveLock{ResolveLock: v}}
	case *tikvpb.BatchCommandsRequest_Request_GC:
		v, _ := s.KvGC(ctx, r.GC)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_GC{GC: v}}
	case *tikvpb.BatchCommandsRequest_Request_DeleteRange:
		v, _ := s.KvDeleteRange(ctx, r.DeleteRange)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_DeleteRange{DeleteRange: v}}
	case *tikvpb.BatchCommandsRequest_Request_PessimisticLock:
		v, _ := s.KvPessimisticLock(ctx, r.PessimisticLock)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_PessimisticLock{PessimisticLock: v}}
	case *tikvpb.BatchCommandsRequest_Request_PessimisticRollback:
		v, _ := s.KVPessimisticRollback(ctx, r.PessimisticRollback)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_PessimisticRollback{PessimisticRollback: v}}
	case *tikvpb.BatchCommandsRequest_Request_CheckTxnStatus:
		v, _ := s.KvCheckTxnStatus(ctx, r.CheckTxnStatus)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_CheckTxnStatus{CheckTxnStatus: v}}
	case *tikvpb.BatchCommandsRequest_Request_TxnHeartBeat:
		v, _ := s.KvTxnHeartBeat(ctx, r.TxnHeartBeat)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_TxnHeartBeat{TxnHeartBeat: v}}
	case *tikvpb.BatchCommandsRequest_Request_CheckSecondaryLocks:
		v, _ := s.KvCheckSecondaryLocks(ctx, r.CheckSecondaryLocks)
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_CheckSecondaryLocks{CheckSecondaryLocks: v}}
	case *tikvpb.BatchCommandsRequest_Request_GetHealthFeedback:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_GetHealthFeedback{GetHealthFeedback: &kvrpcpb.GetHealthFeedbackResponse{
			HealthFeedback: &kvrpcpb.HealthFeedback{StoreId: s.storeID}}}}
	case *tikvpb.BatchCommandsRequest_Request_BroadcastTxnStatus:
		// Only a cache of other transactions' status: nothing to keep.
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_BroadcastTxnStatus{BroadcastTxnStatus: &kvrpcpb.BroadcastTxnStatusResponse{}}}
	case *tikvpb.BatchCommandsRequest_Request_Empty:
		if d := r.Empty.GetDelayTime(); d > 0 {
			t := time.NewTimer(time.Duration(d) * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_Empty{Empty: &tikvpb.BatchCommandsEmptyResponse{
			TestId: r.Empty.GetTestId()}}}
	}
	return unsupported(req)
}

// unsupported answers a request this store does not serve with an error of
// its kind (a response without one would fail the client's whole stream).
// Responses with no error field of their own carry a region error.
func unsupported(req *tikvpb.BatchCommandsRequest_Request) *tikvpb.BatchCommandsResponse_Response {
	type resp = tikvpb.BatchCommandsResponse_Response
	msg := "basalt store does not serve " + strings.TrimPrefix(fmt.Sprintf("%T", req.GetCmd()), "*tikvpb.BatchCommandsRequest_Request_")
	rerr := &errorpb.Error{Message: msg}
	switch req.GetCmd().(type) {
	case *tikvpb.BatchCommandsRequest_Request_Import:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_Import{Import: &kvrpcpb.ImportResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_RawGet:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawGet{RawGet: &kvrpcpb.RawGetResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_RawBatchGet:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawBatchGet{RawBatchGet: &kvrpcpb.RawBatchGetResponse{RegionError: rerr}}}
	case *tikvpb.BatchCommandsRequest_Request_RawPut:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawPut{RawPut: &kvrpcpb.RawPutResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_RawBatchPut:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawBatchPut{RawBatchPut: &kvrpcpb.RawBatchPutResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_RawDelete:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawDelete{RawDelete: &kvrpcpb.RawDeleteResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_RawBatchDelete:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawBatchDelete{RawBatchDelete: &kvrpcpb.RawBatchDeleteResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_RawScan:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawScan{RawScan: &kvrpcpb.RawScanResponse{RegionError: rerr}}}
	case *tikvpb.BatchCommandsRequest_Request_RawDeleteRange:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawDeleteRange{RawDeleteRange: &kvrpcpb.RawDeleteRangeResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_RawBatchScan:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawBatchScan{RawBatchScan: &kvrpcpb.RawBatchScanResponse{RegionError: rerr}}}
	case *tikvpb.BatchCommandsRequest_Request_Coprocessor:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_Coprocessor{Coprocessor: &coprocessor.Response{OtherError: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_RawCoprocessor:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_RawCoprocessor{RawCoprocessor: &kvrpcpb.RawCoprocessorResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_FlashbackToVersion:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_FlashbackToVersion{FlashbackToVersion: &kvrpcpb.FlashbackToVersionResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_PrepareFlashbackToVersion:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_PrepareFlashbackToVersion{PrepareFlashbackToVersion: &kvrpcpb.PrepareFlashbackToVersionResponse{Error: msg}}}
	case *tikvpb.BatchCommandsRequest_Request_Flush:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_Flush{Flush: &kvrpcpb.FlushResponse{Errors: keyErrors(&kvrpcpb.KeyError{Abort: msg})}}}
	case *tikvpb.BatchCommandsRequest_Request_BufferBatchGet:
		return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_BufferBatchGet{BufferBatchGet: &kvrpcpb.BufferBatchGetResponse{Error: &kvrpcpb.KeyError{Abort: msg}}}}
	}
	// A request of no kind known here (none, or newer than this kvproto)
	// has no response of its kind: answer an empty one.
	return &resp{Cmd: &tikvpb.BatchCommandsResponse_Response_Empty{Empty: &tikvpb.BatchCommandsEmptyResponse{}}}
}

// batchWorkers is how many goroutines serve BatchCommands requests
// between requests. A request's goroutine grows its stack to some KiB; a
// fresh goroutine per request paid for that growth every time (a fifth of
// a store's CPU under point gets), a worker pays once.
const batchWorkers = 64

// startWorkers starts the service's idle workers; they live as long as
// the process.
func (s *Service) startWorkers() {
	s.work = make(chan func())
	for range batchWorkers {
		go func() {
			for f := range s.work {
				f()
			}
		}()
	}
}
