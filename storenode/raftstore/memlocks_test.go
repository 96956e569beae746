package raftstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2"
)

// runMemLocks runs the commands for in-memory pessimistic locks
// (testdata/memlocks), each on the region's leader once it serves
// commands:
//
//	lock-mode raft|memory      how stores started from now on keep
//	                           pessimistic locks
//	lock region=R start=TS keys=a,b [primary-size=N]
//	                           transaction TS locks the keys pessimistically
//	                           (for_update_ts TS; primary: the first key, or
//	                           N bytes)
//	prewrite region=R start=TS k=v ...
//	                           its pessimistic prewrite of those puts
//	commit region=R start=TS commit=TS keys=a,b
//	pessimistic-rollback region=R start=TS keys=a,b
//	locks region=R             each store's locks of the region: in memory
//	                           and in its applied data
//	scan-locks region=R        the locks the leader's mvcc.Store scans
//	get region=R key=K ts=TS   a read of K at TS
//	mem-lock-stats store=S     lock writes served in memory, flushes, the
//	                           bytes in memory now
//	lock region=R start=TS keys=a pipelined
//	                           a pipelined lock (mvcc.Hooks.Proposed): says
//	                           whether it was answered once proposed, as
//	                           the service would answer it; lock-result
//	                           prints its outcome once applied
//	pause-loop store=S         stall store S's Ready loop (resume id=S)
func (c *raftCluster) runMemLocks(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	keys := func() [][]byte {
		var s string
		td.ScanArgs(t, "keys", &s)
		var out [][]byte
		for _, k := range strings.Split(s, ",") {
			out = append(out, []byte(k))
		}
		return out
	}
	errOut := func(err error) (string, bool) {
		if err != nil {
			return "error: " + err.Error(), true
		}
		return "", true
	}
	ctx := context.Background()
	switch td.Cmd {
	case "lock-mode":
		c.raftLocks = td.CmdArgs[0].Key == "raft"
		return "", true
	case "lock-result":
		return <-c.lockOut, true
	case "pause-loop":
		ch := make(chan struct{})
		c.stores[arg("store")].rs.paused.Store(&ch)
		return "", true
	case "lock":
		ks := keys()
		req := &mvcc.PessimisticLockRequest{Keys: ks, Primary: ks[0], StartTS: arg("start"), ForUpdateTS: arg("start"), LockTTL: 3000}
		if td.HasArg("primary-size") {
			req.Primary = bytes.Repeat([]byte{'p'}, int(arg("primary-size")))
		}
		p := c.readyLeader(t, arg("region"))
		if !td.HasArg("pipelined") {
			return errOut(p.MVCC().PessimisticLock(ctx, req, 0))
		}
		return c.pipelinedLock(p, req), true
	case "prewrite":
		req := &mvcc.PrewriteRequest{StartTS: arg("start"), ForUpdateTS: arg("start"), LockTTL: 3000}
		for _, a := range td.CmdArgs {
			if a.Key == "region" || a.Key == "start" {
				continue
			}
			if req.Primary == nil {
				req.Primary = []byte(a.Key)
			}
			req.Mutations = append(req.Mutations, kv.Mutation{Op: kv.OpPut, Key: []byte(a.Key), Value: []byte(a.Vals[0])})
			req.Pessimistic = append(req.Pessimistic, true)
		}
		_, err := c.readyLeader(t, arg("region")).MVCC().Prewrite(ctx, req, nil)
		return errOut(err)
	case "commit":
		return errOut(c.readyLeader(t, arg("region")).MVCC().Commit(ctx, keys(), arg("start"), arg("commit")))
	case "pessimistic-rollback":
		return errOut(c.readyLeader(t, arg("region")).MVCC().PessimisticRollback(ctx, keys(), arg("start"), arg("start")))
	case "locks":
		id := arg("region")
		var out []string
		for _, sid := range slices.Sorted(maps.Keys(c.stores)) {
			p := c.stores[sid].rs.Peer(id)
			if p == nil {
				continue
			}
			var mem []string
			p.locks.mu.RLock()
			for _, e := range p.locks.ents {
				mem = append(mem, lockString(t, e.key, e.value))
			}
			p.locks.mu.RUnlock()
			r := p.Meta()
			lo, hi := dataBounds(byte(mvcc.CFLock), r.StartKey, r.EndKey)
			it, err := c.stores[sid].rs.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
			if err != nil {
				t.Fatal(err)
			}
			var applied []string
			for it.First(); it.Valid(); it.Next() {
				applied = append(applied, lockString(t, it.Key()[1:], it.Value()))
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("store %d: memory [%s] applied [%s]", sid, strings.Join(mem, " "), strings.Join(applied, " ")))
		}
		return strings.Join(out, "\n"), true
	case "scan-locks":
		locks, err := c.readyLeader(t, arg("region")).MVCC().ScanLocks(nil, nil, 0, func(*mvcc.LockInfo) bool { return true })
		if err != nil {
			return errOut(err)
		}
		var out []string
		for _, l := range locks {
			out = append(out, fmt.Sprintf("%s %s@%d", l.Key, l.Kind, l.StartTS))
		}
		return strings.Join(out, "\n"), true
	case "get":
		var key string
		td.ScanArgs(t, "key", &key)
		v, err := c.readyLeader(t, arg("region")).MVCC().Get(ctx, []byte(key), arg("ts"))
		if err != nil {
			return errOut(err)
		}
		return string(v), true
	case "mem-lock-stats":
		st := c.stores[arg("store")].rs.MemLockStats()
		return fmt.Sprintf("writes %d flushes %d bytes %d", st.Writes, st.Flushes, st.Bytes), true
	}
	return "", false
}

// pipelinedLock starts req on p as the service does a pipelined lock,
// and says whether it was answered at its proposal, before it applied.
func (c *raftCluster) pipelinedLock(p *Peer, req *mvcc.PessimisticLockRequest) string {
	p.mu.Lock()
	before := len(p.props)
	p.mu.Unlock()
	proposed := make(chan struct{})
	hooks := &mvcc.Hooks{Proposed: func() { close(proposed) }}
	c.lockOut = make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.MVCC().PessimisticLock(mvcc.WithHooks(context.Background(), hooks), req, 0); err != nil {
			var re *RegionError
			if errors.As(err, &re) {
				c.lockOut <- "region error: " + re.Err.Message
				return
			}
			c.lockOut <- "error: " + err.Error()
			return
		}
		c.lockOut <- "locked"
	}()
	for {
		select {
		case <-proposed:
			return "answered at its proposal"
		case <-done:
			return "answered once applied"
		default:
		}
		p.mu.Lock()
		n := len(p.props)
		p.mu.Unlock()
		if n > before { // proposed; the hook, if any, comes at once
			select {
			case <-proposed:
				return "answered at its proposal"
			case <-time.After(20 * time.Millisecond):
				return "not answered at its proposal"
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// readyLeader returns the region's leader once it serves commands (it has
// applied its term's first entry), which in-memory locks need.
func (c *raftCluster) readyLeader(t *testing.T, id uint64) *Peer {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p := c.leader(id); p.leaseReady.Load() {
			return p
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("region %d has no leader serving commands:\n%s", id, c.peerStates(id))
	return nil
}

// peerStates describes each store's peer of region id: what a leader
// that does not serve commands is waiting for.
func (c *raftCluster) peerStates(id uint64) string {
	var out []string
	for _, sid := range slices.Sorted(maps.Keys(c.stores)) {
		p := c.stores[sid].rs.Peer(id)
		if p == nil {
			out = append(out, fmt.Sprintf("store %d: no peer", sid))
			continue
		}
		p.mu.Lock()
		st := p.rn.Status()
		pending := 0
		p.locks.mu.RLock()
		for _, e := range p.locks.ents {
			if e.pending {
				pending++
			}
		}
		n := len(p.locks.ents)
		p.locks.mu.RUnlock()
		out = append(out, fmt.Sprintf("store %d: peer %d %s term %d lead %d commit %d raft-applied %d applied %d last %d "+
			"isLeader %t leaderTerm %d termStart %d leaseReady %t leaseUntil-now %v transferee %d mem-locks %d (pending %d) props %d reads %d splitting %d",
			sid, p.self.Id, st.RaftState, st.Term, st.Lead, st.Commit, st.Applied, p.applied, p.lastIndex,
			p.isLeader.Load(), p.leaderTerm.Load(), p.termStart, p.leaseReady.Load(), time.Duration(p.leaseUntil.Load()-monoNow()),
			st.LeadTransferee, n, pending, len(p.props), len(p.reads), p.splitting))
		p.mu.Unlock()
	}
	return strings.Join(out, "\n")
}

// lockString shows a lock record as user key, kind and start ts.
func lockString(t *testing.T, encKey, value []byte) string {
	_, k, err := codec.DecodeBytes(encKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	kind := "?"
	if len(value) > 0 {
		kind = mvcc.LockKind(value[0]).String()
	}
	return fmt.Sprintf("%s:%s", k, kind)
}

// TestMemLocksIter checks the iterator of in-memory locks over the
// applied ones against a merged sorted list, moving at random both ways.
func TestMemLocksIter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		want := map[string]string{}
		var b mvcc.Batch
		for range rng.IntN(8) {
			k := fmt.Sprintf("k%02d", rng.IntN(20))
			want[k] = "engine-" + k
			b.Put(mvcc.CFLock, []byte(k), []byte(want[k]))
		}
		var mem memLocks
		for range rng.IntN(8) {
			k := fmt.Sprintf("k%02d", rng.IntN(20))
			want[k] = "memory-" + k
			mem.put([]byte(k), []byte(want[k]))
		}
		eng := mvcc.NewMemEngine()
		if err := eng.Write(&b, false); err != nil {
			t.Fatal(err)
		}
		lower, upper := []byte(fmt.Sprintf("k%02d", rng.IntN(10))), []byte(fmt.Sprintf("k%02d", 10+rng.IntN(11)))
		var sorted []string
		for k := range want {
			if k >= string(lower) && k < string(upper) {
				sorted = append(sorted, k)
			}
		}
		slices.Sort(sorted)
		it, err := eng.NewIter(mvcc.CFLock, lower, upper)
		if err != nil {
			t.Fatal(err)
		}
		var m mvcc.EngineIter = &memLocksIter{mem: mem.span(lower, upper), it: it}
		pos := -1 // index in sorted; -1 or len: invalid
		for step := range 40 {
			var ok bool
			switch op := rng.IntN(6); op {
			case 0:
				ok, pos = m.First(), 0
			case 1:
				ok, pos = m.Last(), len(sorted)-1
			case 2:
				k := fmt.Sprintf("k%02d", rng.IntN(22))
				ok, pos = m.SeekGE([]byte(k)), searchSorted(sorted, k)
			case 3:
				k := fmt.Sprintf("k%02d", rng.IntN(22))
				ok, pos = m.SeekLT([]byte(k)), searchSorted(sorted, k)-1
			case 4:
				if pos < 0 || pos >= len(sorted) {
					continue
				}
				ok, pos = m.Next(), pos+1
			case 5:
				if pos < 0 || pos >= len(sorted) {
					continue
				}
				ok, pos = m.Prev(), pos-1
			}
			valid := pos >= 0 && pos < len(sorted)
			if ok != valid || m.Valid() != valid {
				t.Fatalf("round %d step %d: valid %t, want %t", round, step, ok, valid)
			}
			if valid && (string(m.Key()) != sorted[pos] || string(m.Value()) != want[sorted[pos]]) {
				t.Fatalf("round %d step %d: at %s=%s, want %s=%s", round, step, m.Key(), m.Value(), sorted[pos], want[sorted[pos]])
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func searchSorted(sorted []string, k string) int {
	i, _ := slices.BinarySearch(sorted, k)
	return i
}
