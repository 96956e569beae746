// Package codec holds memcomparable encodings: byte strings and numbers
// encoded so that comparing the encodings bytewise orders them as the
// values order. Composite keys are concatenations of such encodings, so the
// encoding of each part must also be self-delimiting.
package codec

import (
	"encoding/binary"
	"errors"
	"math"
)

// ErrCorrupt reports an encoding that cannot be decoded.
var ErrCorrupt = errors.New("codec: corrupt encoding")

const (
	groupSize = 8
	groupMark = 0xFF
	pad       = 0x00
)

// EncodeBytes appends the memcomparable encoding of b to dst.
//
// The encoding splits b into groups of 8 bytes; a group shorter than 8 is
// padded with zeros. Each group is followed by a marker byte, 0xFF minus the
// number of pad bytes in the group:
//
//	[b0 … b7][0xFF][b8 … b15][0xFF] … [bn … 0 0 0][0xFF-3]
//
// Every encoding ends with a group whose marker is below 0xFF (an empty b
// encodes as eight zeros and 0xF7), which makes the encoding self-delimiting
// and keeps the order of b.
func EncodeBytes(dst, b []byte) []byte {
	n := (len(b)/groupSize + 1) * (groupSize + 1)
	dst = growTo(dst, n)
	for i := 0; i <= len(b); i += groupSize {
		rest := len(b) - i
		if rest >= groupSize {
			dst = append(dst, b[i:i+groupSize]...)
			dst = append(dst, groupMark)
			continue
		}
		dst = append(dst, b[i:]...)
		for j := rest; j < groupSize; j++ {
			dst = append(dst, pad)
		}
		dst = append(dst, groupMark-byte(groupSize-rest))
	}
	return dst
}

// EncodedBytesLen is the length of EncodeBytes' output for n bytes.
func EncodedBytesLen(n int) int { return (n/groupSize + 1) * (groupSize + 1) }

// DecodeBytes decodes an EncodeBytes encoding at the front of b, appending
// the decoded bytes to buf. It returns the rest of b and the decoded bytes.
func DecodeBytes(b, buf []byte) (rest, decoded []byte, err error) {
	for {
		if len(b) < groupSize+1 {
			return nil, nil, ErrCorrupt
		}
		group, marker := b[:groupSize], b[groupSize]
		b = b[groupSize+1:]
		padCount := groupMark - marker
		if padCount > groupSize {
			return nil, nil, ErrCorrupt
		}
		real := groupSize - int(padCount)
		buf = append(buf, group[:real]...)
		if padCount != 0 {
			for _, p := range group[real:] {
				if p != pad {
					return nil, nil, ErrCorrupt
				}
			}
			return b, buf, nil
		}
	}
}

// EncodeUint appends v as 8 big-endian bytes, which order as v does.
func EncodeUint(dst []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, v)
}

// EncodeUintDesc appends v so that larger values order first.
func EncodeUintDesc(dst []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, ^v)
}

// EncodeInt appends v as 8 bytes that order as signed integers do.
func EncodeInt(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

// DecodeUint decodes EncodeUint's output at the front of b.
func DecodeUint(b []byte) (rest []byte, v uint64, err error) {
	if len(b) < 8 {
		return nil, 0, ErrCorrupt
	}
	return b[8:], binary.BigEndian.Uint64(b), nil
}

// DecodeUintDesc decodes EncodeUintDesc's output at the front of b.
func DecodeUintDesc(b []byte) (rest []byte, v uint64, err error) {
	rest, v, err = DecodeUint(b)
	return rest, ^v, err
}

// DecodeInt decodes EncodeInt's output at the front of b.
func DecodeInt(b []byte) (rest []byte, v int64, err error) {
	rest, u, err := DecodeUint(b)
	return rest, int64(u ^ (1 << 63)), err
}

func growTo(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		nd := make([]byte, len(dst), len(dst)+n)
		copy(nd, dst)
		dst = nd
	}
	return dst
}

// EncodeFloat appends f as 8 bytes that order as the floats do (-0 as 0).
// The sign bit decides, not f >= 0, so that a NaN also round-trips (a
// positive one after +Inf, a negative one before -Inf): for every other
// value the two agree.
func EncodeFloat(dst []byte, f float64) []byte {
	if f == 0 {
		f = 0
	}
	u := math.Float64bits(f)
	if u&(1<<63) == 0 {
		u |= 1 << 63
	} else {
		u = ^u
	}
	return binary.BigEndian.AppendUint64(dst, u)
}

// DecodeFloat decodes EncodeFloat's output at the front of b.
func DecodeFloat(b []byte) (rest []byte, f float64, err error) {
	rest, u, err := DecodeUint(b)
	if err != nil {
		return nil, 0, err
	}
	if u&(1<<63) != 0 {
		u &^= 1 << 63
	} else {
		u = ^u
	}
	return rest, math.Float64frombits(u), nil
}
