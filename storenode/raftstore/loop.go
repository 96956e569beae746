package raftstore

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// readyPeer is one peer's share of a loop iteration.
type readyPeer struct {
	p  *Peer
	rd raft.Ready
	// after: the Ready's messages that wait until it is durable.
	after []raftpb.Message
	// early: its committed entries apply while its log write is in flight.
	early bool
}

// loop is the store's Ready loop; see the package comment.
func (s *Store) loop() {
	defer close(s.stopped)
	s.logWriter = make(chan logWriteJob)
	defer close(s.logWriter)
	go runLogWriter(s.logWriter)
	ticker := time.NewTicker(s.cfg.Tick)
	defer ticker.Stop()
	var ticks int
	for {
		select {
		case <-s.stopCh:
			return
		case now := <-ticker.C:
			ticks++
			s.loopPeers = s.appendPeers(s.loopPeers[:0])
			for _, p := range s.loopPeers {
				p.mu.Lock()
				if !p.destroyed {
					p.rn.Tick()
					p.checkTransferLocked() // raft gives a transfer up on a tick
					if p.leaderID == 0 && now.Before(p.campaignUntil) && ticks%2 == 0 {
						_ = p.rn.Campaign()
					}
				}
				p.mu.Unlock()
			}
		case <-s.wakeCh:
		}
		if ch := s.paused.Load(); ch != nil {
			select { // a test stalls the loop, as a stuck disk would
			case <-*ch:
			case <-s.stopCh:
				return
			}
		}
		if err := s.handleReady(); err != nil {
			// Pebble treats a failed write as fatal and panics; any other
			// error here is a bug that must not pass silently either.
			panic(err)
		}
	}
}

// overlapLogWrite switches on what handleReady overlaps with the log
// write; off, an iteration writes, then sends, then applies, as it did
// before (for BenchmarkLogWrite's comparison).
var overlapLogWrite = true

// handleReady runs one iteration over every peer that has work.
//
// The log write (one fsync when sync-log is on) is the iteration's long
// wait, and two things that do not depend on it overlap it:
//
//   - messages that claim nothing about this Ready's state go out before
//     it (waitsForPersist): a leader's appends reach its followers while
//     it writes the same entries itself (Raft thesis, 10.2.1). Raft counts
//     the leader's own copy towards a quorum only at Advance, after the
//     write, so an entry is committed only once a quorum has it on disk.
//   - committed entries that were durable here before this Ready apply
//     while it is written (appliesEarly), so that a write acknowledged by
//     the followers is answered without waiting for the next writes' fsync.
func (s *Store) handleReady() error {
	var rps []readyPeer
	readyAt := monoNow()
	s.loopPeers = s.appendPeers(s.loopPeers[:0])
	for _, p := range s.loopPeers {
		p.mu.Lock()
		if !p.destroyed && p.rn.HasReady() {
			rd := p.rn.Ready()
			early := overlapLogWrite && appliesEarly(&rd, p.lastIndex) && !p.regainsLocked(&rd)
			rps = append(rps, readyPeer{p: p, rd: rd, early: early})
		}
		p.mu.Unlock()
	}
	if len(rps) == 0 {
		return nil
	}
	// 1. Send what need not wait.
	var early []readyPeer
	for i := range rps {
		rp := &rps[i]
		now, after := []raftpb.Message(nil), rp.rd.Messages
		if overlapLogWrite {
			now, after = splitMessages(after)
		}
		rp.after = after
		s.trans.send(rp.p, now)
		if rp.early {
			early = append(early, *rp)
		}
	}
	// 2. Persist every peer's snapshot, entries and hard state: one batch
	// per goroutine of the store pool, committed together (Pebble syncs
	// concurrent commits' WAL writes once); meanwhile, apply what may.
	durable := make(chan struct{})
	writes, err := s.buildLogWrites(rps, durable)
	if err != nil {
		close(durable)
		return err
	}
	if hook := s.loopHook.Load(); hook != nil {
		(*hook)(logWritesBuilt, rps)
	}
	if len(early) == 0 {
		err = s.commitLogWrites(writes, durable)
	} else {
		done := make(chan error, 1)
		s.logWriter <- logWriteJob{s: s, writes: writes, durable: durable, done: done}
		err = s.apply(early)
		err = errors.Join(err, <-done)
	}
	if err != nil {
		return err
	}
	for _, rp := range rps {
		if err := rp.p.afterPersist(&rp.rd, readyAt); err != nil {
			return err
		}
	}
	// 3. Send the rest; 4. apply the rest, on the apply pool; 5. advance.
	late := rps[:0:0]
	for _, rp := range rps {
		rp.p.mu.Lock()
		gone := rp.p.destroyed
		rp.p.mu.Unlock()
		if !gone {
			// A peer destroyed since its Ready was taken acknowledges
			// nothing: persist wrote nothing for it, or destroy wiped
			// what it wrote.
			s.trans.send(rp.p, rp.after)
		}
		if !rp.early {
			late = append(late, rp)
		}
	}
	if err := s.apply(late); err != nil {
		return err
	}
	if hook := s.loopHook.Load(); hook != nil {
		(*hook)(appliedAll, rps)
	}
	for _, rp := range rps {
		rp.p.mu.Lock()
		if !rp.p.destroyed {
			rp.p.rn.Advance(rp.rd)
			if rp.p.rn.HasReady() {
				s.wake()
			}
		}
		rp.p.mu.Unlock()
	}
	return nil
}

// loopPoint is a point of handleReady where a test may stop the loop
// (Store.loopHook).
type loopPoint int

const (
	// logWritesBuilt: the log writes are built, not yet committed.
	logWritesBuilt loopPoint = iota
	// appliedAll: every committed entry is applied, and the peers are not
	// yet advanced.
	appliedAll
)

// waitsForPersist says whether a message of type t may leave only once
// the Ready that holds it is durable: an acknowledgement of appended
// entries or a vote, which promise what this store has persisted. These
// are the messages go.etcd.io/raft/v3 itself holds back until the write
// when its storage writes are asynchronous (msgsAfterAppend); all others
// (appends and heartbeats from a leader, vote requests, snapshots) it
// lets go at once.
func waitsForPersist(t raftpb.MessageType) bool {
	return t == raftpb.MsgAppResp || t == raftpb.MsgVoteResp || t == raftpb.MsgPreVoteResp
}

// splitMessages splits a Ready's messages into those that may go now and
// those that wait until it is durable, each in their order.
func splitMessages(msgs []raftpb.Message) (now, after []raftpb.Message) {
	i := 0
	for i < len(msgs) && !waitsForPersist(msgs[i].Type) {
		i++
	}
	if i == len(msgs) {
		return msgs, nil // the usual case: no copy
	}
	now = msgs[:i:i]
	for _, m := range msgs[i:] {
		if waitsForPersist(m.Type) {
			after = append(after, m)
		} else {
			now = append(now, m)
		}
	}
	return now, after
}

// appliesEarly says whether rd's committed entries may apply while rd's
// own entries and hard state are being written, persisted being the last
// index of the log already durable here: they must all be in that log
// (committed on a quorum, and on this store's disk whatever the write
// does), rd must overwrite none of them, and the Ready must change
// nothing that applying depends on or that must go first: no snapshot,
// no change of role (its SoftState, handled once persisted); and the
// entries must be plain writes: no configuration change (which may remove
// this peer and its data while its log is being written), no admin
// command (a split creates peers, whose state other peers' log writes of
// the same iteration may touch).
func appliesEarly(rd *raft.Ready, persisted uint64) bool {
	n := len(rd.CommittedEntries)
	if n == 0 || rd.SoftState != nil || !raft.IsEmptySnap(rd.Snapshot) {
		return false
	}
	last := rd.CommittedEntries[n-1].Index
	if last > persisted || len(rd.Entries) > 0 && rd.Entries[0].Index <= last {
		return false
	}
	for i := range rd.CommittedEntries {
		e := &rd.CommittedEntries[i]
		if e.Type != raftpb.EntryNormal || isAdmin(e.Data) {
			return false
		}
	}
	return true
}

// regainsLocked says whether rd shows a leader in a term other than the
// one it last became leader in: it lost its leadership and won it back
// since the last Ready, a change of role that rd's SoftState does not
// show (see afterPersist). Nothing applies before afterPersist has seen
// it: an apply would let the peer serve with its old term's first index.
// Call with mu held.
func (p *Peer) regainsLocked(rd *raft.Ready) bool {
	return p.isLeader.Load() && !raft.IsEmptyHardState(rd.HardState) && rd.HardState.Term != p.leaderTerm.Load()
}

// isAdmin says whether data, an encoded raft_cmdpb.RaftCmdRequest, holds
// an admin request (field 3), or cannot be read: it walks the message's
// top-level fields without decoding them.
func isAdmin(data []byte) bool {
	for len(data) > 0 {
		tag, n := binary.Uvarint(data)
		if n <= 0 {
			return true
		}
		data = data[n:]
		if tag>>3 == 3 {
			return true
		}
		switch tag & 7 {
		case 0: // varint
			if _, n = binary.Uvarint(data); n <= 0 {
				return true
			}
		case 1: // fixed64
			n = 8
		case 2: // bytes
			l, m := binary.Uvarint(data)
			if m <= 0 || l > uint64(len(data)-m) {
				return true
			}
			n = m + int(l)
		case 5: // fixed32
			n = 4
		default:
			return true
		}
		if n > len(data) {
			return true
		}
		data = data[n:]
	}
	return false
}

// logWriteJob is an iteration's log write handed to the store's log
// writer, to run while the iteration applies what may go first.
type logWriteJob struct {
	s       *Store
	writes  []logWrite
	durable chan struct{}
	done    chan<- error
}

// runLogWriter commits the log writes it is given, one at a time, until
// jobs is closed. It is one goroutine for the store's life rather than one
// per iteration: a new goroutine's stack grows, copied, to the depth of a
// Pebble commit each time, which cost a follower 4% of its CPU under
// oltp_write_only.
func runLogWriter(jobs <-chan logWriteJob) {
	for j := range jobs {
		j.done <- j.s.commitLogWrites(j.writes, j.durable)
	}
}

// logWrite is one batch of a Ready loop iteration's log writes.
type logWrite struct {
	wb   *pebble.Batch
	sync bool
}

// buildLogWrites adds every peer's snapshot, entries and hard state to
// batches, one per goroutine of the store pool; durable is to be closed
// once they are committed (see persist). A batch is synced only if
// one of its Readys must be (raft.Ready.MustSync: new entries, a new term
// or vote) or installs a snapshot. A Ready that only moves the commit
// index is written unsynced, as etcd and TiKV write it: what it commits is
// on a quorum's disks already, and should a crash lose the new commit
// index, raft learns it again from the leader (and loadPeers raises it to
// the applied index). Under write_only that is one sync in seven or eight.
func (s *Store) buildLogWrites(rps []readyPeer, durable chan struct{}) ([]logWrite, error) {
	n := max(1, min(s.cfg.StorePoolSize, len(rps)))
	writes := make([]logWrite, n)
	for g := range writes {
		writes[g].wb = s.db.NewBatch()
	}
	err := inGroups(rps, n, func(g int, group []readyPeer) error {
		w := &writes[g]
		for i := range group {
			rp := &group[i]
			if err := rp.p.persist(w.wb, &rp.rd, durable); err != nil {
				return err
			}
			w.sync = w.sync || rp.rd.MustSync || !raft.IsEmptySnap(rp.rd.Snapshot)
		}
		return nil
	})
	if err != nil {
		for _, w := range writes {
			_ = w.wb.Close()
		}
		return nil, err
	}
	return writes, nil
}

// commitLogWrites commits the batches, each on a goroutine of its own,
// synced when raftstore.sync-log is on, closes them, and then closes
// durable. It takes no peer's lock: a destroy waits for durable holding
// one (see persist).
func (s *Store) commitLogWrites(writes []logWrite, durable chan struct{}) error {
	defer close(durable)
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i := range writes {
		w := &writes[i]
		commit := func() {
			defer w.wb.Close()
			if w.wb.Empty() {
				return
			}
			opts := pebble.NoSync
			if w.sync && s.cfg.SyncLog {
				opts = pebble.Sync
				s.logSyncs.Add(1)
			}
			errs[i] = w.wb.Commit(opts)
		}
		if i == len(writes)-1 {
			commit()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			commit()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// apply applies the peers' committed entries on the apply pool.
func (s *Store) apply(rps []readyPeer) error {
	if len(rps) == 0 {
		return nil
	}
	return inGroups(rps, s.cfg.ApplyPoolSize, func(_ int, group []readyPeer) error {
		for i := range group {
			if err := group[i].p.handleCommitted(&group[i].rd); err != nil {
				return err
			}
		}
		return nil
	})
}

// inGroups splits rps into at most n groups of consecutive peers and runs
// f on each group (with its number) on a goroutine of its own (the first
// on this one), returning the first error.
func inGroups(rps []readyPeer, n int, f func(int, []readyPeer) error) error {
	n = min(n, len(rps))
	if n <= 1 {
		return f(0, rps)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for g := 1; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = f(g, rps[g*len(rps)/n:(g+1)*len(rps)/n])
		}()
	}
	errs[0] = f(0, rps[:len(rps)/n])
	wg.Wait()
	return errors.Join(errs...)
}

// persist adds a Ready's snapshot, entries and hard state to wb, which
// is committed after durable is closed. A destroy between the two would
// otherwise have them land after it wiped the peer's log and hard state:
// raft keys under a tombstone, which a later peer of the region on this
// store (created by message) would load at its next restart. So destroy,
// under mu as persist is, waits for durable first (logDurable).
func (p *Peer) persist(wb *pebble.Batch, rd *raft.Ready, durable chan struct{}) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		return nil // removed since its Ready was taken: write nothing back
	}
	p.logDurable = durable
	id := p.region.Id
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := p.persistSnapshot(wb, rd.Snapshot); err != nil {
			return err
		}
	}
	if n := len(rd.Entries); n > 0 {
		for i := range rd.Entries {
			if err := wb.Set(logKey(id, rd.Entries[i].Index), mustMarshal(&rd.Entries[i]), nil); err != nil {
				return err
			}
		}
		// Entries past the new last one were overwritten by a new leader.
		if last := rd.Entries[n-1].Index; last < p.lastIndex {
			if err := wb.DeleteRange(logKey(id, last+1), logKey(id, p.lastIndex+1), nil); err != nil {
				return err
			}
		}
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := wb.Set(hardStateKey(id), mustMarshal(&rd.HardState), nil); err != nil {
			return err
		}
	}
	return nil
}

// afterPersist updates the peer's memory once its Ready is durable;
// readyAt is when the loop took it, before any of its messages went out.
func (p *Peer) afterPersist(rd *raft.Ready, readyAt int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		return nil
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := p.afterSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if err := p.storage.Append(rd.Entries); err != nil {
		return err
	}
	if n := len(rd.Entries); n > 0 {
		p.lastIndex = rd.Entries[n-1].Index
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := p.storage.SetHardState(rd.HardState); err != nil {
			return err
		}
	}
	wasLeader := p.isLeader.Load()
	isLeader := wasLeader
	if rd.SoftState != nil {
		p.leaderID = rd.SoftState.Lead
		isLeader = rd.SoftState.RaftState == raft.StateLeader
	}
	var term uint64 // the raft term as of rd
	if wasLeader || isLeader {
		hs, _, _ := p.storage.MemoryStorage.InitialState() // rd's, set above
		term = hs.Term
	}
	// A leader whose term moved since the last Ready lost its leadership
	// and won it again in between (it stepped down on a message of a
	// higher term and won the next election before the loop took a
	// Ready): the Ready shows no change of role, but another leader may
	// have served writes meanwhile, so everything this peer held for its
	// old term goes, as if the loop had seen it follow.
	regained := wasLeader && isLeader && term != p.leaderTerm.Load()
	if wasLeader && (!isLeader || regained) {
		p.locks.clear() // lost with the leadership (memlocks.go)
		p.dropWriteFloorLocked()
		p.transferring = false
		p.leaseReady.Store(false)
		p.endLease()
		p.failPending(p.notLeaderLocked())
	}
	p.isLeader.Store(isLeader)
	if isLeader && (!wasLeader || regained) {
		// The empty entry a new leader appends is the last one now. The
		// term began before rd's messages carried it to the followers:
		// their promise not to vote (lease.go) runs from when they got
		// it, so the lease may count from when rd was taken.
		p.termStart = p.lastIndex
		p.termStartAt = readyAt
		p.transferring = false
		p.leaderTerm.Store(term)
		p.leaseReady.Store(false) // until termStart applies
		p.leaseUntil.Store(0)
		p.flow.take() // counted as a follower: not news
		p.s.log.Info("became leader", "region", p.region.Id, "term", term, "index", p.termStart)
	}
	if t := p.writeFloorTerm.Load(); t != 0 && (!p.isLeader.Load() || p.rn.BasicStatus().Term != t) {
		p.dropWriteFloorLocked()
	}
	for _, rs := range rd.ReadStates {
		if len(rs.RequestCtx) == 8 {
			id := beUint64(rs.RequestCtx)
			if r, ok := p.reads[id]; ok {
				p.renewLease(r.at)
				if r.ch != nil {
					r.ch <- rs.Index
				}
				delete(p.reads, id)
			}
		}
	}
	return nil
}

// advanceApplied wakes those waiting for the applied index. Call with mu
// held.
func (p *Peer) advanceApplied() {
	close(p.appliedCh)
	p.appliedCh = make(chan struct{})
}

// errStale ends a proposal that was overtaken: its entry was replaced in
// the log, or the region changed under it.
func errStale(msg string) *RegionError {
	return &RegionError{Err: &errorpb.Error{Message: msg, StaleCommand: &errorpb.StaleCommand{}}}
}
