package raftstore

import (
	"slices"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_cmdpb"
)

// regionEngine is the mvcc.Engine of one region at one epoch: reads see
// the store's applied data; a write is proposed to the region's Raft group
// and returns once applied here, or fails with a *RegionError. It is an
// mvcc.ProposingEngine: a write is ordered once raft accepts it into the
// leader's log.
type regionEngine struct {
	p     *Peer
	epoch *metapb.RegionEpoch
}

var (
	_ mvcc.ProposingEngine = (*regionEngine)(nil)
	_ mvcc.VersionReader   = (*regionEngine)(nil)
)

// Get and NewIter see the leader's in-memory locks over the applied data
// (memlocks.go).
func (e *regionEngine) Get(cf mvcc.CF, key []byte) ([]byte, error) {
	if cf == mvcc.CFLock {
		if v, ok := e.p.locks.get(key); ok {
			return slices.Clone(v), nil
		}
		if e.p.s.lockCF.empty() {
			return nil, mvcc.ErrEngineNotFound
		}
	}
	return e.p.s.eng.Get(cf, key)
}

// NewIter of the lock column family, like Get, leaves Pebble alone while
// the store knows it holds no lock (lockcf.go): every scan merges the
// locks of its range with its writes, and opening and positioning the
// lock iterator in Pebble cost as much as the write iterator's (a third of
// a 100-row KvScan's CPU on a leader under oltp_read_only).
func (e *regionEngine) NewIter(cf mvcc.CF, lower, upper []byte) (mvcc.EngineIter, error) {
	if cf != mvcc.CFLock {
		return e.p.s.eng.NewIter(cf, lower, upper)
	}
	mem := e.p.locks.span(lower, upper)
	var it mvcc.EngineIter = noLocks{}
	if !e.p.s.lockCF.empty() {
		var err error
		if it, err = e.p.s.eng.NewIter(cf, lower, upper); err != nil {
			return nil, err
		}
	}
	if len(mem) == 0 {
		return it, nil
	}
	return &memLocksIter{mem: mem, it: it}, nil
}

// noLocks is the lock column family's iterator while Pebble holds no
// lock: it is empty.
type noLocks struct{}

func (noLocks) First() bool        { return false }
func (noLocks) Last() bool         { return false }
func (noLocks) SeekGE([]byte) bool { return false }
func (noLocks) SeekLT([]byte) bool { return false }
func (noLocks) Next() bool         { return false }
func (noLocks) Prev() bool         { return false }
func (noLocks) Valid() bool        { return false }
func (noLocks) Key() []byte        { return nil }
func (noLocks) Value() []byte      { return nil }
func (noLocks) Close() error       { return nil }

// NewVersionIter implements mvcc.VersionReader: the versioned column
// families hold no in-memory records.
func (e *regionEngine) NewVersionIter(cf mvcc.CF) (mvcc.VersionIter, error) {
	if cf == mvcc.CFLock {
		return nil, nil
	}
	return e.p.s.eng.NewVersionIter(cf)
}

// Write replicates b. sync is ignored: a write is durable once its Raft
// log entry is, which the store syncs when raftstore.sync-log is on.
func (e *regionEngine) Write(b *mvcc.Batch, sync bool) error {
	return e.WriteProposed(b, sync, nil)
}

// WriteProposed is Write that calls proposed, if not nil, once raft has
// accepted the write into the leader's log, before it is replicated (see
// Peer.propose). A write refused there (this peer no longer leads) fails
// without calling it.
func (e *regionEngine) WriteProposed(b *mvcc.Batch, _ bool, proposed func()) error {
	if b.Len() == 0 {
		return nil
	}
	if e.p.s.cfg.InMemoryLocks && e.p.writeLocksInMemory(e.epoch.GetVersion(), b) {
		if proposed != nil {
			proposed()
		}
		return nil
	}
	cmd := &raft_cmdpb.RaftCmdRequest{Header: &raft_cmdpb.RaftRequestHeader{RegionEpoch: e.epoch},
		Requests: make([]*raft_cmdpb.Request, 0, b.Len())}
	for _, ent := range b.Entries {
		cf := cfName(ent.CF)
		switch {
		case ent.End != nil:
			cmd.Requests = append(cmd.Requests, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_DeleteRange,
				DeleteRange: &raft_cmdpb.DeleteRangeRequest{Cf: cf, StartKey: ent.Key, EndKey: ent.End}})
		case ent.Delete:
			cmd.Requests = append(cmd.Requests, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Delete,
				Delete: &raft_cmdpb.DeleteRequest{Cf: cf, Key: ent.Key}})
		default:
			cmd.Requests = append(cmd.Requests, &raft_cmdpb.Request{CmdType: raft_cmdpb.CmdType_Put,
				Put: &raft_cmdpb.PutRequest{Cf: cf, Key: ent.Key, Value: ent.Value}})
		}
	}
	return e.p.propose(cmd, proposed)
}

// TiKV's names of the column families, as they travel in raft_cmdpb.
func cfName(cf mvcc.CF) string {
	switch cf {
	case mvcc.CFLock:
		return "lock"
	case mvcc.CFWrite:
		return "write"
	}
	return "default"
}

func cfByte(name string) byte {
	switch name {
	case "lock":
		return byte(mvcc.CFLock)
	case "write":
		return byte(mvcc.CFWrite)
	}
	return byte(mvcc.CFDefault)
}
