package mvcc

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/basalt-db/basalt/codec"
)

// TestLockEncoding: every field round-trips, and records written before
// the async-commit section existed still decode, to ordinary locks.
func TestLockEncoding(t *testing.T) {
	for _, l := range []Lock{
		{Kind: LockPut, Primary: []byte("p"), StartTS: 10, TTL: 3000, MinCommitTS: 11, TxnSize: 2,
			HasShortValue: true, ShortValue: []byte("v")},
		{Kind: LockDelete, Primary: []byte("p"), StartTS: 10, TTL: 3000, ForUpdateTS: 12, MinCommitTS: 21,
			UseAsyncCommit: true, Secondaries: [][]byte{[]byte("s1"), {}, []byte("s3")}},
		{Kind: LockPut, Primary: []byte("p"), StartTS: 10, MinCommitTS: 21, UseAsyncCommit: true,
			HasShortValue: true, ShortValue: []byte("avalue")},
		{Kind: LockPessimistic, Primary: []byte{}, StartTS: 1},
	} {
		got, err := decodeLock(l.encode())
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		if !reflect.DeepEqual(got, l) {
			t.Errorf("decoded %+v, want %+v", got, l)
		}
	}

	// The encoding before async commit: no 'a' section.
	old := []byte{byte(LockPut), 1, 'p'}
	for _, v := range []uint64{10, 3000, 0, 11, 2} {
		old = binary.AppendUvarint(old, v)
	}
	old = append(old, "vabc"...)
	got, err := decodeLock(old)
	want := Lock{Kind: LockPut, Primary: []byte("p"), StartTS: 10, TTL: 3000, MinCommitTS: 11, TxnSize: 2,
		HasShortValue: true, ShortValue: []byte("abc")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("an old record decoded to %+v, %v; want %+v", got, err, want)
	}

	// Truncated secondaries are corrupt, not read past the record.
	enc := (&Lock{Kind: LockPut, Primary: []byte("p"), UseAsyncCommit: true, Secondaries: [][]byte{[]byte("secondary")}}).encode()
	if _, err := decodeLock(enc[:len(enc)-3]); !errors.Is(err, codec.ErrCorrupt) {
		t.Errorf("a truncated secondary: %v, want corrupt", err)
	}
}
