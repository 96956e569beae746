package mvcc

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// TestWriteEncoding: the overlapped-rollback mark round-trips, before a
// short value too, and records written before it existed still decode.
func TestWriteEncoding(t *testing.T) {
	for _, w := range []Write{
		{Kind: WritePut, StartTS: 10, HasShortValue: true, ShortValue: []byte("rvalue")},
		{Kind: WritePut, StartTS: 10, OverlappedRollback: true, HasShortValue: true, ShortValue: []byte("v")},
		{Kind: WriteDelete, StartTS: 10, OverlappedRollback: true},
		{Kind: WriteRollback, StartTS: 10},
	} {
		got, err := decodeWrite(w.encode())
		if err != nil {
			t.Fatalf("%+v: %v", w, err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("decoded %+v, want %+v", got, w)
		}
	}
	old := append(binary.AppendUvarint([]byte{byte(WritePut)}, 10), "vrest"...)
	got, err := decodeWrite(old)
	want := Write{Kind: WritePut, StartTS: 10, HasShortValue: true, ShortValue: []byte("rest")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("an old record decoded to %+v, %v; want %+v", got, err, want)
	}
}
