package raftstore

import "math"

// The write filter of a region's leader (store/mvcc's recent.go): the
// leader's conflict checks (a prewrite's on the keys it did not lock, a
// pessimistic lock's, a one-phase commit's rollback lookup) skip Pebble
// for a key that no CFWrite record can have reached since the
// transaction started, which is most keys: each such check is a seek
// through the memtables and the levels.
//
// The store's regions share one table of recent writes (Store.writeTable),
// in which every region's mvcc.Store notes each CFWrite record it writes
// before proposing it. A peer's floor says which versions the table
// vouches for:
//
//   - It is math.MaxUint64 (nothing proven) unless the peer leads: a
//     follower applies records its leader decided, which its table never
//     saw.
//   - A leader in term T sets it once (SetWriteFloor) to a timestamp above
//     every record its former leaders wrote or decided: a timestamp PD
//     issued after the peer became leader in T, plus one. A record of an
//     earlier term was decided before T began, at a commit ts PD issued
//     before then or one a store chose as max(start ts, for-update ts,
//     max ts) + 1 from timestamps PD issued before then; either is at most
//     any timestamp PD issues after. Records the peer itself decides are
//     in the table.
//   - It goes back to math.MaxUint64, under mu, when the peer stops
//     leading, or its raft term moves past T, or it is destroyed: the
//     floor of one term never carries over to the next.
//
// A check trusts the filter only with its key's latch held; the write
// that could put a record there was noted before it took its latch.

// SetWriteFloor turns the write filter on for this peer's leadership in
// term, with floor above the version of every record the region's
// earlier leaders could have written (see above). It does nothing if
// the peer no longer leads in term, or has a floor for term already.
func (p *Peer) SetWriteFloor(term, floor uint64) {
	if term == 0 || p.writeFloorTerm.Load() == term {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed || !p.isLeader.Load() || p.leaderTerm.Load() != term || p.rn.BasicStatus().Term != term {
		return
	}
	p.writeFloor.Store(floor)
	p.writeFloorTerm.Store(term)
}

// dropWriteFloorLocked turns the write filter off. Call with mu held.
func (p *Peer) dropWriteFloorLocked() {
	p.writeFloor.Store(math.MaxUint64)
	p.writeFloorTerm.Store(0)
}
