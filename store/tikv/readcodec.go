package tikv

import (
	"fmt"

	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec readCodec falls back to
	"google.golang.org/grpc/mem"
)

// readCodec marshals kvproto's (gogoproto's) messages with their own
// methods, as storenode's codec does; gRPC's proto codec would take them
// through protobuf's legacy path (sizing each message twice and copying
// it). Unmarshal copies every bytes field out of data (gogoproto's
// generated code does), so data is not kept; a BatchCommandsResponse is
// unmarshalled from a copy of data that its scans' pairs keep
// (readdecode.go).
type readCodec struct {
	fallback encoding.CodecV2
}

type gogoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

func newReadCodec() readCodec {
	return readCodec{fallback: encoding.GetCodecV2("proto")}
}

func (c readCodec) Name() string { return c.fallback.Name() }

func (c readCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(gogoMessage)
	if !ok {
		return c.fallback.Marshal(v)
	}
	buf := make([]byte, m.Size())
	n, err := m.MarshalToSizedBuffer(buf)
	if err != nil {
		return nil, err
	}
	if n != len(buf) {
		return nil, fmt.Errorf("grpc codec: %T marshalled %d bytes, sized %d", m, n, len(buf))
	}
	return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
}

func (c readCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if br, ok := v.(*tikvpb.BatchCommandsResponse); ok {
		// A fresh copy: the scans' pairs keep their keys and values in
		// it (readdecode.go), and data goes back to gRPC's pool.
		return unmarshalBatchResponse(br, data.Materialize())
	}
	m, ok := v.(gogoMessage)
	if !ok {
		return c.fallback.Unmarshal(data, v)
	}
	if len(data) == 1 {
		return m.Unmarshal(data[0].ReadOnlyData())
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.Unmarshal(buf.ReadOnlyData())
}
