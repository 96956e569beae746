package mvcc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/kv"
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

// TestPessimisticLockValues: the values a pessimistic lock tells are what
// Get reads at the newest version, a value kept in CFDefault among them,
// whether the lock reads them in its conflict check or, on a key it had
// locked, on their own.
func TestPessimisticLockValues(t *testing.T) {
	defer func(n int) { shortValueMaxLen = n }(shortValueMaxLen)
	shortValueMaxLen = 2
	eng := NewMemEngine()
	var b Batch
	req := &PrewriteRequest{Mutations: []kv.Mutation{{Op: kv.OpPut, Key: []byte("a"), Value: []byte("a long value")},
		{Op: kv.OpPut, Key: []byte("b"), Value: []byte("b")}, {Op: kv.OpDelete, Key: []byte("c")}}, StartTS: 5}
	if err := OnePhaseCommit(eng, &b, req, 6); err != nil {
		t.Fatal(err)
	}
	if err := eng.Write(&b, false); err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}
	lock := func(ks [][]byte, value func(key, value []byte, found bool)) {
		t.Helper()
		var lb Batch
		req := &PessimisticLockRequest{Keys: ks, Primary: ks[0], StartTS: 10, ForUpdateTS: 10, Value: value}
		if n, err := AcquirePessimisticLock(eng, &lb, req); n != len(ks) || err != nil {
			t.Fatalf("locked %d of %d: %v", n, len(ks), err)
		}
		if err := eng.Write(&lb, false); err != nil {
			t.Fatal(err)
		}
	}
	check := func(state string) {
		t.Helper()
		for _, ks := range [][][]byte{keys[:1], keys} { // no batch reader, or one
			want, got := "", ""
			for _, k := range ks {
				v, err := Get(eng, k, math.MaxUint64, false)
				want += fmt.Sprintf("%s=%q,%v ", k, v, err == nil)
			}
			lock(ks, func(key, value []byte, found bool) { got += fmt.Sprintf("%s=%q,%v ", key, value, found) })
			if got != want {
				t.Errorf("%s, keys %q: told %s, want %s", state, ks, got, want)
			}
		}
	}
	check("unlocked")
	check("locked") // the first check locked them
}
