package testkit

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The servers' gRPC options are checked at the frame level: gRPC-Go, left
// to size its flow-control windows itself, pings the client after the
// first frame that follows each ping's ack (BDP estimation), a PING, its
// ack and a WINDOW_UPDATE for most requests of a busy stream. With fixed
// windows it does not.

// PingsForOneCall serves gRPC's health service on s, makes one Check call
// by hand (HTTP/2 frames, headers in HPACK's literal form) and returns
// how many PING frames (not acks) the server sent before the call's
// trailers.
func PingsForOneCall(t testing.TB, s *grpc.Server) int {
	t.Helper()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()
	conn, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))

	const (
		frameData     = 0x0
		frameHeaders  = 0x1
		frameSettings = 0x4
		framePing     = 0x6
		flagEndStream = 0x1
		flagAck       = 0x1
		flagEndHeader = 0x4
	)
	frame := func(typ, flags byte, stream uint32, payload []byte) []byte {
		h := make([]byte, 9, 9+len(payload))
		h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
		h[3], h[4] = typ, flags
		binary.BigEndian.PutUint32(h[5:], stream)
		return append(h, payload...)
	}
	var hdr []byte
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"},
		{":path", "/grpc.health.v1.Health/Check"}, {":authority", "testkit"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		// Literal header field without indexing, new name (RFC 7541 6.2.2).
		hdr = append(hdr, 0x00, byte(len(kv[0])))
		hdr = append(hdr, kv[0]...)
		hdr = append(hdr, byte(len(kv[1])))
		hdr = append(hdr, kv[1]...)
	}
	var out []byte
	out = append(out, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"...)
	out = append(out, frame(frameSettings, 0, 0, nil)...)
	out = append(out, frame(frameHeaders, flagEndHeader, 1, hdr)...)
	// An empty HealthCheckRequest: no compression, length 0.
	out = append(out, frame(frameData, flagEndStream, 1, []byte{0, 0, 0, 0, 0})...)
	if _, err := conn.Write(out); err != nil {
		t.Fatal(err)
	}

	r := bufio.NewReader(conn)
	pings := 0
	for {
		var h [9]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			t.Fatalf("reading the server's frames: %v", err)
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		typ, flags, stream := h[3], h[4], binary.BigEndian.Uint32(h[5:])&0x7fffffff
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			t.Fatal(err)
		}
		switch {
		case typ == framePing && flags&flagAck == 0:
			pings++
		case typ == frameSettings && flags&flagAck == 0:
			if _, err := conn.Write(frame(frameSettings, flagAck, 0, nil)); err != nil {
				t.Fatal(err)
			}
		case typ == frameHeaders && stream == 1 && flags&flagEndStream != 0:
			return pings // the call's trailers: the server has read the DATA frame
		}
	}
}
