package mvcc

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/basalt-db/basalt/codec"
)

// LockKind is the kind of a lock record.
type LockKind byte

const (
	// LockPut, LockDelete and LockLock are prewrite locks: a commit turns
	// each into the write record of the same kind.
	LockPut    LockKind = 'P'
	LockDelete LockKind = 'D'
	LockLock   LockKind = 'L'
	// LockPessimistic is taken by a pessimistic transaction's DML before
	// prewrite. It does not block readers.
	LockPessimistic LockKind = 'S'
)

func (k LockKind) String() string {
	switch k {
	case LockPut:
		return "put"
	case LockDelete:
		return "delete"
	case LockLock:
		return "lock"
	case LockPessimistic:
		return "pessimistic"
	}
	return "kind?"
}

func (k LockKind) writeKind() WriteKind {
	switch k {
	case LockPut:
		return WritePut
	case LockDelete:
		return WriteDelete
	}
	return WriteLock
}

// blocksReads reports whether a reader at a later timestamp must wait for
// the lock's transaction: only prewritten data changes can become visible.
func (k LockKind) blocksReads() bool { return k == LockPut || k == LockDelete }

// Lock is a record in CFLock, one per user key.
//
//	kind (1) | len(primary) (uvarint) | primary | startTS | ttlMs | forUpdateTS
//	| minCommitTS | txnSize   (each uvarint) | [ 'v' | short value (rest) ]
type Lock struct {
	Kind        LockKind
	Primary     []byte
	StartTS     uint64
	TTL         uint64 // milliseconds, counted from StartTS's physical time
	ForUpdateTS uint64
	MinCommitTS uint64
	TxnSize     uint64
	// HasShortValue says a Put's value is inline; otherwise it is in
	// CFDefault at StartTS.
	HasShortValue bool
	ShortValue    []byte
}

// Info describes the lock for errors and lock resolution. It does not
// share memory with l, which may point into an engine iterator's.
func (l *Lock) Info(key []byte) LockInfo {
	return LockInfo{Key: key, Primary: slices.Clone(l.Primary), StartTS: l.StartTS, TTL: l.TTL, Kind: l.Kind, ForUpdateTS: l.ForUpdateTS,
		TxnSize: l.TxnSize, MinCommitTS: l.MinCommitTS}
}

func (l *Lock) encode() []byte {
	b := make([]byte, 0, 1+len(l.Primary)+6*binary.MaxVarintLen64+1+len(l.ShortValue))
	b = append(b, byte(l.Kind))
	b = binary.AppendUvarint(b, uint64(len(l.Primary)))
	b = append(b, l.Primary...)
	for _, v := range []uint64{l.StartTS, l.TTL, l.ForUpdateTS, l.MinCommitTS, l.TxnSize} {
		b = binary.AppendUvarint(b, v)
	}
	if l.HasShortValue {
		b = append(b, 'v')
		b = append(b, l.ShortValue...)
	}
	return b
}

func decodeLock(b []byte) (Lock, error) {
	var l Lock
	bad := func(what string) (Lock, error) {
		return l, fmt.Errorf("mvcc: bad lock record (%s): %w", what, codec.ErrCorrupt)
	}
	if len(b) < 1 {
		return bad("empty")
	}
	l.Kind = LockKind(b[0])
	switch l.Kind {
	case LockPut, LockDelete, LockLock, LockPessimistic:
	default:
		return bad("kind")
	}
	b = b[1:]
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return bad("primary")
	}
	l.Primary, b = b[w:w+int(n)], b[w+int(n):]
	for _, p := range []*uint64{&l.StartTS, &l.TTL, &l.ForUpdateTS, &l.MinCommitTS, &l.TxnSize} {
		v, w := binary.Uvarint(b)
		if w <= 0 {
			return bad("field")
		}
		*p, b = v, b[w:]
	}
	if len(b) > 0 {
		if b[0] != 'v' {
			return bad("tail")
		}
		l.HasShortValue, l.ShortValue = true, b[1:]
	}
	return l, nil
}
