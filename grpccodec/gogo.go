// Package grpccodec holds the gRPC codec of Basalt's kvproto traffic: the
// storage node's server and the SQL node's read streams (store/tikv).
package grpccodec

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec Gogo falls back to
	"google.golang.org/grpc/mem"
)

// gogoMessage is a message of kvproto (or any gogoproto package): it
// sizes and marshals itself, and unmarshals itself copying what it keeps.
type gogoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// Gogo is the gRPC codec for kvproto's messages. kvproto's messages are
// gogoproto's, which gRPC's own codec marshals through protobuf's legacy
// path: it sizes the message (one walk of it), has the message marshal
// itself into a slice of its own (a second walk and an allocation the size
// of the message), then copies that slice into gRPC's pooled buffer. A
// KvScan's response of 100 sysbench rows is ~21 KB, so that was an
// allocation and a copy of 21 KB for every range query, and the garbage
// the store's GC then chased. Gogo sizes the message once and
// marshals it straight into the pooled buffer (a small one into a slice
// of its size, as gRPC does below its pooling threshold), and unmarshals
// a request from gRPC's buffer without materializing it first when it came
// in one piece. Messages that are not gogoproto's (the health service's)
// go to gRPC's codec.
//
// The wire bytes are the same as gRPC's codec writes (gogo_test.go).
type Gogo struct {
	fallback encoding.CodecV2
}

// NewGogo returns the codec; it falls back to gRPC's proto codec.
func NewGogo() Gogo {
	return Gogo{fallback: encoding.GetCodecV2("proto")}
}

// Name is gRPC's codec's: the content-subtype clients send and expect.
func (c Gogo) Name() string { return c.fallback.Name() }

func (c Gogo) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(gogoMessage)
	if !ok {
		return c.fallback.Marshal(v)
	}
	size := m.Size()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if err := marshalSized(m, buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if err := marshalSized(m, (*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// marshalSized marshals m into buf, which is m.Size() long.
// (MarshalToSizedBuffer writes from the end of buf backwards.)
func marshalSized(m gogoMessage, buf []byte) error {
	n, err := m.MarshalToSizedBuffer(buf)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("grpc codec: %T marshalled %d bytes, sized %d", m, n, len(buf))
	}
	return nil
}

func (c Gogo) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(gogoMessage)
	if !ok {
		return c.fallback.Unmarshal(data, v)
	}
	// gogoproto's Unmarshal copies the bytes it keeps, so the message
	// outlives gRPC's buffers, which gRPC frees once this returns.
	if len(data) == 1 {
		return m.Unmarshal(data[0].ReadOnlyData())
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.Unmarshal(buf.ReadOnlyData())
}
