package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/store/mvcc"
	storepebble "github.com/basalt-db/basalt/store/pebble"
	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
)

// The scripts in testdata/ drive a few stores in this process, each with
// its own Pebble directory and a gRPC server on a loopback port, exchanging
// Raft messages over real BatchRaft streams. Commands:
//
//	start ids=1,2,3 [election-ticks=N]
//	                           start (or restart) stores
//	stop id=2                  stop a store, keeping its data
//	bootstrap store=1          the first region, on one store
//	change-peer region=R store=S type=learner|voter|remove
//	put region=R k=v ...       a write, proposed on the region's leader
//	split region=R key=K [async]
//	                           split at user key K; async: return once
//	                           proposed, split-result prints the outcome
//	transfer-leader region=R store=S [no-wait]
//	                           and wait until S leads it, unless no-wait
//	wait                       until every region's replicas applied alike
//	leader region=R            the store that leads the region
//	show                       every store's regions and their data
//	snapshots-applied store=S  how many snapshots the store installed
//
// and those of lease_test.go, snapshot_test.go, stale_test.go,
// memlocks_test.go, writefilter_test.go, logwrite_test.go,
// regain_test.go, duppeer_test.go, epoch_test.go, destroywrite_test.go,
// splitvote_test.go and confchange_test.go.

type raftCluster struct {
	t      testing.TB
	dir    string
	ids    uint64 // the last ID handed out
	stores map[uint64]*testStore
	// addrs: each store's address, read by the stores' senders.
	addrsMu sync.Mutex
	addrs   map[uint64]string
	// raftLocks: stores started from now on propose pessimistic locks
	// through Raft (in-memory locks off).
	raftLocks bool
	// splitOut and lockOut: the outcomes of an async split and a
	// pipelined lock still running.
	splitOut, lockOut chan string
	// electionTicks: the ElectionTicks of stores started from now on
	// (start's election-ticks); zero means 10.
	electionTicks int
	// logWrites: what logwrite_test.go's commands left running.
	logWrites logWriteState
	// floorTerms: per store, the term of the write floor that
	// writefilter_test.go's write-floor saw last.
	floorTerms map[uint64]uint64
	// destroyWrite: what destroywrite_test.go's commands left running.
	destroyWrite destroyWriteState
	// confChange: what confchange_test.go's commands left running.
	confChange confChangeState
}

type testStore struct {
	id  uint64
	eng *storepebble.Engine
	// gate holds the store's WAL syncs when a test stalls them.
	gate *syncGate
	rs   *Store
	srv  *grpc.Server
}

type raftOnly struct {
	tikvpb.UnimplementedTikvServer
	rs *Store
}

func (r *raftOnly) BatchRaft(stream tikvpb.Tikv_BatchRaftServer) error {
	return r.rs.ServeBatchRaft(stream)
}

func (r *raftOnly) Snapshot(stream tikvpb.Tikv_SnapshotServer) error {
	return r.rs.ServeSnapshot(stream)
}

// testSnapChunkSize: snapshots travel in small chunks here, several for
// all but the smallest regions.
const testSnapChunkSize = 1 << 10

func TestRaftstore(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		c := &raftCluster{t: t, dir: t.TempDir(), ids: 100, stores: map[uint64]*testStore{}, addrs: map[uint64]string{}}
		defer c.stopAll()
		datadriven.RunTest(t, path, c.run)
	})
}

// testLogger logs to stderr when RAFTSTORE_LOG is set (to a slog level).
func testLogger(store uint64) *slog.Logger {
	var level slog.Level
	if v := os.Getenv("RAFTSTORE_LOG"); v == "" || level.UnmarshalText([]byte(v)) != nil {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("store", store)
}

func (c *raftCluster) newID() uint64 { c.ids++; return c.ids }

func (c *raftCluster) addr(id uint64) string {
	c.addrsMu.Lock()
	defer c.addrsMu.Unlock()
	return c.addrs[id]
}

func (c *raftCluster) start(id uint64) {
	gate := newSyncGate()
	eng, err := storepebble.Open(filepath.Join(c.dir, strconv.FormatUint(id, 10)), storepebble.Options{FS: errorfs.Wrap(vfs.Default, gate)})
	if err != nil {
		c.t.Fatal(err)
	}
	electionTicks := c.electionTicks
	if electionTicks == 0 {
		electionTicks = 10
	}
	rs, err := NewStore(Config{StoreID: id, Engine: eng, SyncLog: true, Tick: 20 * time.Millisecond,
		HeartbeatTicks: 2, ElectionTicks: electionTicks, LogGCCountLimit: 10, StorePoolSize: 2, ApplyPoolSize: 2, RaftConnNum: 2, SnapChunkSize: testSnapChunkSize,
		InMemoryLocks: !c.raftLocks, Logger: testLogger(id), Resolve: func(_ context.Context, sid uint64) (string, error) {
			if a := c.addr(sid); a != "" {
				return a, nil
			}
			return "", fmt.Errorf("no store %d", sid)
		}})
	if err != nil {
		c.t.Fatal(err)
	}
	addr := c.addr(id)
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.addrsMu.Lock()
	c.addrs[id] = lis.Addr().String()
	c.addrsMu.Unlock()
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(1 << 30))
	tikvpb.RegisterTikvServer(srv, &raftOnly{rs: rs})
	go func() { _ = srv.Serve(lis) }()
	c.stores[id] = &testStore{id: id, eng: eng, gate: gate, rs: rs, srv: srv}
	rs.Start()
}

func (c *raftCluster) stop(id uint64) {
	s := c.stores[id]
	s.gate.open() // a stalled sync must not hold the store's stop
	s.srv.Stop()
	s.rs.Stop()
	if err := s.eng.Close(); err != nil {
		c.t.Fatal(err)
	}
	delete(c.stores, id)
}

func (c *raftCluster) stopAll() {
	for id := range c.stores {
		c.stop(id)
	}
}

// leader returns the peer leading region id, waiting for one.
func (c *raftCluster) leader(id uint64) *Peer {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range c.stores {
			if p := s.rs.Peer(id); p != nil && p.IsLeader() && p.isInitialized() {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("region %d has no leader", id)
	return nil
}

// retryOnLeaderChange runs fn on the region's leader, and again on the
// new leader if leadership moved meanwhile, as a client retries on
// NotLeader and StaleCommand (on a loaded machine an election can come at
// any time). fn says whether its work is already done, for a retry after
// an answer that was lost.
func (c *raftCluster) retryOnLeaderChange(region uint64, fn func(p *Peer) (done bool, err error)) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		done, err := fn(c.leader(region))
		var re *RegionError
		if done || err == nil || !errors.As(err, &re) || re.Err.NotLeader == nil && re.Err.StaleCommand == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *raftCluster) run(t *testing.T, td *datadriven.TestData) string {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	switch td.Cmd {
	case "start":
		var ids string
		td.ScanArgs(t, "ids", &ids)
		if td.HasArg("election-ticks") {
			td.ScanArgs(t, "election-ticks", &c.electionTicks)
		}
		for _, s := range strings.Split(ids, ",") {
			id, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			c.start(id)
		}
		return ""
	case "stop":
		c.stop(arg("id"))
		return ""
	case "bootstrap":
		return fmt.Sprintf("region %d", c.bootstrap(arg("store")))
	case "change-peer":
		var typ string
		td.ScanArgs(t, "type", &typ)
		err := c.changePeer(arg("region"), arg("store"), typ)
		if err != nil {
			return "error: " + err.Error()
		}
		return ""
	case "put":
		var b mvcc.Batch
		for _, a := range td.CmdArgs {
			if a.Key == "region" {
				continue
			}
			b.Put(mvcc.CFDefault, codec.EncodeBytes(nil, []byte(a.Key)), []byte(a.Vals[0]))
		}
		// Puts are idempotent: a retry after a lost answer writes the same.
		err := c.retryOnLeaderChange(arg("region"), func(p *Peer) (bool, error) {
			return false, p.MVCC().Engine().Write(&b, true)
		})
		if err != nil {
			return "error: " + err.Error()
		}
		return ""
	case "split":
		p := c.leader(arg("region"))
		var key string
		td.ScanArgs(t, "key", &key)
		if !td.HasArg("async") {
			return c.split(p, key)
		}
		c.splitOut = make(chan string, 1)
		go func() { c.splitOut <- c.split(p, key) }()
		for !p.isSplitting() { // proposed: the IDs are taken
			time.Sleep(time.Millisecond)
		}
		return ""
	case "split-result":
		return <-c.splitOut
	case "transfer-leader":
		id, sid := arg("region"), arg("store")
		p := c.leader(id)
		p.TransferLeader(findStorePeer(p.Meta(), sid))
		if td.HasArg("no-wait") {
			return ""
		}
		// Raft gives a transfer up after an election timeout, as it
		// may on a loaded machine (the transferee, just restarted, has
		// not caught up): ask again, as PD does until its operator
		// times out.
		deadline := time.Now().Add(10 * time.Second)
		again := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if q := c.stores[sid].rs.Peer(id); q != nil && q.IsLeader() {
				return ""
			}
			if time.Now().After(again) {
				p := c.leader(id)
				p.TransferLeader(findStorePeer(p.Meta(), sid))
				again = time.Now().Add(time.Second)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return "error: leadership did not move"
	case "leader":
		p := c.leader(arg("region"))
		return fmt.Sprintf("store %d", p.self.StoreId)
	case "wait":
		if err := c.waitReplicated(); err != nil {
			return "error: " + err.Error()
		}
		return ""
	case "show":
		return c.show()
	case "put-large":
		// n writes of one key each, whose value is size random bytes
		// (which compression does not shrink on disk).
		var n, size int
		td.ScanArgs(t, "n", &n)
		td.ScanArgs(t, "size", &size)
		for i := range n {
			var b mvcc.Batch
			value := make([]byte, size)
			rand.NewChaCha8([32]byte{byte(i)}).Read(value)
			b.Put(mvcc.CFDefault, codec.EncodeBytes(nil, []byte(fmt.Sprintf("large-%d", i))), value)
			err := c.retryOnLeaderChange(arg("region"), func(p *Peer) (bool, error) {
				return false, p.MVCC().Engine().Write(&b, true) // idempotent, as put's
			})
			if err != nil {
				return "error: " + err.Error()
			}
		}
		return ""
	case "log-memory":
		// The bytes of the region's log entries each store keeps in
		// memory, against raftLogCacheBytes.
		id := arg("region")
		var out []string
		for _, sid := range slices.Sorted(maps.Keys(c.stores)) {
			p := c.stores[sid].rs.Peer(id)
			if p == nil {
				continue
			}
			p.mu.Lock()
			first, _ := p.storage.FirstIndex()
			last, _ := p.storage.LastIndex()
			var ents []raftpb.Entry
			var err error
			if first <= last { // else all compacted: MemoryStorage says ErrUnavailable
				ents, err = p.storage.Entries(first, last+1, math.MaxUint64)
			}
			p.mu.Unlock()
			if err != nil {
				return "error: " + err.Error()
			}
			n := 0
			for _, e := range ents {
				n += len(e.Data)
			}
			verdict := "under raftLogCacheBytes"
			if n >= raftLogCacheBytes {
				verdict = fmt.Sprintf("%d bytes in %d entries", n, len(ents))
			}
			out = append(out, fmt.Sprintf("store %d: %s", sid, verdict))
		}
		return strings.Join(out, "\n")
	case "log-range-dels":
		// How many range deletions each store's Pebble holds over the
		// region's log: compacting the log must write none.
		id := arg("region")
		lo, hi := logKey(id, 0), hardStateKey(id)
		var out []string
		for _, sid := range slices.Sorted(maps.Keys(c.stores)) {
			n := 0
			err := c.stores[sid].rs.db.ScanInternal(context.Background(), block.CategoryUnknown, lo, hi,
				func(*pebble.InternalKey, pebble.LazyValue, pebble.IteratorLevel) error { return nil },
				func(_, _ []byte, _ pebble.SeqNum) error { n++; return nil },
				nil, nil, nil)
			if err != nil {
				return "error: " + err.Error()
			}
			out = append(out, fmt.Sprintf("store %d: %d", sid, n))
		}
		return strings.Join(out, "\n")
	case "log-entries":
		// The region's log entries each store keeps on disk, and the
		// first index its log starts at: the log must be compacted.
		id := arg("region")
		var out []string
		for _, sid := range slices.Sorted(maps.Keys(c.stores)) {
			p := c.stores[sid].rs.Peer(id)
			if p == nil {
				continue
			}
			p.mu.Lock()
			first, _ := p.storage.FirstIndex()
			p.mu.Unlock()
			it, err := c.stores[sid].rs.db.NewIter(&pebble.IterOptions{LowerBound: logKey(id, 0), UpperBound: hardStateKey(id)})
			if err != nil {
				return "error: " + err.Error()
			}
			n, below := 0, 0
			for it.First(); it.Valid(); it.Next() {
				n++
				if binary.BigEndian.Uint64(it.Key()[len(it.Key())-8:]) < first {
					below++
				}
			}
			if err := it.Close(); err != nil {
				return "error: " + err.Error()
			}
			out = append(out, fmt.Sprintf("store %d: fewer than %d on disk: %t, below the first index: %d", sid, arg("under"), uint64(n) < arg("under"), below))
		}
		return strings.Join(out, "\n")
	case "delete-range":
		// Deletes every key of the default column family below 0xff.
		var b mvcc.Batch
		b.DelRange(mvcc.CFDefault, []byte{}, []byte{0xff})
		err := c.retryOnLeaderChange(arg("region"), func(p *Peer) (bool, error) {
			return false, p.MVCC().Engine().Write(&b, true)
		})
		if err != nil {
			return "error: " + err.Error()
		}
		return ""
	case "flush":
		if err := c.stores[arg("store")].rs.db.Flush(); err != nil {
			return "error: " + err.Error()
		}
		return ""
	case "data-size":
		// Whether the store's default column family takes more than
		// limit bytes on disk; with wait, waits up to 10 s for it to
		// take less.
		rs := c.stores[arg("store")].rs
		limit := arg("limit")
		lo, hi := dataBounds(byte(mvcc.CFDefault), nil, nil)
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := rs.db.EstimateDiskUsage(lo, hi)
			if err != nil {
				return "error: " + err.Error()
			}
			if n < limit {
				return fmt.Sprintf("under %d bytes", limit)
			}
			if !td.HasArg("wait") || time.Now().After(deadline) {
				return fmt.Sprintf("over %d bytes", limit)
			}
			time.Sleep(20 * time.Millisecond)
		}
	case "snapshots-applied":
		return strconv.FormatInt(c.stores[arg("store")].rs.SnapshotsApplied.Load(), 10)
	}
	if out, ok := c.runLease(t, td); ok {
		return out
	}
	if out, ok := c.runStale(t, td); ok {
		return out
	}
	if out, ok := c.runSnapshot(t, td); ok {
		return out
	}
	if out, ok := c.runLockCF(t, td); ok {
		return out
	}
	if out, ok := c.runMemLocks(t, td); ok {
		return out
	}
	if out, ok := c.runWriteFilter(t, td); ok {
		return out
	}
	if out, ok := c.runLogWrite(t, td); ok {
		return out
	}
	if out, ok := c.runRegain(t, td); ok {
		return out
	}
	if out, ok := c.runDupPeer(t, td); ok {
		return out
	}
	if out, ok := c.runEpoch(t, td); ok {
		return out
	}
	if out, ok := c.runDestroyWrite(t, td); ok {
		return out
	}
	if out, ok := c.runSplitVote(t, td); ok {
		return out
	}
	if out, ok := c.runConfChange(t, td); ok {
		return out
	}
	t.Fatalf("unknown command %q", td.Cmd)
	return ""
}

// split splits p's region at the user key, with IDs from c.
// bootstrap makes the first region, on store sid alone, and returns its
// ID.
func (c *raftCluster) bootstrap(sid uint64) uint64 {
	region := &metapb.Region{Id: c.newID(), RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
		Peers: []*metapb.Peer{{Id: c.newID(), StoreId: sid}}}
	s := c.stores[sid]
	s.rs.Stop()
	if err := s.rs.Bootstrap(region); err != nil {
		c.t.Fatal(err)
	}
	c.stop(sid)
	c.start(sid)
	return region.Id
}

// changePeer adds store sid's peer to the region as a learner or a voter,
// or removes it (typ: learner, voter, remove).
func (c *raftCluster) changePeer(region, sid uint64, typ string) error {
	return c.retryOnLeaderChange(region, func(p *Peer) (bool, error) {
		existing := findStorePeer(p.Meta(), sid)
		ch := &raft_cmdpb.ChangePeerRequest{}
		switch typ {
		case "learner":
			if existing != nil && existing.Role == metapb.PeerRole_Learner {
				return true, nil // a retry whose first try was applied
			}
			ch.ChangeType, ch.Peer = eraftpb.ConfChangeType_AddLearnerNode, &metapb.Peer{Id: c.newID(), StoreId: sid, Role: metapb.PeerRole_Learner}
		case "voter":
			if existing != nil && existing.Role != metapb.PeerRole_Learner {
				return true, nil
			}
			ch.ChangeType, ch.Peer = eraftpb.ConfChangeType_AddNode, existing
			if existing == nil {
				ch.Peer = &metapb.Peer{Id: c.newID(), StoreId: sid}
			}
		case "remove":
			if existing == nil {
				return true, nil
			}
			ch.ChangeType, ch.Peer = eraftpb.ConfChangeType_RemoveNode, existing
		}
		err := p.ChangePeers([]*raft_cmdpb.ChangePeerRequest{ch})
		var dup *DuplicatePeerError
		if errors.As(err, &dup) {
			// A retry whose first try was applied after all (its
			// proposer was told NotLeader): look again.
			return false, &RegionError{Err: &errorpb.Error{Message: err.Error(), StaleCommand: &errorpb.StaleCommand{}}}
		}
		return false, err
	})
}

func (c *raftCluster) split(p *Peer, key string) string {
	ask := func(_ context.Context, r *metapb.Region, n int) ([]*pdpb.SplitID, error) {
		var ids []*pdpb.SplitID
		for range n {
			id := &pdpb.SplitID{NewRegionId: c.newID()}
			for range r.Peers {
				id.NewPeerIds = append(id.NewPeerIds, c.newID())
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	regions, err := p.Split(context.Background(), [][]byte{codec.EncodeBytes(nil, []byte(key))}, ask)
	if err != nil {
		return "error: " + err.Error()
	}
	var out []string
	for _, r := range regions {
		out = append(out, regionString(r))
	}
	return strings.Join(out, "\n")
}

// isSplitting says whether a split p proposed is in flight.
func (p *Peer) isSplitting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.splitting > 0
}

// waitReplicated waits until, for every region, each live store named in
// the leader's peer list holds an initialized peer at the leader's applied
// index, and no live store holds a peer the region no longer has.
func (c *raftCluster) waitReplicated() error {
	deadline := time.Now().Add(15 * time.Second)
	var why string
	for time.Now().Before(deadline) {
		why = c.unreplicated()
		if why == "" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not replicated: %s", why)
}

func (c *raftCluster) unreplicated() string {
	regions := map[uint64]bool{}
	for _, s := range c.stores {
		for _, p := range s.rs.Peers() {
			regions[p.Meta().Id] = true
		}
	}
	for id := range regions {
		var leader *Peer
		for _, s := range c.stores {
			if p := s.rs.Peer(id); p != nil && p.IsLeader() {
				leader = p
			}
		}
		if leader == nil {
			return fmt.Sprintf("region %d has no leader", id)
		}
		leader.mu.Lock()
		applied, region := leader.applied, leader.region
		leader.mu.Unlock()
		for sid, s := range c.stores {
			p := s.rs.Peer(id)
			want := findStorePeer(region, sid)
			switch {
			case want == nil && p != nil && p.isInitialized():
				return fmt.Sprintf("store %d still has region %d", sid, id)
			case want == nil:
			case p == nil || !p.isInitialized():
				return fmt.Sprintf("store %d has no replica of region %d", sid, id)
			default:
				p.mu.Lock()
				a := p.applied
				p.mu.Unlock()
				if a != applied {
					return fmt.Sprintf("store %d applied region %d to %d, leader to %d", sid, id, a, applied)
				}
			}
		}
	}
	return ""
}

func regionString(r *metapb.Region) string {
	key := func(k []byte) string {
		if len(k) == 0 {
			return ""
		}
		_, raw, err := codec.DecodeBytes(k, nil)
		if err != nil {
			return fmt.Sprintf("%x", k)
		}
		return string(raw)
	}
	return fmt.Sprintf("region %d [%s, %s) conf_ver %d version %d peers %s", r.Id, key(r.StartKey), key(r.EndKey),
		r.RegionEpoch.ConfVer, r.RegionEpoch.Version, peersString(r))
}

func (c *raftCluster) show() string {
	var ids []uint64
	for id := range c.stores {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		s := c.stores[id]
		fmt.Fprintf(&b, "store %d:\n", id)
		held := 0
		for _, p := range s.rs.Peers() {
			if !p.isInitialized() {
				continue
			}
			r := p.Meta()
			data := c.data(s, r)
			held += len(data)
			fmt.Fprintf(&b, "  %s\n", regionString(r))
			fmt.Fprintf(&b, "    data: %s\n", strings.Join(data, " "))
		}
		if all := len(c.data(s, &metapb.Region{})); all != held {
			fmt.Fprintf(&b, "  %d keys outside its regions\n", all-held)
		}
	}
	return b.String()
}

// data lists the region's keys and values in the default column family.
func (c *raftCluster) data(s *testStore, r *metapb.Region) []string {
	lo, hi := dataBounds('d', r.StartKey, r.EndKey)
	it, err := s.eng.DB().NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		c.t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for it.First(); it.Valid(); it.Next() {
		_, k, err := codec.DecodeBytes(it.Key()[1:], nil)
		if err != nil {
			c.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%s", k, it.Value()))
	}
	sort.Strings(out)
	return out
}

// TestBadRequests: requests for a region this store does not have, with
// another store's peer, to a follower, or with a stale epoch get TiKV's
// region errors; garbage Raft messages are dropped. Nothing panics.
func TestBadRequests(t *testing.T) {
	c := &raftCluster{t: t, dir: t.TempDir(), ids: 100, stores: map[uint64]*testStore{}, addrs: map[uint64]string{}}
	defer c.stopAll()
	c.start(1)
	c.start(2)
	td := &datadriven.TestData{Cmd: "bootstrap", CmdArgs: []datadriven.CmdArg{{Key: "store", Vals: []string{"1"}}}}
	c.run(t, td)
	leader := c.leader(101)
	ch := &raft_cmdpb.ChangePeerRequest{ChangeType: eraftpb.ConfChangeType_AddLearnerNode,
		Peer: &metapb.Peer{Id: c.newID(), StoreId: 2, Role: metapb.PeerRole_Learner}}
	if err := leader.ChangePeers([]*raft_cmdpb.ChangePeerRequest{ch}); err != nil {
		t.Fatal(err)
	}
	if err := c.waitReplicated(); err != nil {
		t.Fatal(err)
	}
	region := leader.Meta()
	s1, s2 := c.stores[1].rs, c.stores[2].rs
	good := &kvrpcpb.Context{RegionId: region.Id, RegionEpoch: region.RegionEpoch, Peer: leader.self}
	if _, err := s1.Leader(good); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	for _, tc := range []struct {
		name string
		s    *Store
		ctx  *kvrpcpb.Context
		want func(*errorpb.Error) bool
	}{
		{"no context", s1, nil, func(e *errorpb.Error) bool { return e.RegionNotFound != nil }},
		{"unknown region", s1, &kvrpcpb.Context{RegionId: 999}, func(e *errorpb.Error) bool { return e.RegionNotFound != nil }},
		{"another store's peer", s1, &kvrpcpb.Context{RegionId: region.Id, RegionEpoch: region.RegionEpoch,
			Peer: &metapb.Peer{Id: 1, StoreId: 7}}, func(e *errorpb.Error) bool { return e.StoreNotMatch != nil }},
		{"to a learner", s2, &kvrpcpb.Context{RegionId: region.Id, RegionEpoch: region.RegionEpoch},
			func(e *errorpb.Error) bool {
				return e.NotLeader != nil && e.NotLeader.Leader.GetId() == leader.self.Id
			}},
		{"stale epoch", s1, &kvrpcpb.Context{RegionId: region.Id, RegionEpoch: &metapb.RegionEpoch{Version: 0}},
			func(e *errorpb.Error) bool {
				return e.EpochNotMatch != nil && len(e.EpochNotMatch.CurrentRegions) == 1 &&
					e.EpochNotMatch.CurrentRegions[0].Id == region.Id
			}},
	} {
		if _, err := tc.s.Leader(tc.ctx); err == nil || !tc.want(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// Garbage Raft messages: no panic, and the region goes on.
	for _, m := range []*raft_serverpb.RaftMessage{
		{},
		{RegionId: region.Id},
		{RegionId: region.Id, ToPeer: &metapb.Peer{StoreId: 1}},
		{RegionId: region.Id, ToPeer: &metapb.Peer{Id: leader.self.Id, StoreId: 1}, FromPeer: &metapb.Peer{Id: 5}},
		{RegionId: 555, ToPeer: &metapb.Peer{Id: 556, StoreId: 1}, FromPeer: &metapb.Peer{Id: 557, StoreId: 2},
			Message: &eraftpb.Message{MsgType: eraftpb.MessageType_MsgSnapshot, Snapshot: &eraftpb.Snapshot{Data: []byte("garbage")}}},
		{RegionId: region.Id, ToPeer: &metapb.Peer{Id: leader.self.Id, StoreId: 1}, FromPeer: &metapb.Peer{Id: 5, StoreId: 2},
			Message: &eraftpb.Message{MsgType: eraftpb.MessageType_MsgAppend, Entries: []*eraftpb.Entry{nil}}},
		{RegionId: region.Id, ToPeer: &metapb.Peer{Id: leader.self.Id, StoreId: 1}, FromPeer: &metapb.Peer{Id: 5, StoreId: 2},
			IsTombstone: true},
	} {
		s1.Step(m)
	}
	td = &datadriven.TestData{Cmd: "put", CmdArgs: []datadriven.CmdArg{{Key: "region", Vals: []string{"101"}}, {Key: "x", Vals: []string{"1"}}}}
	if out := c.run(t, td); out != "" {
		t.Fatalf("a write after the garbage: %s", out)
	}
}
