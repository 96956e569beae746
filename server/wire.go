package server

import (
	"encoding/binary"
	"errors"
)

// This file holds the protocol's basic data types: fixed-size little-endian
// integers, length-encoded integers and strings, and NUL-terminated strings.
//
// A length-encoded integer (int<lenenc>) takes 1, 3, 4 or 9 bytes:
//
//	value < 251          1 byte:  value
//	value < 2^16         0xFC + 2 bytes LE
//	value < 2^24         0xFD + 3 bytes LE
//	otherwise            0xFE + 8 bytes LE
//
// 0xFB as the first byte means NULL in a text result row, and 0xFF starts
// an ERR packet, so neither is ever the first byte of a length.
// A length-encoded string is an int<lenenc> length followed by that many bytes.

// errMalformed reports a packet that ended early or held an impossible value.
// The connection that received it answers ER_MALFORMED_PACKET and closes.
var errMalformed = errors.New("malformed packet")

// lenencNull is the first byte of a NULL value in a text result row.
const lenencNull = 0xfb

func appendUint16(b []byte, v uint16) []byte {
	return append(b, byte(v), byte(v>>8))
}

func appendUint24(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16))
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

func appendUint64(b []byte, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(b, v)
}

func appendLenencInt(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	default:
		return appendUint64(append(b, 0xfe), v)
	}
}

func appendLenencBytes(b []byte, s []byte) []byte {
	return append(appendLenencInt(b, uint64(len(s))), s...)
}

func appendLenencString(b []byte, s string) []byte {
	return append(appendLenencInt(b, uint64(len(s))), s...)
}

func appendNulString(b []byte, s string) []byte {
	return append(append(b, s...), 0)
}

// patchLenenc turns b[start:] into a length-encoded string, given that
// b[start] is a one-byte placeholder reserved before the text was appended.
// Text of fewer than 251 bytes — every number and date — only needs its
// placeholder filled in; longer text is shifted right to make room.
func patchLenenc(b []byte, start int) []byte {
	n := len(b) - start - 1
	if n < 251 {
		b[start] = byte(n)
		return b
	}
	var hdr [9]byte
	h := appendLenencInt(hdr[:0], uint64(n))
	extra := len(h) - 1
	b = append(b, make([]byte, extra)...)
	copy(b[start+len(h):], b[start+1:start+1+n])
	copy(b[start:], h)
	return b
}

// reader decodes a payload front to back. The first read past the end sets
// bad and every later read returns zero values, so a parser can read a whole
// packet and check r.bad once.
type reader struct {
	b   []byte
	pos int
	bad bool
}

func newReader(b []byte) reader { return reader{b: b} }

func (r *reader) remaining() int { return len(r.b) - r.pos }

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || r.remaining() < n {
		r.bad = true
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *reader) uint8() uint8 {
	s := r.take(1)
	if s == nil {
		return 0
	}
	return s[0]
}

func (r *reader) uint16() uint16 {
	s := r.take(2)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(s)
}

func (r *reader) uint32() uint32 {
	s := r.take(4)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(s)
}

func (r *reader) uint64() uint64 {
	s := r.take(8)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(s)
}

// lenencInt reads an int<lenenc>. A NULL marker (0xFB) or an ERR byte
// (0xFF) where a length belongs marks the packet malformed.
func (r *reader) lenencInt() uint64 {
	switch c := r.uint8(); c {
	case 0xfc:
		return uint64(r.uint16())
	case 0xfd:
		s := r.take(3)
		if s == nil {
			return 0
		}
		return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16
	case 0xfe:
		return r.uint64()
	case 0xfb, 0xff:
		r.bad = true
		return 0
	default:
		return uint64(c)
	}
}

func (r *reader) lenencBytes() []byte {
	n := r.lenencInt()
	if n > uint64(r.remaining()) {
		r.bad = true
		return nil
	}
	return r.take(int(n))
}

// nulBytes reads up to the next NUL and skips it. A string that runs to the
// end of the packet without a NUL is accepted, as MySQL does for the last
// field of a packet.
func (r *reader) nulBytes() []byte {
	if r.bad {
		return nil
	}
	rest := r.b[r.pos:]
	for i, c := range rest {
		if c == 0 {
			r.pos += i + 1
			return rest[:i]
		}
	}
	r.pos = len(r.b)
	return rest
}

func (r *reader) rest() []byte {
	if r.bad {
		return nil
	}
	s := r.b[r.pos:]
	r.pos = len(r.b)
	return s
}
