package storenode

import (
	"testing"

	"github.com/basalt-db/basalt/testkit"
	"google.golang.org/grpc"
)

// TestServerOptionsNoBDPPing: the store's gRPC server does not ping a
// client to size its flow-control windows. A call's DATA frame is sent
// over a raw HTTP/2 connection and the server's frames are read until the
// call's trailers: with serverOptions no PING comes; with gRPC-Go's
// defaults (the control) one does, as it did for almost every batch of a
// BatchCommands stream.
func TestServerOptionsNoBDPPing(t *testing.T) {
	cfg := DefaultConfig()
	if pings := testkit.PingsForOneCall(t, grpc.NewServer()); pings == 0 {
		t.Fatal("control: gRPC-Go's default server sent no PING; the test no longer sees BDP pings")
	}
	if pings := testkit.PingsForOneCall(t, grpc.NewServer(serverOptions(cfg)...)); pings != 0 {
		t.Errorf("the store's server sent %d PING frames for one call, want 0", pings)
	}
}
