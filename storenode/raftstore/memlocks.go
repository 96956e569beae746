package raftstore

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
	"go.etcd.io/raft/v3"
)

// In-memory pessimistic locks (TiKV 6.0's pessimistic-txn.in-memory): a
// leader keeps the pessimistic locks of its region in memory instead of
// proposing them through Raft, and its reads of the lock column family see
// them over the applied data. A pessimistic lock only keeps other writers
// off a key until the transaction prewrites it, and a prewrite that finds
// its lock missing fails (mvcc's pessimistic lock not found, as TiKV's
// PessimisticLockNotFound): so a lock lost with its leader costs that
// transaction, never correctness, and saves a Raft round with an fsync on
// every replica for each locking statement.
//
// The rules, TiKV's:
//   - Locks go to memory only while the peer leads, has applied its term's
//     first entry, and is neither splitting nor transferring its
//     leadership; else, or when the region's locks would pass
//     memLocksLimit bytes or the store's memLocksStoreLimit, they go
//     through Raft as before.
//   - A proposal that writes a key of the lock column family marks that
//     key's in-memory lock pending; applying it removes the lock from
//     memory (the applied data now has what replaces it). Latches keep
//     commands on a key from overlapping, so nothing else writes a pending
//     key in the meantime.
//   - Before a leader transfer or a split is proposed, the locks not
//     pending are proposed through Raft (flushLocksLocked), ahead of it in
//     the log: the new leader, or the new regions, apply them.
//   - A peer that stops leading drops them: a crash loses them likewise.
//
// Only the lock column family is overlaid, and only on the leader;
// followers and snapshots never see these locks.

// memLocksLimit bounds the bytes (keys and values) of one region's
// in-memory locks (TiKV's in_memory_peer_size_limit, 512 KiB), and
// memLocksStoreLimit those of all the store's regions together (its
// in_memory_instance_size_limit, 100 MiB).
const (
	memLocksLimit      = 512 << 10
	memLocksStoreLimit = 100 << 20
)

// memLock is one pessimistic lock held in memory.
type memLock struct {
	key, value []byte // the lock column family's key and record
	// pending: a proposal in flight writes this key; the lock leaves
	// memory when that proposal applies.
	pending bool
}

// memLocks is a region's in-memory locks, sorted by key. Writers hold
// the peer's mu and mu; readers hold mu only.
type memLocks struct {
	mu   sync.RWMutex
	ents []memLock
	size int
	n    atomic.Int32 // len(ents), for readers' fast path
	// total: the store's bytes of in-memory locks, which size is part of.
	total *atomic.Int64
}

// grow adds d to the bytes held. Call with mu held.
func (m *memLocks) grow(d int) {
	m.size += d
	if m.total != nil {
		m.total.Add(int64(d))
	}
}

func (m *memLocks) find(key []byte) (int, bool) {
	return slices.BinarySearchFunc(m.ents, key, func(e memLock, k []byte) int { return bytes.Compare(e.key, k) })
}

// get returns the in-memory lock record of key, if any.
func (m *memLocks) get(key []byte) ([]byte, bool) {
	if m.n.Load() == 0 {
		return nil, false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if i, ok := m.find(key); ok {
		return m.ents[i].value, true
	}
	return nil, false
}

// span returns a copy of the locks with keys in [lower, upper) (nil
// upper: open), or nil.
func (m *memLocks) span(lower, upper []byte) []memLock {
	if m.n.Load() == 0 {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	i, _ := m.find(lower)
	j := len(m.ents)
	if upper != nil {
		j, _ = m.find(upper)
	}
	if i >= j {
		return nil
	}
	return slices.Clone(m.ents[i:j])
}

// put holds value as key's lock. Call with m.mu held.
func (m *memLocks) put(key, value []byte) {
	i, ok := m.find(key)
	if ok {
		m.grow(len(value) - len(m.ents[i].value))
		m.ents[i].value = value
		return
	}
	m.ents = slices.Insert(m.ents, i, memLock{key: key, value: value})
	m.grow(len(key) + len(value))
	m.n.Store(int32(len(m.ents)))
}

// remove drops key's lock. Call with m.mu held.
func (m *memLocks) remove(key []byte) {
	if i, ok := m.find(key); ok {
		m.grow(-len(m.ents[i].key) - len(m.ents[i].value))
		m.ents = slices.Delete(m.ents, i, i+1)
		m.n.Store(int32(len(m.ents)))
	}
}

// clear drops every lock. Call with the peer's mu held.
func (m *memLocks) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.grow(-m.size)
	m.ents = nil
	m.n.Store(0)
}

// lockKeys calls f with each key of the lock column family that cmd
// writes, and with each range of it that cmd deletes (end nil: open).
func lockKeys(cmd *raft_cmdpb.RaftCmdRequest, f func(key, end []byte, rng bool)) {
	for _, req := range cmd.Requests {
		switch req.CmdType {
		case raft_cmdpb.CmdType_Put:
			if req.Put.Cf == "lock" {
				f(req.Put.Key, nil, false)
			}
		case raft_cmdpb.CmdType_Delete:
			if req.Delete.Cf == "lock" {
				f(req.Delete.Key, nil, false)
			}
		case raft_cmdpb.CmdType_DeleteRange:
			if dr := req.DeleteRange; dr.Cf == "lock" {
				end := dr.EndKey
				if len(end) == 0 {
					end = nil
				}
				f(dr.StartKey, end, true)
			}
		}
	}
}

// settle marks (pending) or removes the in-memory locks that cmd writes:
// marks them when it is proposed, removes them when it applies, and
// clears their mark when it failed to apply. Call with the peer's mu
// held.
func (m *memLocks) settle(cmd *raft_cmdpb.RaftCmdRequest, how settleHow) {
	if m.n.Load() == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lockKeys(cmd, func(key, end []byte, rng bool) {
		i, ok := m.find(key)
		j := i
		switch {
		case rng && end == nil:
			j = len(m.ents)
		case rng:
			j, _ = m.find(end)
		case ok:
			j = i + 1
		}
		for k := i; k < j; k++ {
			m.ents[k].pending = how == settlePropose
		}
		if how == settleApplied && i < j {
			for k := i; k < j; k++ {
				m.grow(-len(m.ents[k].key) - len(m.ents[k].value))
			}
			m.ents = slices.Delete(m.ents, i, j)
			m.n.Store(int32(len(m.ents)))
		}
	})
}

type settleHow int

const (
	settlePropose settleHow = iota
	settleApplied
	settleFailed
)

// memLocksAllowedLocked says whether a lock may be written to memory now
// (see the rules above). Call with mu held.
func (p *Peer) memLocksAllowedLocked() bool {
	if !p.s.cfg.InMemoryLocks || p.splitting > 0 || !p.leaseReady.Load() || p.destroyed || !p.isLeader.Load() {
		return false
	}
	st := p.rn.BasicStatus()
	return st.RaftState == raft.StateLeader && st.LeadTransferee == 0
}

// LocksInMemory says whether a pessimistic lock taken now would go to
// the region's in-memory locks rather than through Raft, as far as the
// peer's atomics tell without its mutex: a hint for the caller to run the
// lock where it stands (storenode's pessimisticLock). The write itself
// decides (writeLocksInMemory), so a wrong hint costs time, not
// correctness.
func (p *Peer) LocksInMemory() bool {
	if !p.s.cfg.InMemoryLocks || !p.isLeader.Load() || !p.leaseReady.Load() {
		return false
	}
	return p.locks.total == nil || p.locks.total.Load() < memLocksStoreLimit/2
}

// isPessimisticLock says whether an encoded lock record is a pessimistic
// lock: its first byte is its kind (see mvcc's lock.go).
func isPessimisticLock(v []byte) bool { return len(v) > 0 && v[0] == byte(mvcc.LockPessimistic) }

// writeLocksInMemory applies b to the region's in-memory locks if it only
// takes or releases pessimistic locks and the rules allow it, and says
// whether it did; if not, b is for Raft. A release goes to memory only if
// the lock is there and not pending, and the applied data holds no lock
// of that key under it.
func (p *Peer) writeLocksInMemory(epochVersion uint64, b *mvcc.Batch) bool {
	for i := range b.Entries {
		e := &b.Entries[i]
		if e.CF != mvcc.CFLock || e.End != nil || (!e.Delete && !isPessimisticLock(e.Value)) {
			return false
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.memLocksAllowedLocked() || p.region.GetRegionEpoch().GetVersion() != epochVersion {
		return false
	}
	m := &p.locks
	m.mu.Lock()
	defer m.mu.Unlock()
	size := m.size
	for i := range b.Entries {
		e := &b.Entries[i]
		j, ok := m.find(e.Key)
		if ok && m.ents[j].pending {
			return false
		}
		switch {
		case e.Delete && !ok:
			return false
		case e.Delete:
			if _, err := p.s.eng.Get(mvcc.CFLock, e.Key); err == nil {
				return false // a replicated lock lies under it
			}
		case ok:
			size += len(e.Value) - len(m.ents[j].value)
		default:
			size += len(e.Key) + len(e.Value)
		}
	}
	if size > memLocksLimit || m.total != nil && m.total.Load()+int64(size-m.size) > memLocksStoreLimit {
		return false
	}
	for i := range b.Entries {
		e := &b.Entries[i]
		if e.Delete {
			m.remove(e.Key)
		} else {
			m.put(slices.Clone(e.Key), slices.Clone(e.Value))
		}
	}
	p.s.memLockWrites.Add(1)
	return true
}

// flushLocksLocked proposes the in-memory locks not pending through
// Raft, before a leader transfer or a split is proposed after them. Call
// with mu held.
func (p *Peer) flushLocksLocked() {
	if p.locks.n.Load() == 0 {
		return
	}
	cmd := &raft_cmdpb.RaftCmdRequest{Header: &raft_cmdpb.RaftRequestHeader{RegionEpoch: p.region.RegionEpoch}}
	p.locks.mu.RLock()
	for _, e := range p.locks.ents {
		if !e.pending {
			cmd.Requests = append(cmd.Requests, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Put,
				Put: &raft_cmdpb.PutRequest{Cf: "lock", Key: e.key, Value: e.value}})
		}
	}
	p.locks.mu.RUnlock()
	if len(cmd.Requests) == 0 {
		return
	}
	if _, err := p.proposeLocked(cmd); err != nil {
		// Not leading any more: the locks are dropped with the
		// leadership.
		return
	}
	p.s.memLockFlushes.Add(1)
}

// MemLockStats counts the lock writes served in memory and the flushes
// of in-memory locks through Raft since the store started, and the bytes
// of the locks in memory now.
type MemLockStats struct {
	Writes, Flushes uint64
	Bytes           int64
}

// LockDeletes returns the lock column family's deletes applied into
// Pebble since the store started, and those skipped as Pebble held no
// lock (apply.go).
func (s *Store) LockDeletes() (applied, skipped uint64) {
	return s.lockDeletes.Load(), s.lockDeletesSkipped.Load()
}

// MemLockStats returns the counts so far.
func (s *Store) MemLockStats() MemLockStats {
	return MemLockStats{Writes: s.memLockWrites.Load(), Flushes: s.memLockFlushes.Load(), Bytes: s.memLockBytes.Load()}
}

// LogStats counts the commands this store's leaders proposed and the
// synced writes of its raft log since it started.
type LogStats struct {
	Proposals, Syncs uint64
}

// LogStats returns the counts so far.
func (s *Store) LogStats() LogStats {
	return LogStats{Proposals: s.proposals.Load(), Syncs: s.logSyncs.Load()}
}

// memLocksIter is an iterator of the lock column family with a region's
// in-memory locks (a copy taken when it was made) over the applied data:
// where both have a key, the in-memory lock is the one seen.
type memLocksIter struct {
	mem []memLock
	it  mvcc.EngineIter
	i   int  // position in mem
	rev bool // moving backward
	// onMem: the current key is mem[i]'s (it may also be it's, shadowed).
	onMem, valid bool
}

func (m *memLocksIter) lowerBound(key []byte) int {
	i, _ := slices.BinarySearchFunc(m.mem, key, func(e memLock, k []byte) int { return bytes.Compare(e.key, k) })
	return i
}

// settle picks the current key from the two positions.
func (m *memLocksIter) settle() bool {
	memOK := m.i >= 0 && m.i < len(m.mem)
	itOK := m.it.Valid()
	switch {
	case !memOK && !itOK:
		m.valid = false
		return false
	case !itOK:
		m.onMem = true
	case !memOK:
		m.onMem = false
	default:
		c := bytes.Compare(m.mem[m.i].key, m.it.Key())
		if m.rev {
			c = -c
		}
		m.onMem = c <= 0
	}
	m.valid = true
	return true
}

func (m *memLocksIter) First() bool {
	m.rev, m.i = false, 0
	m.it.First()
	return m.settle()
}

func (m *memLocksIter) Last() bool {
	m.rev, m.i = true, len(m.mem)-1
	m.it.Last()
	return m.settle()
}

func (m *memLocksIter) SeekGE(key []byte) bool {
	m.rev, m.i = false, m.lowerBound(key)
	m.it.SeekGE(key)
	return m.settle()
}

func (m *memLocksIter) SeekLT(key []byte) bool {
	m.rev, m.i = true, m.lowerBound(key)-1
	m.it.SeekLT(key)
	return m.settle()
}

func (m *memLocksIter) Next() bool {
	if !m.valid {
		return false
	}
	if m.rev {
		return m.SeekGE(append(slices.Clip(m.Key()), 0))
	}
	m.step(1)
	return m.settle()
}

func (m *memLocksIter) Prev() bool {
	if !m.valid {
		return false
	}
	if !m.rev {
		return m.SeekLT(slices.Clone(m.Key()))
	}
	m.step(-1)
	return m.settle()
}

// step moves past the current key in direction d on both sides.
func (m *memLocksIter) step(d int) {
	if !m.onMem {
		if d > 0 {
			m.it.Next()
		} else {
			m.it.Prev()
		}
		return
	}
	if m.it.Valid() && bytes.Equal(m.it.Key(), m.mem[m.i].key) {
		if d > 0 {
			m.it.Next()
		} else {
			m.it.Prev()
		}
	}
	m.i += d
}

func (m *memLocksIter) Valid() bool { return m.valid }

func (m *memLocksIter) Key() []byte {
	if m.onMem {
		return m.mem[m.i].key
	}
	return m.it.Key()
}

func (m *memLocksIter) Value() []byte {
	if m.onMem {
		return m.mem[m.i].value
	}
	return m.it.Value()
}

func (m *memLocksIter) Close() error { return m.it.Close() }
