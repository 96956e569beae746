package raftstore

import (
	"encoding/binary"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// A leader serves reads from its own applied state, without asking the
// other replicas, while it holds a lease: a time before which no other
// replica can have become leader. The lease rests on a promise raft makes
// with CheckQuorum on: a follower that has heard from its leader ignores
// votes (and pre-votes) until an election timeout of its own ticks has
// passed without another message from that leader. So when a quorum has
// answered something this leader sent at time t, no new leader can be
// elected before t plus (nearly) an election timeout, and every write
// committed until then went through this leader.
//
// The lease is renewed, as TiKV's is, from two kinds of round trip whose
// start time is known:
//   - a proposal made at t that commits (a quorum appended it, after t);
//   - a raft ReadIndex issued at t (ReadOnlySafe: the leader's heartbeat,
//     sent after t, came back from a quorum).
//
// It is measured on the monotonic clock, and never reaches a full election
// timeout: a follower's ticks come from a time.Ticker, which may deliver
// two ticks close together after a stall, so an election timeout of E
// ticks of length T lasts at least (E-2)·T; maxLease defaults to 90% of
// that, for clocks running at slightly different rates.
//
// Two things end a lease early. A leader transfer: the transferee
// campaigns at once, with votes that ignore the promise above; no round
// trip started before the transfer ends renews the lease (a leader whose
// transfer raft gave up has none until a round trip begun after that
// completes). A restart: a
// follower's promise lives in memory, so a store that restarts refuses
// votes until an election timeout has passed since it started (see
// Store.Step), which is what it would have done had it stayed up.

// clockBase anchors monoNow: time.Since reads the monotonic clock, which
// wall-clock changes do not move.
var clockBase = time.Now()

// monoNow is the monotonic time in nanoseconds since clockBase.
func monoNow() int64 { return int64(time.Since(clockBase)) }

// defaultMaxLease is the lease a Config with no MaxLeaderLease gets, and
// the longest one allowed: see the comment at the top of this file.
func defaultMaxLease(cfg Config) time.Duration {
	return cfg.Tick * time.Duration(cfg.ElectionTicks-2) * 9 / 10
}

// inLease says whether this peer may serve a read from its applied state
// now.
func (p *Peer) inLease(now int64) bool {
	return p.leaseReady.Load() && now < p.leaseUntil.Load()
}

// renewLease extends the lease to at+maxLease, where at is the start of a
// round trip that a quorum has completed. Call with mu held.
func (p *Peer) renewLease(at int64) {
	if at <= p.leaseFence || !p.isLeader.Load() || p.transferring {
		return
	}
	if until := at + int64(p.s.maxLease); until > p.leaseUntil.Load() {
		p.leaseUntil.Store(until)
	}
}

// endLease makes the lease lapse now; round trips begun before now no
// longer renew it. Call with mu held.
func (p *Peer) endLease() {
	p.leaseUntil.Store(0)
	p.leaseFence = monoNow()
}

// maybeRenewLease starts a ReadIndex round trip whose only purpose is to
// renew the lease, when a read served under it finds less than a third of
// it left: a region that is read but not written keeps its lease without
// its readers ever waiting for a round trip. At most one such round trip
// is started per sixth of a lease.
func (p *Peer) maybeRenewLease(now int64) {
	maxLease := int64(p.s.maxLease)
	if p.leaseUntil.Load()-now > maxLease/3 {
		return
	}
	last := p.renewStarted.Load()
	if now-last < maxLease/6 || !p.renewStarted.CompareAndSwap(last, now) {
		return
	}
	p.mu.Lock()
	if p.leadsLocked() {
		id := p.nextID
		p.nextID++
		p.reads[id] = pendingRead{at: now}
		p.rn.ReadIndex(binary.BigEndian.AppendUint64(nil, id))
	}
	p.mu.Unlock()
	p.s.wake()
}

// pendingRead is a raft ReadIndex request in flight: ch gets the read
// index (nil for a lease renewal only), at is when it was issued.
type pendingRead struct {
	ch chan uint64
	at int64
}

// proposal is a command in flight: done gets its outcome once applied;
// at is when it was proposed.
type proposal struct {
	done chan error
	at   int64
}

// voteRefused says whether the store drops m, a vote or pre-vote request,
// because the store started less than an election timeout ago: it may
// have promised a leader, before it stopped, not to vote until then.
// Votes from a leader transfer do not wait: the leader that asked for them
// gave its lease up.
func (s *Store) voteRefused(m *raftpb.Message) bool {
	if m.Type != raftpb.MsgVote && m.Type != raftpb.MsgPreVote {
		return false
	}
	if string(m.Context) == campaignTransfer {
		return false
	}
	return monoNow()-s.startedAt.Load() < int64(s.cfg.Tick)*int64(s.cfg.ElectionTicks)
}

// campaignTransfer is the context etcd raft puts on the votes of a
// campaign that a leader transfer started (raft.campaignTransfer, not
// exported).
const campaignTransfer = "CampaignTransfer"
