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
//	| minCommitTS | txnSize   (each uvarint)
//	| [ 'a' | n (uvarint) | n × (len (uvarint) | secondary key) ]
//	| [ 'v' | short value (rest) ]
//
// The optional sections are tagged and in this order, the short value last
// since it runs to the end; a record written before a section existed
// simply lacks it ('a' came with async commit).
type Lock struct {
	Kind        LockKind
	Primary     []byte
	StartTS     uint64
	TTL         uint64 // milliseconds, counted from StartTS's physical time
	ForUpdateTS uint64
	// MinCommitTS: the transaction commits at or above it. For an
	// async-commit lock it is the store's choice, which the client
	// commits at (the largest over its locks) and a lock resolver too.
	MinCommitTS uint64
	TxnSize     uint64
	// UseAsyncCommit marks a lock of an async-commit transaction: the
	// transaction is committed once all its locks are written, so its
	// fate is decided from its locks (CheckSecondaryLocks), never by
	// rolling back its expired primary, and MinCommitTS is never pushed.
	// Secondaries, on the primary's lock only, are the transaction's
	// other keys.
	UseAsyncCommit bool
	Secondaries    [][]byte
	// HasShortValue says a Put's value is inline; otherwise it is in
	// CFDefault at StartTS.
	HasShortValue bool
	ShortValue    []byte
}

// Info describes the lock for errors and lock resolution. It does not
// share memory with l, which may point into an engine iterator's.
func (l *Lock) Info(key []byte) LockInfo {
	info := LockInfo{Key: key, Primary: slices.Clone(l.Primary), StartTS: l.StartTS, TTL: l.TTL, Kind: l.Kind, ForUpdateTS: l.ForUpdateTS,
		TxnSize: l.TxnSize, MinCommitTS: l.MinCommitTS, UseAsyncCommit: l.UseAsyncCommit}
	for _, k := range l.Secondaries {
		info.Secondaries = append(info.Secondaries, slices.Clone(k))
	}
	return info
}

func (l *Lock) encode() []byte {
	n := 1 + len(l.Primary) + 6*binary.MaxVarintLen64 + 1 + len(l.ShortValue)
	if l.UseAsyncCommit {
		n += 1 + binary.MaxVarintLen64
		for _, k := range l.Secondaries {
			n += binary.MaxVarintLen64 + len(k)
		}
	}
	b := make([]byte, 0, n)
	b = append(b, byte(l.Kind))
	b = binary.AppendUvarint(b, uint64(len(l.Primary)))
	b = append(b, l.Primary...)
	for _, v := range []uint64{l.StartTS, l.TTL, l.ForUpdateTS, l.MinCommitTS, l.TxnSize} {
		b = binary.AppendUvarint(b, v)
	}
	if l.UseAsyncCommit {
		b = append(b, 'a')
		b = binary.AppendUvarint(b, uint64(len(l.Secondaries)))
		for _, k := range l.Secondaries {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
		}
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
	if len(b) > 0 && b[0] == 'a' {
		l.UseAsyncCommit = true
		n, w := binary.Uvarint(b[1:])
		if w <= 0 || n > uint64(len(b)) {
			return bad("secondaries")
		}
		b = b[1+w:]
		if n > 0 {
			l.Secondaries = make([][]byte, n)
		}
		for i := range l.Secondaries {
			kn, w := binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < kn {
				return bad("secondary")
			}
			l.Secondaries[i], b = b[w:w+int(kn)], b[w+int(kn):]
		}
	}
	if len(b) > 0 {
		if b[0] != 'v' {
			return bad("tail")
		}
		l.HasShortValue, l.ShortValue = true, b[1:]
	}
	return l, nil
}
