package server

import (
	"bufio"
	"errors"
	"io"
	"slices"
)

// Every message in either direction travels in packets:
//
//	┌───────────────────┬──────────┬───────────────────────────┐
//	│ payload length    │ sequence │ payload                   │
//	│ 3 bytes, LE       │ 1 byte   │ length bytes              │
//	└───────────────────┴──────────┴───────────────────────────┘
//
// A payload of maxPayload (0xFFFFFF) bytes or more is split into chunks of
// exactly maxPayload bytes, the last chunk shorter — and possibly empty, so a
// chunk of exactly maxPayload bytes always announces another one. The reader
// joins the chunks back into one payload.
//
// The sequence id is 0 in the first packet of every command the client sends
// and goes up by one (mod 256) with every packet after it, in both directions,
// until the response is complete. The handshake is one exchange: the server's
// greeting is packet 0.

const (
	maxPayload = 1<<24 - 1

	// flushThreshold is how much output a connection buffers before it writes
	// in the middle of a response. Small responses — a point select — are
	// written with a single write when the response is complete.
	flushThreshold = 64 << 10

	// Buffers grown past maxRetainedBuf for one large packet are dropped once
	// that packet is done, so idle connections stay small.
	maxRetainedBuf = 1 << 20
	initialBufSize = 16 << 10
)

var (
	// errPacketTooLarge: the client sent a packet larger than max_allowed_packet.
	errPacketTooLarge = errors.New("packet larger than max_allowed_packet")
	// errPacketsOutOfOrder: a packet arrived with the wrong sequence id.
	errPacketsOutOfOrder = errors.New("packets out of order")
)

// packetIO frames one connection's packets. It is owned by the connection's
// goroutine and is not safe for concurrent use.
//
// Output is assembled in wbuf and written by flush, normally once per
// response. A packet under construction starts with begin, has its payload
// appended to wbuf by the caller, and ends with end, which fills in its
// header (and splits it, if it grew past maxPayload).
type packetIO struct {
	r   *bufio.Reader
	w   io.Writer
	seq uint8

	// maxAllowed bounds the payload the client may send (max_allowed_packet).
	maxAllowed int

	rbuf []byte  // payload of the last packet read; reused
	hdr  [4]byte // header being read (a local would escape to the heap)

	wbuf  []byte // complete packets not yet written, then the open packet
	start int    // offset in wbuf of the open packet's header, or -1

	// err is the first write error; once set, every later flush is a no-op
	// and the connection is closed at the end of the command.
	err error
}

func newPacketIO(rw io.ReadWriter, maxAllowed int) *packetIO {
	return &packetIO{
		r:          bufio.NewReaderSize(rw, initialBufSize),
		w:          rw,
		maxAllowed: maxAllowed,
		wbuf:       make([]byte, 0, initialBufSize),
		start:      -1,
	}
}

// resetSeq starts a new exchange: the next packet read must be packet 0.
func (p *packetIO) resetSeq() {
	p.seq = 0
	if cap(p.rbuf) > maxRetainedBuf {
		p.rbuf = nil
	}
}

// readPacket returns the next payload, joined from as many chunks as it
// spans. The slice is valid until the next call.
func (p *packetIO) readPacket() ([]byte, error) {
	p.rbuf = p.rbuf[:0]
	for first := true; ; first = false {
		hdr := p.hdr[:]
		if _, err := io.ReadFull(p.r, hdr); err != nil {
			// The stream may end between packets, not inside one: a
			// continuation chunk that never comes is a cut-off packet.
			if err == io.EOF && !first {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if hdr[3] != p.seq {
			p.seq = hdr[3] + 1 // answer in the client's numbering
			return nil, errPacketsOutOfOrder
		}
		p.seq++
		if len(p.rbuf)+n > p.maxAllowed {
			return nil, errPacketTooLarge
		}
		off := len(p.rbuf)
		p.rbuf = slices.Grow(p.rbuf, n)[:off+n]
		if _, err := io.ReadFull(p.r, p.rbuf[off:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if n < maxPayload {
			return p.rbuf, nil
		}
	}
}

// begin opens a packet; the caller appends its payload to p.wbuf.
func (p *packetIO) begin() {
	p.start = len(p.wbuf)
	p.wbuf = append(p.wbuf, 0, 0, 0, 0)
}

// end closes the open packet: it writes the header, splits a payload of
// maxPayload bytes or more into chunks, and writes buffered output out once
// it passes flushThreshold.
func (p *packetIO) end() {
	n := len(p.wbuf) - p.start - 4
	if n < maxPayload {
		h := p.wbuf[p.start:]
		h[0], h[1], h[2], h[3] = byte(n), byte(n>>8), byte(n>>16), p.seq
		p.seq++
	} else {
		p.split(n)
	}
	p.start = -1
	if len(p.wbuf) >= flushThreshold {
		p.flush()
	}
}

// split rewrites the open packet's n-byte payload as chunks in place: chunk
// i moves right by 4*i bytes to make room for the headers of chunks 1..i.
func (p *packetIO) split(n int) {
	chunks := n/maxPayload + 1
	base := p.start
	p.wbuf = slices.Grow(p.wbuf, 4*(chunks-1))[:len(p.wbuf)+4*(chunks-1)]
	for i := chunks - 1; i >= 0; i-- {
		size := min(maxPayload, n-i*maxPayload)
		from := base + 4 + i*maxPayload
		to := base + 4 + i*(maxPayload+4)
		copy(p.wbuf[to:to+size], p.wbuf[from:from+size])
	}
	for i := 0; i < chunks; i++ {
		size := min(maxPayload, n-i*maxPayload)
		h := p.wbuf[base+i*(maxPayload+4):]
		h[0], h[1], h[2], h[3] = byte(size), byte(size>>8), byte(size>>16), p.seq
		p.seq++
	}
}

// abort drops the open packet, if any, leaving complete packets in place.
func (p *packetIO) abort() {
	if p.start >= 0 {
		p.wbuf = p.wbuf[:p.start]
		p.start = -1
	}
}

// writePacket writes one whole payload as a packet.
func (p *packetIO) writePacket(payload []byte) {
	p.begin()
	p.wbuf = append(p.wbuf, payload...)
	p.end()
}

// flush writes out buffered packets. It must not be called while a packet
// is open.
func (p *packetIO) flush() error {
	if p.err == nil && len(p.wbuf) > 0 {
		_, p.err = p.w.Write(p.wbuf)
	}
	if cap(p.wbuf) > maxRetainedBuf {
		p.wbuf = make([]byte, 0, initialBufSize)
	} else {
		p.wbuf = p.wbuf[:0]
	}
	return p.err
}
