package raftstore

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
)

// syncGate is an errorfs.Injector that, while stalled, holds every sync
// of a store's WAL files until the test lets it through, as a disk slow
// to sync would. Other operations pass.
type syncGate struct {
	mu      sync.Mutex
	stalled bool
	free    chan struct{} // closed when the gate opens
	tokens  chan struct{} // each lets one held sync through
	// arrived and passed count the syncs held since the gate was
	// stalled, and those of them let through.
	arrived, passed int
}

func newSyncGate() *syncGate {
	return &syncGate{free: make(chan struct{}), tokens: make(chan struct{}, 1024)}
}

// MaybeError implements errorfs.Injector: it never fails an operation.
func (g *syncGate) MaybeError(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
	default:
		return nil
	}
	if !strings.HasSuffix(op.Path, ".log") {
		return nil
	}
	g.mu.Lock()
	if !g.stalled {
		g.mu.Unlock()
		return nil
	}
	g.arrived++
	free := g.free
	g.mu.Unlock()
	select {
	case <-g.tokens:
	case <-free:
	}
	g.mu.Lock()
	g.passed++
	g.mu.Unlock()
	return nil
}

func (g *syncGate) String() string { return "sync-gate" }

// stall holds every WAL sync from now on.
func (g *syncGate) stall() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.stalled {
		g.stalled, g.free, g.arrived, g.passed = true, make(chan struct{}), 0, 0
	}
}

// open lets every sync through, held or to come.
func (g *syncGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stalled {
		g.stalled = false
		close(g.free)
	}
}

// counts returns the syncs held so far and those let through.
func (g *syncGate) counts() (arrived, passed int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.arrived, g.passed
}

// logWriteState is what logwrite_test.go's commands leave running.
type logWriteState struct {
	puts     map[string]chan error // put-async's answers, by name
	mark     uint64                // mark's index
	syncs    map[uint64]uint64     // each store's log syncs at mark
	isolated uint64                // the store isolate-follower cut off
}

// runLogWrite runs the commands for the Ready loop's log writes
// (testdata/logwrite), each acting on the region's leader of the moment
// (the log-sync commands: on store S, if given):
//
//	stall-log-sync region=R [store=S]
//	                           the leader's store holds its WAL syncs
//	release-log-sync region=R [store=S] [n=N]
//	                           let N held syncs through (waiting until
//	                           they have passed), or stop holding
//	wait-log-sync region=R [store=S]
//	                           wait until the leader's store holds a sync
//	put-async region=R name=A k=v ...
//	                           propose a write on the leader and return
//	                           once raft has it; put-result tells its end
//	put-result name=A [within=D]
//	                           the write's answer, "no answer" if none
//	                           came within D (default 10s)
//	isolate-follower region=R  the follower on the highest store drops
//	                           every message it gets; heal-follower ends it
//	mark region=R              indexes below are counted from the
//	                           leader's last index now, syncs from each
//	                           store's synced log writes now
//	log-syncs region=R         each store's synced log writes since mark,
//	                           once every peer has applied the leader's
//	                           last entry and 200ms have passed
//	log-state region=R [followers=N] [commit=N] [settle=D]
//	                           the log indexes persisted on each store and
//	                           the leader's commit and applied indexes,
//	                           after waiting (up to 5s) until every
//	                           follower not cut off persisted mark+N and
//	                           the leader committed mark+N, then D more
func (c *raftCluster) runLogWrite(t *testing.T, td *datadriven.TestData) (string, bool) {
	var region uint64
	if td.HasArg("region") {
		td.ScanArgs(t, "region", &region)
	}
	st := &c.logWrites
	// gate: the sync gate of the store given (store=S), else the leader's.
	gate := func() *syncGate {
		if td.HasArg("store") {
			var sid uint64
			td.ScanArgs(t, "store", &sid)
			return c.stores[sid].gate
		}
		return c.stores[c.leader(region).self.StoreId].gate
	}
	switch td.Cmd {
	case "stall-log-sync":
		gate().stall()
	case "release-log-sync":
		g := gate()
		if !td.HasArg("n") {
			g.open()
			return "", true
		}
		var n int
		td.ScanArgs(t, "n", &n)
		_, passed := g.counts()
		for range n {
			g.tokens <- struct{}{}
		}
		if !waitFor(func() bool { _, p := g.counts(); return p >= passed+n }) {
			return "error: the syncs let through did not pass", true
		}
	case "wait-log-sync":
		g := gate()
		if !waitFor(func() bool { a, p := g.counts(); return a > p }) {
			return "error: no sync held", true
		}
	case "put-async":
		var name string
		td.ScanArgs(t, "name", &name)
		var b mvcc.Batch
		for _, a := range td.CmdArgs {
			if a.Key != "region" && a.Key != "name" {
				b.Put(mvcc.CFDefault, codec.EncodeBytes(nil, []byte(a.Key)), []byte(a.Vals[0]))
			}
		}
		p := c.leader(region)
		proposed := p.s.proposals.Load()
		ch := make(chan error, 1)
		go func() { ch <- p.MVCC().Engine().Write(&b, true) }()
		if st.puts == nil {
			st.puts = map[string]chan error{}
		}
		st.puts[name] = ch
		if !waitFor(func() bool { return p.s.proposals.Load() > proposed }) {
			return "error: not proposed", true
		}
	case "put-result":
		var name string
		td.ScanArgs(t, "name", &name)
		within := 10 * time.Second
		if td.HasArg("within") {
			var d string
			td.ScanArgs(t, "within", &d)
			var err error
			if within, err = time.ParseDuration(d); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case err := <-st.puts[name]:
			if err != nil {
				return "error: " + err.Error(), true
			}
			return "ok", true
		case <-time.After(within):
			return "no answer", true
		}
	case "isolate-follower", "heal-follower":
		if td.Cmd == "heal-follower" {
			c.stores[st.isolated].rs.isolated.Store(false)
			return "", true
		}
		leader := c.leader(region).self.StoreId
		for _, sid := range c.storeIDs() {
			if sid != leader && c.stores[sid].rs.Peer(region) != nil {
				st.isolated = sid
			}
		}
		c.stores[st.isolated].rs.isolated.Store(true)
	case "mark":
		p := c.leader(region)
		p.mu.Lock()
		st.mark = p.lastIndex
		p.mu.Unlock()
		st.syncs = map[uint64]uint64{}
		for _, sid := range c.storeIDs() {
			st.syncs[sid] = c.stores[sid].rs.LogStats().Syncs
		}
	case "log-syncs":
		return c.logSyncs(region), true
	case "log-state":
		return c.logState(t, td, region), true
	default:
		return "", false
	}
	return "", true
}

// logState is log-state's output.
func (c *raftCluster) logState(t *testing.T, td *datadriven.TestData, region uint64) string {
	st := &c.logWrites
	var followers, commit uint64
	if td.HasArg("followers") {
		td.ScanArgs(t, "followers", &followers)
	}
	if td.HasArg("commit") {
		td.ScanArgs(t, "commit", &commit)
	}
	leader := c.leader(region)
	// state returns the leader's persisted, committed and applied
	// indexes and the followers' persisted ones, from the mark.
	state := func() (l [3]uint64, fs []uint64, ok bool) {
		ok = true
		for _, sid := range c.storeIDs() {
			p := c.stores[sid].rs.Peer(region)
			if p == nil {
				continue
			}
			p.mu.Lock()
			persisted := p.lastIndex - st.mark
			if p == leader {
				l = [3]uint64{persisted, p.rn.Status().Commit - st.mark, p.applied - st.mark}
				ok = ok && l[1] >= commit
			} else {
				fs = append(fs, persisted)
				ok = ok && (persisted >= followers || sid == st.isolated)
			}
			p.mu.Unlock()
		}
		return l, fs, ok
	}
	waitFor(func() bool { _, _, ok := state(); return ok })
	if td.HasArg("settle") {
		var d string
		td.ScanArgs(t, "settle", &d)
		settle, err := time.ParseDuration(d)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(settle)
	}
	l, fs, _ := state()
	slices.Sort(fs)
	out := fmt.Sprintf("leader: persisted +%d committed +%d applied +%d\nfollowers: persisted", l[0], l[1], l[2])
	for _, f := range fs {
		out += fmt.Sprintf(" +%d", f)
	}
	return out
}

// logSyncs is log-syncs' output.
func (c *raftCluster) logSyncs(region uint64) string {
	leader := c.leader(region)
	leader.mu.Lock()
	last := leader.lastIndex
	leader.mu.Unlock()
	applied := func() bool {
		for _, sid := range c.storeIDs() {
			if p := c.stores[sid].rs.Peer(region); p != nil {
				p.mu.Lock()
				a := p.applied
				p.mu.Unlock()
				if a < last {
					return false
				}
			}
		}
		return true
	}
	if !waitFor(applied) {
		return "error: not applied everywhere"
	}
	time.Sleep(200 * time.Millisecond)
	var fs []uint64
	var l uint64
	for _, sid := range c.storeIDs() {
		n := c.stores[sid].rs.LogStats().Syncs - c.logWrites.syncs[sid]
		if sid == leader.self.StoreId {
			l = n
		} else if c.stores[sid].rs.Peer(region) != nil {
			fs = append(fs, n)
		}
	}
	slices.Sort(fs)
	return fmt.Sprintf("leader: %d\nfollowers: %v", l, fs)
}

// TestIsAdmin: isAdmin tells an admin command from a write without
// decoding it, and takes what it cannot read for one (which then waits
// for the log write, as every entry did before).
func TestIsAdmin(t *testing.T) {
	header := &raft_cmdpb.RaftRequestHeader{RegionId: 7, Uuid: []byte("12345678"),
		RegionEpoch: &metapb.RegionEpoch{ConfVer: 3, Version: 9}, Peer: &metapb.Peer{Id: 4, StoreId: 2}, Term: 5}
	write := mustMarshal(&raft_cmdpb.RaftCmdRequest{Header: header, Requests: []*raft_cmdpb.Request{
		{CmdType: raft_cmdpb.CmdType_Put, Put: &raft_cmdpb.PutRequest{Cf: "write", Key: []byte("k"), Value: []byte("v")}},
		{CmdType: raft_cmdpb.CmdType_Delete, Delete: &raft_cmdpb.DeleteRequest{Cf: "lock", Key: []byte("k")}}}})
	split := mustMarshal(&raft_cmdpb.RaftCmdRequest{Header: header, AdminRequest: &raft_cmdpb.AdminRequest{
		CmdType: raft_cmdpb.AdminCmdType_BatchSplit, Splits: &raft_cmdpb.BatchSplitRequest{
			Requests: []*raft_cmdpb.SplitRequest{{SplitKey: []byte("m"), NewRegionId: 8, NewPeerIds: []uint64{9}}}}}})
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"empty", nil, false},
		{"write", write, false},
		{"split", split, true},
		{"write cut short", write[:len(write)-1], true},
		{"garbage", []byte{0xff, 0xff, 0xff}, true},
	} {
		if got := isAdmin(tc.data); got != tc.want {
			t.Errorf("%s: isAdmin = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// BenchmarkLogWrite: writers putting one key each at a time on a region
// replicated on three stores in this process (sync-log on: real fsyncs
// in the test's temporary directory; Raft over loopback gRPC), with the
// Ready loop overlapping its log write (overlap) and not (serial: write,
// then send, then apply, as before). Reports writes/s, the writes'
// latency (p50, p95) and the three stores' log syncs per write. The two
// alternate with -count:
//
//	go test -run '^$' -bench LogWrite -count 4 ./storenode/raftstore/
func BenchmarkLogWrite(b *testing.B) {
	// Slow elections (2 s): a loaded machine must not move the leader.
	c := &raftCluster{t: b, dir: b.TempDir(), ids: 100, stores: map[uint64]*testStore{}, addrs: map[uint64]string{},
		electionTicks: 100}
	defer c.stopAll()
	for id := uint64(1); id <= 3; id++ {
		c.start(id)
	}
	region := c.bootstrap(1)
	for _, step := range []struct {
		sid uint64
		typ string
	}{{2, "learner"}, {2, "voter"}, {3, "learner"}, {3, "voter"}} {
		if err := c.changePeer(region, step.sid, step.typ); err != nil {
			b.Fatal(err)
		}
		if step.typ == "learner" {
			if err := c.waitReplicated(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := c.waitReplicated(); err != nil {
		b.Fatal(err)
	}
	const writers = 16
	for _, mode := range []struct {
		name    string
		overlap bool
	}{{"serial", false}, {"overlap", true}} {
		b.Run(fmt.Sprintf("%s/%d", mode.name, writers), func(b *testing.B) {
			defer func(v bool) { overlapLogWrite = v }(overlapLogWrite)
			overlapLogWrite = mode.overlap
			syncs := func() (n uint64) {
				for _, s := range c.stores {
					n += s.rs.LogStats().Syncs
				}
				return n
			}
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			syncs0 := syncs()
			b.ResetTimer()
			start := time.Now()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= b.N {
							return
						}
						var batch mvcc.Batch
						batch.Put(mvcc.CFDefault, codec.EncodeBytes(nil, fmt.Appendf(nil, "w%02d-%08d", w, i)), []byte("value-of-a-typical-row"))
						t0 := time.Now()
						err := c.retryOnLeaderChange(region, func(p *Peer) (bool, error) {
							return false, p.MVCC().Engine().Write(&batch, true) // idempotent
						})
						if err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(t0)
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
			b.ReportMetric(float64(lat[b.N/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[b.N*95/100].Microseconds()), "p95-µs")
			b.ReportMetric(float64(syncs()-syncs0)/float64(b.N), "syncs/write")
		})
	}
}
