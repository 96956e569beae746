package raftstore

import (
	"errors"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"go.etcd.io/raft/v3"
)

// readyPeer is one peer's share of a loop iteration.
type readyPeer struct {
	p  *Peer
	rd raft.Ready
}

// loop is the store's Ready loop; see the package comment.
func (s *Store) loop() {
	defer close(s.stopped)
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

// handleReady runs one iteration over every peer that has work.
func (s *Store) handleReady() error {
	var rps []readyPeer
	s.loopPeers = s.appendPeers(s.loopPeers[:0])
	for _, p := range s.loopPeers {
		p.mu.Lock()
		if !p.destroyed && p.rn.HasReady() {
			rps = append(rps, readyPeer{p: p, rd: p.rn.Ready()})
		}
		p.mu.Unlock()
	}
	if len(rps) == 0 {
		return nil
	}
	// 1. Persist every peer's snapshot, entries and hard state: one batch
	// per goroutine of the store pool, committed together (Pebble syncs
	// concurrent commits' WAL writes once).
	err := inGroups(rps, s.cfg.StorePoolSize, func(group []readyPeer) error {
		wb := s.db.NewBatch()
		defer wb.Close()
		sync := false
		for i := range group {
			rp := &group[i]
			if err := rp.p.persist(wb, &rp.rd); err != nil {
				return err
			}
			sync = sync || len(rp.rd.Entries) > 0 || !raft.IsEmptyHardState(rp.rd.HardState) || !raft.IsEmptySnap(rp.rd.Snapshot)
		}
		opts := pebble.NoSync
		if wb.Empty() {
			return nil
		}
		if sync && s.cfg.SyncLog {
			opts = pebble.Sync
			s.logSyncs.Add(1)
		}
		return wb.Commit(opts)
	})
	if err != nil {
		return err
	}
	for _, rp := range rps {
		if err := rp.p.afterPersist(&rp.rd); err != nil {
			return err
		}
	}
	// 2. Send messages; 3. apply, on the apply pool; 4. advance.
	for _, rp := range rps {
		s.trans.send(rp.p, rp.rd.Messages)
	}
	err = inGroups(rps, s.cfg.ApplyPoolSize, func(group []readyPeer) error {
		for i := range group {
			if err := group[i].p.handleCommitted(&group[i].rd); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
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

// inGroups splits rps into at most n groups of consecutive peers and runs
// f on each group on a goroutine of its own (the first on this one),
// returning the first error.
func inGroups(rps []readyPeer, n int, f func([]readyPeer) error) error {
	n = min(n, len(rps))
	if n <= 1 {
		return f(rps)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for g := 1; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = f(rps[g*len(rps)/n : (g+1)*len(rps)/n])
		}()
	}
	errs[0] = f(rps[:len(rps)/n])
	wg.Wait()
	return errors.Join(errs...)
}

// persist adds a Ready's snapshot, entries and hard state to wb.
func (p *Peer) persist(wb *pebble.Batch, rd *raft.Ready) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		return nil // removed since its Ready was taken: write nothing back
	}
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

// afterPersist updates the peer's memory once its Ready is durable.
func (p *Peer) afterPersist(rd *raft.Ready) error {
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
	if rd.SoftState != nil {
		wasLeader := p.isLeader.Load()
		p.leaderID = rd.SoftState.Lead
		isLeader := rd.SoftState.RaftState == raft.StateLeader
		p.isLeader.Store(isLeader)
		if isLeader && !wasLeader {
			// The empty entry a new leader appends is the last one now.
			p.termStart = p.lastIndex
			p.termStartAt = monoNow()
			p.transferring = false
			p.leaderTerm.Store(p.rn.BasicStatus().Term)
			p.leaseReady.Store(false) // until termStart applies
			p.leaseUntil.Store(0)
			p.flow.take() // counted as a follower: not news
			p.s.log.Info("became leader", "region", p.region.Id, "term", p.rn.BasicStatus().Term, "index", p.termStart)
		}
		if wasLeader && !isLeader {
			p.locks.clear() // lost with the leadership (memlocks.go)
			p.transferring = false
			p.leaseReady.Store(false)
			p.endLease()
			p.failPending(p.notLeaderLocked())
		}
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
