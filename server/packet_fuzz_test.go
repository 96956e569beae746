package server

import (
	"bufio"
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"testing"
)

// FuzzReadPacket feeds packetIO.readPacket a byte stream and compares what
// it reads, packet by packet, with an independent model of the framing:
// sequence ids from 0 in every command (the server resets them before each
// read), chunks of maxPayload bytes joined with the next, and
// max_allowed_packet counted over the joined payload.
//
// The first input byte picks max_allowed_packet and the mode. In raw mode
// the rest is the stream itself. In chunk mode the rest is a list of chunks
// to frame, so that the fuzzer reaches 16 MiB continuations without 16 MiB
// inputs: an op byte with 0x80 set is a chunk of maxPayload pattern bytes;
// otherwise its low 6 bits are a length whose bytes follow (fewer if the
// input ends first: a cut-off stream). 0x40 gives the chunk a wrong
// sequence id.
func FuzzReadPacket(f *testing.F) {
	f.Add([]byte{0x00, 1, 0, 0, 0, 3})                             // a 1-byte command, max_allowed 0
	f.Add([]byte{0x05, 3, 0, 0, 0, 3, 'a', 'b', 2, 0, 0, 0, 1, 2}) // two packets
	f.Add([]byte{0x05, 3, 0, 0, 1, 3, 'a', 'b'})                   // wrong sequence
	f.Add([]byte{0x05, 0xff, 0xff, 0xff, 0, 3, 'a'})               // a 16 MiB chunk cut off
	f.Add([]byte{0x05, 0, 0, 0})                                   // half a header
	f.Add([]byte{0x88, 0x80, 0x03, 'a', 'b', 'c'})                 // 16 MiB + 3, max_allowed 2*maxPayload
	f.Add([]byte{0x88, 0x80, 0x00})                                // exactly 16 MiB, then the empty chunk
	f.Add([]byte{0x86, 0x80, 0x03, 'a', 'b', 'c'})                 // 16 MiB + 3 over a limit of 16 MiB - 1
	f.Add([]byte{0x88, 0x80, 0x80, 0x80})                          // continuations, then the stream ends
	f.Add([]byte{0x88, 0x80, 0x41, 'x'})                           // continuation out of order
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		limits := []int{0, 1, 4, 16, 255, 1000, maxPayload - 1, maxPayload, maxPayload + 1, 2 * maxPayload, 64 << 20}
		maxAllowed := limits[int(in[0]&0x7f)%len(limits)]
		var segs []segment
		if in[0]&0x80 == 0 {
			segs = []segment{{lit: in[1:]}}
		} else {
			segs = chunkSegments(in[1:])
		}
		got := readAll(newPacketIO(readWriter{&segReader{segs: segs}}, maxAllowed))
		want := modelReadAll(bufio.NewReader(&segReader{segs: segs}), maxAllowed)
		if len(got.packets) != len(want.packets) {
			t.Fatalf("read %d packets %v, model %d %v", len(got.packets), got.packets, len(want.packets), want.packets)
		}
		for i := range got.packets {
			if got.packets[i] != want.packets[i] {
				t.Fatalf("packet %d: read %v, model %v", i, got.packets[i], want.packets[i])
			}
			if got.packets[i].n > maxAllowed {
				t.Fatalf("packet %d of %d bytes read past max_allowed_packet %d", i, got.packets[i].n, maxAllowed)
			}
		}
		if got.err != want.err {
			t.Fatalf("read ended with %v, model with %v", got.err, want.err)
		}
	})
}

// packetSum identifies a payload without keeping it.
type packetSum struct {
	n   int
	crc uint32
}

type readResult struct {
	packets []packetSum
	err     error
}

// readAll reads packets as the command loop does, resetting the sequence
// before each, until an error.
func readAll(p *packetIO) readResult {
	var res readResult
	for {
		p.resetSeq()
		b, err := p.readPacket()
		if err != nil {
			res.err = err
			return res
		}
		res.packets = append(res.packets, packetSum{len(b), crc32.ChecksumIEEE(b)})
	}
}

// modelReadAll is the framing as the protocol documentation states it,
// written apart from packetIO: the stream ending between packets is
// io.EOF, anywhere else io.ErrUnexpectedEOF.
func modelReadAll(r *bufio.Reader, maxAllowed int) readResult {
	var res readResult
	for {
		var seq byte
		total := 0
		h := crc32.NewIEEE()
		for {
			var hdr [4]byte
			if n, err := io.ReadFull(r, hdr[:]); err != nil {
				if n == 0 && total == 0 && seq == 0 {
					res.err = io.EOF
				} else {
					res.err = io.ErrUnexpectedEOF
				}
				return res
			}
			n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
			if hdr[3] != seq {
				res.err = errPacketsOutOfOrder
				return res
			}
			seq++
			if total+n > maxAllowed {
				res.err = errPacketTooLarge
				return res
			}
			if _, err := io.CopyN(h, r, int64(n)); err != nil {
				res.err = io.ErrUnexpectedEOF
				return res
			}
			total += n
			if n != 1<<24-1 {
				break
			}
		}
		res.packets = append(res.packets, packetSum{total, h.Sum32()})
	}
}

// A segment of a stream: literal bytes, or fill bytes of value fill.
type segment struct {
	lit  []byte
	fill byte
	n    int
}

// chunkSegments frames the chunks that ops describe (see FuzzReadPacket).
// At most four chunks are of maxPayload bytes, to bound the memory a run
// takes.
func chunkSegments(ops []byte) []segment {
	var segs []segment
	var seq byte
	full := 0
	for len(ops) > 0 {
		op := ops[0]
		ops = ops[1:]
		s := seq
		if op&0x40 != 0 {
			s += 1 + op&0x3f
		}
		seq++
		if op&0x80 != 0 && full < 4 {
			full++
			segs = append(segs, segment{lit: []byte{0xff, 0xff, 0xff, s}}, segment{fill: op, n: maxPayload})
			continue
		}
		n := int(op & 0x3f)
		payload := ops[:min(n, len(ops))]
		ops = ops[len(payload):]
		segs = append(segs, segment{lit: []byte{byte(n), 0, 0, s}}, segment{lit: payload})
		if n < maxPayload {
			seq = 0 // the packet is complete: the next one starts a new command
		}
	}
	return segs
}

// segReader reads the concatenation of its segments.
type segReader struct {
	segs []segment
	off  int // into segs[0]
}

func (r *segReader) Read(p []byte) (int, error) {
	for len(r.segs) > 0 {
		s := r.segs[0]
		size := len(s.lit)
		if s.lit == nil {
			size = s.n
		}
		if r.off == size {
			r.segs, r.off = r.segs[1:], 0
			continue
		}
		n := min(len(p), size-r.off)
		if s.lit != nil {
			copy(p, s.lit[r.off:r.off+n])
		} else {
			fill := bytes.Repeat([]byte{s.fill}, min(n, 64<<10))
			for i := 0; i < n; i += copy(p[i:n], fill) {
			}
		}
		r.off += n
		return n, nil
	}
	return 0, io.EOF
}

// readWriter gives a reader the io.ReadWriter that newPacketIO takes.
type readWriter struct{ io.Reader }

func (readWriter) Write(p []byte) (int, error) { return 0, errors.New("read-only") }
