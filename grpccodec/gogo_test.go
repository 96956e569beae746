package grpccodec

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/grpc/encoding"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
)

// scanResponse100 is the stream's answer to a range query of sysbench's:
// 100 pairs of a row key and a 190-byte value (~21 KB marshalled).
func scanResponse100() *tikvpb.BatchCommandsResponse {
	scan := &kvrpcpb.ScanResponse{}
	for i := range 100 {
		scan.Pairs = append(scan.Pairs, &kvrpcpb.KvPair{Key: fmt.Appendf(nil, "t\x80\x00\x00\x00\x00\x00\x00\x01_r%08d", i), Value: bytes.Repeat([]byte{'v'}, 190)})
	}
	return &tikvpb.BatchCommandsResponse{RequestIds: []uint64{7},
		Responses: []*tikvpb.BatchCommandsResponse_Response{{Cmd: &tikvpb.BatchCommandsResponse_Response_Scan{Scan: scan}}}}
}

// TestGogoCodecWire: the codec writes the bytes gRPC's codec
// writes, and reads them back, from one buffer or several, into the same
// message; a message that is not gogoproto's goes to gRPC's codec.
func TestGogoCodecWire(t *testing.T) {
	grpcCodec, ours := encoding.GetCodecV2("proto"), NewGogo()
	msgs := []any{
		scanResponse100(),
		&tikvpb.BatchCommandsResponse{RequestIds: []uint64{1, 2},
			Responses: []*tikvpb.BatchCommandsResponse_Response{
				{Cmd: &tikvpb.BatchCommandsResponse_Response_Get{Get: &kvrpcpb.GetResponse{Value: []byte("v")}}},
				{Cmd: &tikvpb.BatchCommandsResponse_Response_Get{Get: &kvrpcpb.GetResponse{NotFound: true}}}}},
		&tikvpb.BatchCommandsRequest{RequestIds: []uint64{3},
			Requests: []*tikvpb.BatchCommandsRequest_Request{{Cmd: &tikvpb.BatchCommandsRequest_Request_Get{
				Get: &kvrpcpb.GetRequest{Context: &kvrpcpb.Context{RegionId: 2}, Key: []byte("k"), Version: 9}}}}},
		&kvrpcpb.GetResponse{},
		&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING},
	}
	for _, m := range msgs {
		t.Run(fmt.Sprintf("%T", m), func(t *testing.T) {
			want, err := grpcCodec.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ours.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Materialize(), want.Materialize()) {
				t.Fatalf("marshalled %x, gRPC's codec %x", got.Materialize(), want.Materialize())
			}
			wire := want.Materialize()
			half := len(wire) / 2
			for _, data := range []mem.BufferSlice{
				{mem.SliceBuffer(bytes.Clone(wire))},
				{mem.SliceBuffer(bytes.Clone(wire[:half])), mem.SliceBuffer(bytes.Clone(wire[half:]))},
			} {
				back := reflect.New(reflect.TypeOf(m).Elem()).Interface()
				if err := ours.Unmarshal(data, back); err != nil {
					t.Fatal(err)
				}
				// What was read must not point into gRPC's buffers, which
				// gRPC reuses once Unmarshal returns.
				for _, b := range data {
					clear(b.ReadOnlyData())
				}
				again, err := grpcCodec.Marshal(back)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again.Materialize(), wire) {
					t.Fatalf("read back %v, want %v", back, m)
				}
			}
			got.Free()
			want.Free()
		})
	}
}

// TestGogoCodecMarshalGarbage: marshalling a range query's response (~21
// KB) leaves no garbage of its size: the codec writes into gRPC's
// pooled buffer, which the transport frees once sent. gRPC's codec, the
// control, has the message marshal itself into a new slice first.
func TestGogoCodecMarshalGarbage(t *testing.T) {
	m := scanResponse100()
	size := m.Size()
	if perOp := marshalGarbage(t, encoding.GetCodecV2("proto"), m); perOp < int64(size) {
		t.Fatalf("control: gRPC's codec allocated %d bytes per marshal of %d; the test no longer sees its copy", perOp, size)
	}
	perOp := marshalGarbage(t, NewGogo(), m)
	t.Logf("%d bytes allocated per marshal of a %d-byte message", perOp, size)
	if perOp > int64(size)/8 {
		t.Errorf("the codec allocated %d bytes per marshal of a %d-byte message, want under %d", perOp, size, size/8)
	}
}

// marshalGarbage returns the bytes allocated per Marshal (and Free, as
// the transport does once it has written the message) of m by c.
func marshalGarbage(t *testing.T, c encoding.CodecV2, m any) int64 {
	const n = 200
	marshal := func() {
		data, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		data.Free()
	}
	for range 10 {
		marshal() // fill the pools
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		marshal()
	}
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc-before.TotalAlloc) / n
}
