package pd

import (
	"testing"

	"github.com/basalt-db/basalt/testkit"
	"google.golang.org/grpc"
)

// TestGRPCServerOptionsNoBDPPing: PD's gRPC server (etcd's, which PD's
// services share) does not ping a client to size its flow-control
// windows, as the storage node's does not (storenode's
// TestServerOptionsNoBDPPing): with grpcServerOptions no PING comes
// during one call (testkit.PingsForOneCall); with gRPC-Go's defaults (the
// control) one does, as it did for most requests of a SQL node's TSO
// stream.
func TestGRPCServerOptionsNoBDPPing(t *testing.T) {
	if pings := testkit.PingsForOneCall(t, grpc.NewServer()); pings == 0 {
		t.Fatal("control: gRPC-Go's default server sent no PING; the test no longer sees BDP pings")
	}
	if pings := testkit.PingsForOneCall(t, grpc.NewServer(grpcServerOptions()...)); pings != 0 {
		t.Errorf("PD's server sent %d PING frames for one call, want 0", pings)
	}
}
