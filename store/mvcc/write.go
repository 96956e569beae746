package mvcc

import (
	"encoding/binary"
	"fmt"

	"github.com/basalt-db/basalt/codec"
)

// WriteKind is the kind of a write record.
type WriteKind byte

const (
	// WritePut commits a value.
	WritePut WriteKind = 'P'
	// WriteDelete commits a deletion.
	WriteDelete WriteKind = 'D'
	// WriteLock commits a lock-only mutation: it changes no data.
	WriteLock WriteKind = 'L'
	// WriteRollback records that the transaction with this start ts was
	// rolled back; it is keyed at commitTS = startTS, and it protects the key
	// from a late prewrite of that transaction.
	WriteRollback WriteKind = 'R'
)

func (k WriteKind) String() string {
	switch k {
	case WritePut:
		return "put"
	case WriteDelete:
		return "delete"
	case WriteLock:
		return "lock"
	case WriteRollback:
		return "rollback"
	}
	return "kind?"
}

// MaxShortValue is the longest value stored inline in its write (or lock)
// record; longer values go to CFDefault.
const MaxShortValue = 255

// ShortValueMaxLen is kept as a var for tests that exercise CFDefault.
var shortValueMaxLen = MaxShortValue

// Write is a record in CFWrite. Its key carries the commit timestamp.
//
//	kind (1) | startTS (uvarint) | [ 'r' ] | [ 'v' | short value (rest) ]
//
// The optional parts are tagged and in this order; a record written before
// one existed simply lacks it ('r' came with async commit).
type Write struct {
	Kind    WriteKind
	StartTS uint64
	// OverlappedRollback says that the transaction whose start ts is this
	// record's commit ts was rolled back on the key: its rollback record
	// would have the same version as this commit, so the commit keeps it
	// instead. Only commit timestamps chosen by the store (async commit,
	// 1PC) can equal another transaction's start ts; PD never issues one
	// timestamp twice.
	OverlappedRollback bool
	// HasShortValue says the value is inline in ShortValue (which may be
	// empty); otherwise a Put's value is in CFDefault at startTS.
	HasShortValue bool
	ShortValue    []byte
}

func (w *Write) encode() []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+2+len(w.ShortValue))
	b = append(b, byte(w.Kind))
	b = binary.AppendUvarint(b, w.StartTS)
	if w.OverlappedRollback {
		b = append(b, 'r')
	}
	if w.HasShortValue {
		b = append(b, 'v')
		b = append(b, w.ShortValue...)
	}
	return b
}

func decodeWrite(b []byte) (Write, error) {
	var w Write
	if len(b) < 2 {
		return w, fmt.Errorf("mvcc: write record too short: %w", codec.ErrCorrupt)
	}
	w.Kind = WriteKind(b[0])
	switch w.Kind {
	case WritePut, WriteDelete, WriteLock, WriteRollback:
	default:
		return w, fmt.Errorf("mvcc: unknown write kind %q: %w", b[0], codec.ErrCorrupt)
	}
	ts, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return w, fmt.Errorf("mvcc: bad start ts in write record: %w", codec.ErrCorrupt)
	}
	w.StartTS = ts
	rest := b[1+n:]
	if len(rest) > 0 && rest[0] == 'r' {
		w.OverlappedRollback, rest = true, rest[1:]
	}
	if len(rest) > 0 {
		if rest[0] != 'v' {
			return w, fmt.Errorf("mvcc: bad write record tail: %w", codec.ErrCorrupt)
		}
		w.HasShortValue, w.ShortValue = true, rest[1:]
	}
	return w, nil
}
