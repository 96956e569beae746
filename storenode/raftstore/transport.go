package raftstore

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// transport sends Raft messages to other stores: BatchRaft streams
// (tikvpb's, carrying raft_serverpb.RaftMessages), RaftConnNum per store,
// each on a connection of its own and fed by a queue that a sender drains
// in batches; a region's messages always take the same one, so they
// arrive in order. A MsgSnap goes apart, with its
// snapshot's data, over a Snapshot stream of its own (snapshot_send.go).
type transport struct {
	s     *Store
	mu    sync.Mutex
	conns map[uint64][]*storeConn // by store ID
	done  chan struct{}
	snaps *snapManager
}

type storeConn struct {
	t       *transport
	storeID uint64
	ch      chan *raft_serverpb.RaftMessage
}

// The queue to each store holds this many messages; more are dropped, as
// an unreachable store's would be (Raft resends).
const sendQueueLen = 4096

func newTransport(s *Store) *transport {
	return &transport{s: s, conns: map[uint64][]*storeConn{}, done: make(chan struct{}), snaps: newSnapManager(s)}
}

// close stops the senders, and ends and releases the snapshots in flight.
func (t *transport) close() {
	close(t.done)
	t.snaps.close()
}

// send queues a Ready's messages from peer p.
func (t *transport) send(p *Peer, msgs []raftpb.Message) {
	if len(msgs) == 0 {
		return
	}
	p.mu.Lock()
	region, self := p.region, p.self
	p.mu.Unlock()
	for i := range msgs {
		m := &msgs[i]
		to := findPeer(region, m.To)
		if to == nil {
			// A peer that has yet to learn its region knows its leader
			// only from the messages it got.
			to = t.s.knownPeer(m.To)
		}
		if to == nil {
			if m.Type == raftpb.MsgSnap {
				t.snaps.drop(snapKeyOf(region.Id, m.Snapshot.Metadata), false) // unpin its data
			}
			continue
		}
		rm := &raft_serverpb.RaftMessage{RegionId: region.Id, FromPeer: self, ToPeer: to,
			RegionEpoch: region.RegionEpoch, StartKey: region.StartKey, EndKey: region.EndKey, Message: toEraft(m)}
		if m.Type == raftpb.MsgSnap {
			t.sendSnapshot(rm, snapKeyOf(region.Id, m.Snapshot.Metadata))
			continue
		}
		c := t.conn(to.StoreId, region.Id)
		select {
		case c.ch <- rm:
		default:
			t.unreachable(rm)
		}
	}
}

// sendTombstones tells peers removed from region that they were: their
// stores destroy them (TiKV's is_tombstone messages).
func (t *transport) sendTombstones(region *metapb.Region, from *metapb.Peer, removed []*metapb.Peer) {
	for _, to := range removed {
		rm := &raft_serverpb.RaftMessage{RegionId: region.Id, FromPeer: from, ToPeer: to,
			RegionEpoch: region.RegionEpoch, IsTombstone: true, Message: &eraftpb.Message{}}
		select {
		case t.conn(to.StoreId, region.Id).ch <- rm:
		default:
		}
	}
}

// conn is the connection that carries region's messages to a store.
func (t *transport) conn(storeID, region uint64) *storeConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.conns[storeID]
	if cs == nil {
		cs = make([]*storeConn, max(1, t.s.cfg.RaftConnNum))
		for i := range cs {
			cs[i] = &storeConn{t: t, storeID: storeID, ch: make(chan *raft_serverpb.RaftMessage, sendQueueLen)}
			go cs[i].run()
		}
		t.conns[storeID] = cs
	}
	return cs[region%uint64(len(cs))]
}

// unreachable tells the sending peer a message was lost, so that raft
// probes the follower again (and a snapshot is resent).
func (t *transport) unreachable(rm *raft_serverpb.RaftMessage) {
	p := t.s.Peer(rm.RegionId)
	if p == nil {
		return
	}
	p.mu.Lock()
	if !p.destroyed {
		p.rn.ReportUnreachable(rm.ToPeer.Id)
		if rm.Message.MsgType == eraftpb.MessageType_MsgSnapshot {
			p.rn.ReportSnapshot(rm.ToPeer.Id, raft.SnapshotFailure)
		}
	}
	p.mu.Unlock()
}

// snapshotSent tells the sending peer its snapshot reached the follower.
func (t *transport) snapshotSent(rm *raft_serverpb.RaftMessage) {
	if p := t.s.Peer(rm.RegionId); p != nil {
		p.mu.Lock()
		if !p.destroyed {
			p.rn.ReportSnapshot(rm.ToPeer.Id, raft.SnapshotFinish)
		}
		p.mu.Unlock()
	}
}

// run connects to the store and streams its queue, reconnecting after a
// failure; messages that could not be sent are reported unreachable.
func (c *storeConn) run() {
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-c.t.done:
			return
		default:
		}
		err := c.stream()
		if err != nil {
			c.t.s.log.Debug("raft stream to store failed", "store", c.storeID, "err", err)
		}
		// Drop what queued meanwhile: raft resends what matters.
		for n := len(c.ch); n > 0; n-- {
			c.t.unreachable(<-c.ch)
		}
		select {
		case <-c.t.done:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (c *storeConn) stream() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	addr, err := c.t.s.cfg.Resolve(rctx, c.storeID)
	rcancel()
	if err != nil {
		return err
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		return err
	}
	defer cc.Close()
	st, err := tikvpb.NewTikvClient(cc).BatchRaft(ctx)
	if err != nil {
		return err
	}
	batch := &tikvpb.BatchRaftMessage{}
	for {
		var first *raft_serverpb.RaftMessage
		select {
		case <-c.t.done:
			_, _ = st.CloseAndRecv()
			return nil
		case first = <-c.ch:
		}
		batch.Msgs = append(batch.Msgs[:0], first)
		for len(batch.Msgs) < 128 && len(c.ch) > 0 {
			batch.Msgs = append(batch.Msgs, <-c.ch)
		}
		if err := st.Send(batch); err != nil {
			for _, m := range batch.Msgs {
				c.t.unreachable(m)
			}
			return err
		}
	}
}

// toEraft converts an etcd raft message to kvproto's eraftpb, whose
// message and entry types have the same numbers.
func toEraft(m *raftpb.Message) *eraftpb.Message {
	em := &eraftpb.Message{MsgType: eraftpb.MessageType(m.Type), To: m.To, From: m.From, Term: m.Term,
		LogTerm: m.LogTerm, Index: m.Index, Commit: m.Commit, Reject: m.Reject, RejectHint: m.RejectHint,
		Context: m.Context}
	if len(m.Entries) > 0 {
		em.Entries = make([]*eraftpb.Entry, len(m.Entries))
		for i, e := range m.Entries {
			em.Entries[i] = &eraftpb.Entry{EntryType: eraftpb.EntryType(e.Type), Term: e.Term, Index: e.Index, Data: e.Data}
		}
	}
	if m.Snapshot != nil {
		md := m.Snapshot.Metadata
		cs := md.ConfState
		em.Snapshot = &eraftpb.Snapshot{Data: m.Snapshot.Data, Metadata: &eraftpb.SnapshotMetadata{
			Index: md.Index, Term: md.Term, ConfState: &eraftpb.ConfState{Voters: cs.Voters, Learners: cs.Learners,
				VotersOutgoing: cs.VotersOutgoing, LearnersNext: cs.LearnersNext, AutoLeave: cs.AutoLeave}}}
	}
	return em
}

// fromEraft is toEraft's inverse. It refuses a message with a missing
// entry (garbage from the wire).
func fromEraft(em *eraftpb.Message) (raftpb.Message, bool) {
	m := raftpb.Message{Type: raftpb.MessageType(em.MsgType), To: em.To, From: em.From, Term: em.Term,
		LogTerm: em.LogTerm, Index: em.Index, Commit: em.Commit, Reject: em.Reject, RejectHint: em.RejectHint,
		Context: em.Context}
	if len(em.Entries) > 0 {
		m.Entries = make([]raftpb.Entry, len(em.Entries))
		for i, e := range em.Entries {
			if e == nil {
				return m, false
			}
			m.Entries[i] = raftpb.Entry{Type: raftpb.EntryType(e.EntryType), Term: e.Term, Index: e.Index, Data: e.Data}
		}
	}
	if em.Snapshot != nil {
		md := em.Snapshot.GetMetadata()
		cs := md.GetConfState()
		m.Snapshot = &raftpb.Snapshot{Data: em.Snapshot.Data, Metadata: raftpb.SnapshotMetadata{
			Index: md.GetIndex(), Term: md.GetTerm(), ConfState: raftpb.ConfState{Voters: cs.GetVoters(),
				Learners: cs.GetLearners(), VotersOutgoing: cs.GetVotersOutgoing(), LearnersNext: cs.GetLearnersNext(),
				AutoLeave: cs.GetAutoLeave()}}}
	}
	return m, true
}

// ServeBatchRaft receives another store's stream of Raft message batches
// (tikvpb's BatchRaft) and steps each message.
func (s *Store) ServeBatchRaft(stream tikvpb.Tikv_BatchRaftServer) error {
	for {
		b, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(&raft_serverpb.Done{})
		}
		if err != nil {
			return err
		}
		for _, m := range b.Msgs {
			s.Step(m)
		}
	}
}
