package pd_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/basalt-db/basalt/pd"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestCloseEndsTSOStream: Close returns promptly while a client holds a
// TSO stream open, and the stream ends. The Tso handler reads on its own
// goroutine, so only the stream's end returns it: Close stops the gRPC
// servers etcd registered PD's services on. Without that, etcd's Close
// waits (its graceful stop, ~7 s) for the client to end the stream.
func TestCloseEndsTSOStream(t *testing.T) {
	ports := freePorts(t, 2)
	cfg := pd.DefaultConfig()
	cfg.Name, cfg.DataDir, cfg.LogLevel = "pd1", filepath.Join(t.TempDir(), "pd"), "error"
	cfg.ClientURLs = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	cfg.PeerURLs = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := pd.NewServer(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	for deadline := time.Now().Add(30 * time.Second); !s.IsLeader(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("PD does not lead")
		}
	}
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", ports[0]), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := pdpb.NewPDClient(conn).Tso(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := 0; i < 3; i++ {
		if err := stream.Send(&pdpb.TsoRequest{Header: &pdpb.RequestHeader{ClusterId: s.ClusterID()}, Count: 2}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		ts := resp.GetTimestamp().GetPhysical()<<18 | resp.GetTimestamp().GetLogical()
		if resp.GetCount() != 2 || ts <= last {
			t.Fatalf("response %d: count %d, timestamp %d after %d", i, resp.GetCount(), ts, last)
		}
		last = ts
	}
	start := time.Now()
	s.Close()
	closed = true
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v with a TSO stream open, want < 3s", d)
	}
	recvDone := make(chan error, 1)
	go func() { _, err := stream.Recv(); recvDone <- err }()
	select {
	case err := <-recvDone:
		if err == nil {
			t.Error("the TSO stream answered after Close")
		}
	case <-time.After(5 * time.Second):
		t.Error("the TSO stream is still open 5 s after Close")
	}
}
