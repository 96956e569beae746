package storenode

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/basalt-db/basalt/store/mvcc"
)

// gcState is what the store's GC has done, for /status.
type gcState struct {
	mu sync.Mutex
	// safePoint is PD's GC safe point as last read.
	safePoint uint64
	// done is, per region, the safe point its last collection here used.
	done           map[uint64]uint64
	deletedWrites  int
	deletedDefault int
}

// gcLoop polls PD's GC safe point every gc.poll-safe-point-interval and
// collects, in each region this store leads, the versions no reader at or
// above it can see, as TiKV's GC manager does. The deletions are written
// through the region's Raft group (Region.MVCC), so the followers drop
// them too. A region collected at a safe point is not collected again
// until the safe point moves; one whose leadership moves here later is
// collected at the next poll.
func (n *Node) gcLoop(ctx context.Context) {
	n.every(ctx, n.cfg.GC.PollSafePointInterval.Duration, func() {
		sp, err := n.pd.gcSafePoint(ctx)
		if err != nil {
			if ctx.Err() == nil {
				n.log.Warn("gc: cannot read PD's GC safe point", "err", err)
			}
			return
		}
		n.gc.mu.Lock()
		n.gc.safePoint = sp
		if n.gc.done == nil {
			n.gc.done = map[uint64]uint64{}
		}
		n.gc.mu.Unlock()
		if sp == 0 {
			return
		}
		for _, p := range n.rs.Peers() {
			if ctx.Err() != nil {
				return
			}
			id := p.Meta().Id
			n.gc.mu.Lock()
			skip := n.gc.done[id] >= sp
			n.gc.mu.Unlock()
			if skip || !p.IsLeader() {
				continue
			}
			lo, hi, _, err := clampRange(p.Meta(), nil, nil)
			if err != nil {
				continue
			}
			start := time.Now()
			st, err := p.MVCC().GCRange(lo, hi, sp)
			if err != nil {
				// Leadership or epoch changed: the next poll tries again.
				n.log.Info("gc: region not collected", "region", id, "err", err)
				continue
			}
			n.gc.mu.Lock()
			n.gc.done[id] = sp
			n.gc.deletedWrites += st.DeletedWrites
			n.gc.deletedDefault += st.DeletedDefault
			n.gc.mu.Unlock()
			if st.DeletedWrites > 0 {
				n.log.Info("gc: region collected", "region", id, "safe_point", sp, "keys", st.Keys,
					"deleted_versions", st.DeletedWrites, "took", time.Since(start).Round(time.Millisecond))
			}
		}
	})
}

// serveGC answers GC's state and, given start and end (hex raw keys, end
// optional), how many keys and versions of that range this store holds
// (leader and follower peers alike):
//
//	{"safe_point": ..., "deleted_versions": ..., "keys": ..., "versions": ...}
func (n *Node) serveGC(w http.ResponseWriter, r *http.Request) {
	n.gc.mu.Lock()
	out := map[string]any{"safe_point": n.gc.safePoint, "deleted_versions": n.gc.deletedWrites,
		"deleted_values": n.gc.deletedDefault}
	n.gc.mu.Unlock()
	if q := r.URL.Query(); q.Has("start") {
		start, err1 := hex.DecodeString(q.Get("start"))
		var end []byte
		var err2 error
		if q.Get("end") != "" {
			end, err2 = hex.DecodeString(q.Get("end"))
		}
		if err := errors.Join(err1, err2); err != nil {
			http.Error(w, "start, end: hex keys: "+err.Error(), http.StatusBadRequest)
			return
		}
		keys, versions, err := mvcc.CountVersions(n.eng, start, end)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out["keys"], out["versions"] = keys, versions
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
