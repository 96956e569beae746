package tikv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	tikvconfig "github.com/tikv/client-go/v2/config"
	"google.golang.org/grpc"
)

// fakeReads is a Tikv server whose BatchCommands answers each Get with
// the key as the value; with hold set it answers nothing (and answers
// what it held with the next message it answers), with fail set it ends
// every stream at its next message, with short set it sends one response
// fewer than request ids.
type fakeReads struct {
	tikvpb.UnimplementedTikvServer
	mu      sync.Mutex
	hold    bool
	fail    bool
	short   bool
	streams int
	msgs    int
}

type heldRead struct {
	id  uint64
	key []byte
}

func (f *fakeReads) BatchCommands(stream tikvpb.Tikv_BatchCommandsServer) error {
	f.mu.Lock()
	f.streams++
	f.mu.Unlock()
	var held []heldRead
	for {
		msg, err := stream.Recv()
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.msgs++
		hold, fail, short := f.hold, f.fail, f.short
		f.mu.Unlock()
		if fail {
			return errors.New("stream failed")
		}
		for i, r := range msg.GetRequests() {
			held = append(held, heldRead{msg.GetRequestIds()[i], r.GetGet().GetKey()})
		}
		if hold {
			continue
		}
		out := &tikvpb.BatchCommandsResponse{}
		for _, h := range held {
			out.RequestIds = append(out.RequestIds, h.id)
			out.Responses = append(out.Responses, &tikvpb.BatchCommandsResponse_Response{
				Cmd: &tikvpb.BatchCommandsResponse_Response_Get{Get: &kvrpcpb.GetResponse{Value: h.key}}})
		}
		held = held[:0]
		if short {
			out.Responses = out.Responses[:len(out.Responses)-1]
		}
		if err := stream.Send(out); err != nil {
			return err
		}
	}
}

func (f *fakeReads) set(hold, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold, f.fail = hold, fail
}

func (f *fakeReads) counts() (streams, msgs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams, f.msgs
}

func serveFakeReads(t *testing.T) (string, *fakeReads) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeReads{}
	srv := grpc.NewServer()
	tikvpb.RegisterTikvServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), f
}

func getReq(key string) *tikvpb.BatchCommandsRequest_Request {
	return &tikvpb.BatchCommandsRequest_Request{Cmd: &tikvpb.BatchCommandsRequest_Request_Get{Get: &kvrpcpb.GetRequest{Key: []byte(key)}}}
}

// callUntil calls until the read stream answers (the first calls fail
// while the stream is made in the background).
func callUntil(t *testing.T, c *readClient, addr, key string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, err := c.call(context.Background(), addr, getReq(key), time.Minute)
		if err == nil {
			if got := string(resp.GetGet().GetValue()); got != key {
				t.Fatalf("answer %q to a get of %q", got, key)
			}
			return
		}
		if !errors.Is(err, errReadStream) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer on the read stream: %v", err)
		}
	}
}

// TestReadStream: calls from many goroutines are answered, each its own,
// on one stream (in fewer messages than calls when they overlap); a
// stream the store ends fails the calls on it, and the next stream is
// made no sooner than reopenAfter; a store that stops answering fails
// a call after the call's timeout.
func TestReadStream(t *testing.T) {
	addr, f := serveFakeReads(t)
	c := newReadClient()
	defer c.close()
	callUntil(t, c, addr, "k")

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				key := fmt.Sprintf("k%d-%d", g, i)
				resp, err := c.call(context.Background(), addr, getReq(key), time.Minute)
				if err != nil {
					errs <- err
					return
				}
				if got := string(resp.GetGet().GetValue()); got != key {
					errs <- fmt.Errorf("answer %q to a get of %q", got, key)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	streams, msgs := f.counts()
	if streams != 1 {
		t.Fatalf("%d streams, want 1", streams)
	}
	t.Logf("%d calls in %d messages", 64*50+1, msgs)

	// The store ends the stream: the call fails, and so do calls until
	// reopenAfter has passed; then a new stream answers.
	f.set(false, true)
	if _, err := c.call(context.Background(), addr, getReq("x"), time.Minute); !errors.Is(err, errReadStream) {
		t.Fatalf("call on a stream the store ended: %v, want errReadStream", err)
	}
	f.set(false, false)
	broke := time.Now()
	callUntil(t, c, addr, "y")
	if d := time.Since(broke); d < reopenAfter*9/10 {
		t.Fatalf("stream made again after %v, want at least %v", d, reopenAfter)
	}
	if streams, _ := f.counts(); streams != 2 {
		t.Fatalf("%d streams, want 2", streams)
	}

	// The store holds the call: its context ends it; past its timeout the
	// watch breaks the stream.
	f.set(true, false)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := c.call(ctx, addr, getReq("held"), time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held call: %v, want its context's deadline", err)
	}
	start := time.Now()
	if _, err := c.call(context.Background(), addr, getReq("held"), 100*time.Millisecond); !errors.Is(err, errReadStream) {
		t.Fatalf("held call: %v, want errReadStream", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second {
		t.Fatalf("held call failed after %v", d)
	}
}

// TestReadStreamTimeout: a call the store does not answer within its
// timeout fails on its own; a call waiting on the same stream with a
// longer timeout is answered on it, and the stream stays. Two failures
// without an answer in between send callers to client-go (no stream)
// for a second; then the stream answers again.
func TestReadStreamTimeout(t *testing.T) {
	addr, f := serveFakeReads(t)
	c := newReadClient()
	defer c.close()
	callUntil(t, c, addr, "k")

	f.set(true, false)
	_, before := f.counts()
	long := make(chan error, 1)
	go func() {
		resp, err := c.call(context.Background(), addr, getReq("long"), time.Minute)
		if err == nil && string(resp.GetGet().GetValue()) != "long" {
			err = fmt.Errorf("answer %q to a get of %q", resp.GetGet().GetValue(), "long")
		}
		long <- err
	}()
	for _, m := f.counts(); m == before; _, m = f.counts() {
		time.Sleep(time.Millisecond) // until the store holds it
	}
	start := time.Now()
	if _, err := c.call(context.Background(), addr, getReq("late"), 100*time.Millisecond); !errors.Is(err, errReadStream) {
		t.Fatalf("late call: %v, want errReadStream", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second {
		t.Fatalf("late call failed after %v", d)
	}
	f.set(false, false)
	callUntil(t, c, addr, "next")
	select {
	case err := <-long:
		if err != nil {
			t.Fatalf("call with a long timeout, on the stream of a late call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call with a long timeout not answered")
	}
	if streams, _ := f.counts(); streams != 1 {
		t.Fatalf("%d streams, want 1", streams)
	}

	// Two late calls in a row: callers back off for a second.
	f.set(true, false)
	for range 2 {
		if _, err := c.call(context.Background(), addr, getReq("late"), 50*time.Millisecond); !errors.Is(err, errReadStream) {
			t.Fatalf("late call: %v, want errReadStream", err)
		}
	}
	f.set(false, false)
	_, msgs := f.counts()
	if _, err := c.call(context.Background(), addr, getReq("k"), time.Minute); !errors.Is(err, errReadStream) {
		t.Fatalf("call while backing off: %v, want errReadStream", err)
	}
	if _, m := f.counts(); m != msgs {
		t.Fatal("call sent while backing off")
	}
	backedOff := time.Now()
	callUntil(t, c, addr, "after")
	if d := time.Since(backedOff); d > 5*time.Second {
		t.Fatalf("stream answered again after %v", d)
	}
}

// TestReadStreamShortMessage: a message with fewer responses than request
// ids breaks the stream at once (which answer is whose is not known):
// the call fails then, not at its timeout.
func TestReadStreamShortMessage(t *testing.T) {
	addr, f := serveFakeReads(t)
	c := newReadClient()
	defer c.close()
	callUntil(t, c, addr, "k")
	f.mu.Lock()
	f.short = true
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.call(ctx, addr, getReq("x"), time.Minute); !errors.Is(err, errReadStream) {
		t.Fatalf("call answered by a short message: %v, want errReadStream", err)
	}
}

// TestReadStreamBadTLS: with TLS configured but its files unreadable, no
// stream is made (reads go through client-go, which fails the same way),
// rather than a stream in plaintext.
func TestReadStreamBadTLS(t *testing.T) {
	addr, f := serveFakeReads(t)
	defer tikvconfig.UpdateGlobal(func(c *tikvconfig.Config) {
		c.Security.ClusterSSLCA = filepath.Join(t.TempDir(), "missing-ca.pem")
	})()
	c := newReadClient()
	defer c.close()
	for range 20 {
		if _, err := c.call(context.Background(), addr, getReq("k"), time.Minute); !errors.Is(err, errReadStream) {
			t.Fatalf("call with TLS unreadable: %v, want errReadStream", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if streams, _ := f.counts(); streams != 0 {
		t.Fatalf("%d streams with TLS unreadable, want 0", streams)
	}
}
