package storenode

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
)

// The fault switch drops the messages of the stores it names, and only
// those, once set through its HTTP route; an empty list clears it, and a
// bad one is refused and changes nothing.
func TestRaftDrop(t *testing.T) {
	var d raftDrop
	from := func(store uint64) *raft_serverpb.RaftMessage {
		return &raft_serverpb.RaftMessage{FromPeer: &metapb.Peer{Id: store * 10, StoreId: store}}
	}
	call := func(method, query string) (int, string) {
		w := httptest.NewRecorder()
		d.serveHTTP(w, httptest.NewRequest(method, "/debug/fault/raft-drop"+query, nil))
		body, _ := io.ReadAll(w.Result().Body)
		return w.Code, strings.TrimSpace(string(body))
	}
	if d.dropped(from(1)) {
		t.Fatal("a new switch drops store 1's message")
	}
	if code, body := call(http.MethodPost, "?stores=1,3"); code != http.StatusOK || body != "1,3" {
		t.Fatalf("POST stores=1,3: %d %q", code, body)
	}
	for store, want := range map[uint64]bool{1: true, 2: false, 3: true} {
		if d.dropped(from(store)) != want {
			t.Errorf("store %d's message dropped: %v, want %v", store, !want, want)
		}
	}
	// A batch loses the dropped stores' messages and keeps the others.
	b := droppingBatch{d: &d}
	msgs := []*raft_serverpb.RaftMessage{from(1), from(2), from(3), from(2)}
	b.Tikv_BatchRaftServer = oneBatch{b: &tikvpb.BatchRaftMessage{Msgs: msgs}}
	got, err := b.Recv()
	if err != nil || len(got.Msgs) != 2 || got.Msgs[0].FromPeer.StoreId != 2 || got.Msgs[1].FromPeer.StoreId != 2 {
		t.Errorf("filtered batch: %v, %v; want store 2's two messages", got, err)
	}
	if code, body := call(http.MethodPost, "?stores=2,x"); code != http.StatusBadRequest {
		t.Errorf("POST stores=2,x: %d %q; want 400", code, body)
	}
	if code, body := call(http.MethodGet, ""); body != "1,3" {
		t.Errorf("GET after a refused POST: %d %q; want 1,3", code, body)
	}
	if code, body := call(http.MethodPost, ""); code != http.StatusOK || body != "" || d.dropped(from(1)) {
		t.Errorf("POST with no stores: %d %q, store 1 dropped %v; want it cleared", code, body, d.dropped(from(1)))
	}
}

// oneBatch is a BatchRaft stream that delivers one batch (the rest of
// the interface is left nil: the filter calls only Recv).
type oneBatch struct {
	b *tikvpb.BatchRaftMessage
	tikvpb.Tikv_BatchRaftServer
}

func (o oneBatch) Recv() (*tikvpb.BatchRaftMessage, error) { return o.b, nil }
