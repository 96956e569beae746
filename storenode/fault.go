package storenode

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A fault switch for tests: a store started with BASALT_TEST_FAULTS=1 in
// its environment serves, on its status port,
//
//	POST /debug/fault/raft-drop?stores=1,3   drop what stores 1 and 3 send
//	POST /debug/fault/raft-drop              drop nothing again
//	GET  /debug/fault/raft-drop              the stores dropped, "1,3" or ""
//
// Dropped are the Raft messages (single, batched) and snapshots whose
// sender is one of those stores, on arrival, as a network that no longer
// carries them would. A store is cut off from the others when it drops
// theirs and they drop its (the test sets every store's switch); PD and
// clients still reach it. Without the variable the route does not
// exist.
const faultEnv = "BASALT_TEST_FAULTS"

// raftDrop is the set of stores whose Raft messages a store drops.
type raftDrop struct {
	stores atomic.Pointer[[]uint64] // nil: none
}

func (d *raftDrop) dropped(m *raft_serverpb.RaftMessage) bool {
	s := d.stores.Load()
	return s != nil && slices.Contains(*s, m.GetFromPeer().GetStoreId())
}

func (d *raftDrop) String() string {
	s := d.stores.Load()
	if s == nil {
		return ""
	}
	parts := make([]string, len(*s))
	for i, id := range *s {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(parts, ",")
}

// set parses a comma-separated list of store IDs; empty clears the set.
func (d *raftDrop) set(list string) error {
	if list == "" {
		d.stores.Store(nil)
		return nil
	}
	var ids []uint64
	for _, f := range strings.Split(list, ",") {
		id, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil || id == 0 {
			return fmt.Errorf("stores: %q is not a store ID", f)
		}
		ids = append(ids, id)
	}
	d.stores.Store(&ids)
	return nil
}

func (d *raftDrop) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		if err := d.set(r.URL.Query().Get("stores")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	default:
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		return
	}
	fmt.Fprintln(w, d.String())
}

// registerFaults adds the fault switch to the status page's mux when the
// environment asks for it.
func (n *Node) registerFaults(mux *http.ServeMux) {
	if os.Getenv(faultEnv) == "1" {
		mux.HandleFunc("/debug/fault/raft-drop", n.drop.serveHTTP)
	}
}

// droppingBatch is a BatchRaft stream without the messages d drops.
type droppingBatch struct {
	tikvpb.Tikv_BatchRaftServer
	d *raftDrop
}

func (s droppingBatch) Recv() (*tikvpb.BatchRaftMessage, error) {
	b, err := s.Tikv_BatchRaftServer.Recv()
	if err != nil || s.d.stores.Load() == nil {
		return b, err
	}
	b.Msgs = slices.DeleteFunc(b.Msgs, s.d.dropped)
	return b, nil
}

// droppingSnapshot is a Snapshot stream that fails when its first chunk's
// message comes from a store d drops.
type droppingSnapshot struct {
	tikvpb.Tikv_SnapshotServer
	d     *raftDrop
	first bool
}

func (s *droppingSnapshot) Recv() (*raft_serverpb.SnapshotChunk, error) {
	c, err := s.Tikv_SnapshotServer.Recv()
	if err == nil && !s.first {
		s.first = true
		if c.GetMessage() != nil && s.d.dropped(c.GetMessage()) {
			return nil, status.Error(codes.Unavailable, "snapshot dropped by the test's fault switch")
		}
	}
	return c, err
}
