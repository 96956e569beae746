package tikv

import (
	"github.com/basalt-db/basalt/grpccodec"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/grpc/mem"
)

// readCodec is grpccodec's (kvproto's messages marshalled and
// unmarshalled by their own methods, as the storage node's server does),
// except that a BatchCommandsResponse is unmarshalled from a copy of data
// that its scans' pairs keep (readdecode.go).
type readCodec struct {
	grpccodec.Gogo
}

func newReadCodec() readCodec {
	return readCodec{grpccodec.NewGogo()}
}

func (c readCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if br, ok := v.(*tikvpb.BatchCommandsResponse); ok {
		// A fresh copy: the scans' pairs keep their keys and values in
		// it (readdecode.go), and data goes back to gRPC's pool.
		return unmarshalBatchResponse(br, data.Materialize())
	}
	return c.Gogo.Unmarshal(data, v)
}
