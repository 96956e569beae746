package raftstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Raft snapshots, as TiKV sends them: the MsgSnap that raft sends carries
// only metadata (a raft_serverpb.RaftSnapshotData with the region), and
// the region's data travels beside it, over tikvpb's Snapshot stream.
//
//  1. Generation (generateSnapshot, under the leader peer's lock): a
//     pebble.Snapshot of the store at the applied index, nothing read yet.
//     An apply batch commits under the same lock, so that snapshot holds
//     exactly the applied state.
//  2. Sending (snapshot_send.go, outside any lock): transport.send hands
//     each MsgSnap to a goroutine that streams the region's keys from the
//     pebble.Snapshot in chunks of at most snapManager.chunkSize bytes,
//     then reports the outcome to raft (ReportSnapshot). The
//     pebble.Snapshot is closed once no message needs it.
//  3. Receiving (snapshot_recv.go): the receiver writes the keys into one
//     SST per column family under the snapshot directory, each SST also
//     holding a range deletion over the region's range in its column
//     family. Only when the whole stream arrived, checked against its
//     trailer, is the MsgSnap stepped into raft; snapshotFits refuses a
//     MsgSnap whose data has not arrived.
//  4. Installation (persistSnapshot, in the Ready loop): one more SST
//     holds the region's new RegionLocalState (Normal) and RaftApplyState
//     and a range deletion over its log, and the SSTs are ingested in one
//     pebble.DB.Ingest.
//
// Crash safety. Pebble makes an ingestion atomic and durable: after a
// crash either all of its SSTs are in or none is. The data, the cleared
// old range, the apply state and the region state all travel in the one
// ingestion, so a restart finds the peer either wholly before the
// snapshot (its old data, log and states) or wholly after it; there is no
// intermediate state to redo or discard, and so no PeerState_Applying
// step as TiKV has (Applying keeps its meaning here: a peer created by a
// leader's message, waiting for its first snapshot). Only the hard state
// is written apart, in the Ready loop's batch, after the ingestion; a
// crash in between leaves a hard state whose commit index is below the
// snapshot's, which loadPeers raises (the snapshot's index is committed).
// Nothing in the snapshot directory is needed after a restart: NewStore
// empties it, which also removes the files of receives a crash cut short.

// snapshotVersion is RaftSnapshotData.Version of a snapshot whose data
// comes over the Snapshot stream, in snapshot_send.go's format.
const snapshotVersion = 1

// defaultSnapChunkSize bounds the data of one SnapshotChunk.
const defaultSnapChunkSize = 1 << 20

// snapKey names a snapshot: its region and its place in the region's log.
type snapKey struct{ region, term, index uint64 }

func snapKeyOf(region uint64, md raftpb.SnapshotMetadata) snapKey {
	return snapKey{region: region, term: md.Term, index: md.Index}
}

func (k snapKey) String() string { return fmt.Sprintf("%d_%d_%d", k.region, k.term, k.index) }

// snapManager holds a store's snapshots in flight: those it generated,
// until sent, and those it received, until installed. Its lock is taken
// after a peer's, never before.
type snapManager struct {
	s  *Store
	fs vfs.FS
	// dir holds the SST files of received snapshots; nothing in it
	// outlives the process (see the crash safety note above).
	dir string
	// chunkSize bounds the data of one SnapshotChunk sent.
	chunkSize int
	// writerOpts are the options of the SSTs written for ingestion: the
	// database's comparer and key schema (store/pebble's Comparer, or
	// Pebble's default in a database created before it), filters and
	// table format.
	writerOpts sstable.WriterOptions

	// ctx ends the sends when the store stops; sends counts them, and
	// sendSlots bounds how many run at once.
	ctx       context.Context
	cancel    context.CancelFunc
	sends     sync.WaitGroup
	sendSlots chan struct{}

	mu        sync.Mutex
	closed    bool
	generated map[snapKey]*genSnap
	received  map[snapKey]*recvSnap
	seq       uint64 // tells the files of received snapshots apart

	// Counters, for tests and logs.
	sent           atomic.Int64 // snapshots sent whole
	receivedCount  atomic.Int64 // snapshots received whole
	chunksReceived atomic.Int64 // chunks of the snapshots received whole
}

// maxSnapSends bounds the snapshots a store sends at once; more wait.
const maxSnapSends = 4

// snapDirName is the snapshot directory, under the database's.
const snapDirName = "snap"

func newSnapManager(s *Store) *snapManager {
	m := &snapManager{s: s, fs: s.eng.FS(), dir: s.eng.FS().PathJoin(s.eng.Dir(), snapDirName),
		chunkSize: defaultSnapChunkSize, writerOpts: s.eng.WriterOptions(0),
		sendSlots: make(chan struct{}, maxSnapSends),
		generated: map[snapKey]*genSnap{}, received: map[snapKey]*recvSnap{}}
	if n := s.cfg.SnapChunkSize; n > 0 {
		m.chunkSize = n
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if err := m.clearDir(); err != nil {
		s.log.Warn("cannot empty the snapshot directory", "dir", m.dir, "err", err)
	}
	return m
}

// clearDir creates the snapshot directory, or removes what a previous
// run left in it.
func (m *snapManager) clearDir() error {
	if err := m.fs.MkdirAll(m.dir, 0o755); err != nil {
		return err
	}
	names, err := m.fs.List(m.dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := m.fs.Remove(m.fs.PathJoin(m.dir, n)); err != nil {
			return err
		}
	}
	return nil
}

// close ends the sends, waits for them, and releases every snapshot held:
// the generated ones' pebble.Snapshots (before the database closes) and
// the received ones' files. Called by transport.close, once the Ready
// loop has stopped.
func (m *snapManager) close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.sends.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, g := range m.generated {
		_ = g.snap.Close()
		delete(m.generated, k)
	}
	for k, r := range m.received {
		m.removeFiles(r.paths)
		delete(m.received, k)
	}
}

// removeFiles removes files of the snapshot directory, those already gone
// (ingested) included.
func (m *snapManager) removeFiles(paths []string) {
	for _, path := range paths {
		if err := m.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.s.log.Warn("cannot remove a snapshot file", "path", path, "err", err)
		}
	}
}

// files lists the snapshot directory, for tests.
func (m *snapManager) files() []string {
	names, _ := m.fs.List(m.dir)
	slices.Sort(names)
	return names
}

// generateSnapshot is peerStorage.Snapshot: the region at its applied
// index, its data pinned by a pebble.Snapshot that is read only once the
// MsgSnap is sent. Called by raft with mu held; each call yields one
// MsgSnap, which transport.send takes over.
func (p *Peer) generateSnapshot() (raftpb.Snapshot, error) {
	if p.applying {
		// Pebble is behind p.applied until the apply batch commits.
		return raftpb.Snapshot{}, raft.ErrSnapshotTemporarilyUnavailable
	}
	term, err := p.storage.Term(p.applied)
	if err != nil {
		return raftpb.Snapshot{}, err
	}
	md := raftpb.SnapshotMetadata{Index: p.applied, Term: term, ConfState: confStateOf(p.region)}
	if !p.s.trans.snaps.generate(snapKeyOf(p.region.Id, md), p.region) {
		return raftpb.Snapshot{}, raft.ErrSnapshotTemporarilyUnavailable // the store is stopping
	}
	data := raft_serverpb.RaftSnapshotData{Region: p.region, Version: snapshotVersion}
	return raftpb.Snapshot{Data: mustMarshal(&data), Metadata: md}, nil
}

// snapshotFits says whether a snapshot may be installed on p: its data
// must have arrived here, for p, and its region must not overlap another
// initialized region here. Called with p.mu held.
func (s *Store) snapshotFits(p *Peer, snap *raftpb.Snapshot) bool {
	var data raft_serverpb.RaftSnapshotData
	if snap == nil || data.Unmarshal(snap.Data) != nil || data.Region == nil {
		return false
	}
	if !s.trans.snaps.hasReceived(snapKeyOf(data.Region.Id, snap.Metadata), p.self.Id) {
		return false
	}
	for _, q := range s.Peers() {
		if q == p {
			continue
		}
		r := q.Meta()
		if q.isInitialized() && overlaps(r.StartKey, r.EndKey, data.Region.StartKey, data.Region.EndKey) {
			return false
		}
	}
	return true
}

// persistSnapshot installs a snapshot raft accepted: its data SSTs and one
// with the region's new states, in one ingestion (see the crash safety
// note above). It writes nothing into wb: the ingestion is durable when it
// returns, before wb commits. Called with p.mu held.
func (p *Peer) persistSnapshot(_ *pebble.Batch, snap raftpb.Snapshot) error {
	var data raft_serverpb.RaftSnapshotData
	if err := data.Unmarshal(snap.Data); err != nil {
		return err
	}
	region := data.Region
	key := snapKeyOf(region.Id, snap.Metadata)
	m := p.s.trans.snaps
	r := m.take(key)
	if r == nil {
		// snapshotFits lets raft see only snapshots whose data is here,
		// and nothing removes them while raft may still hand them over.
		return fmt.Errorf("raftstore: region %d: the data of snapshot %s is missing", region.Id, key)
	}
	paths := slices.Clone(r.paths)
	defer m.removeFiles(paths) // Ingest removes the files it ingested
	statePath, err := m.writeStateSST(r, region, snap.Metadata)
	if err != nil {
		return err
	}
	paths = append(paths, statePath)
	p.s.lockCF.begin() // the snapshot may bring locks
	defer p.s.lockCF.end()
	if err := p.s.db.Ingest(context.Background(), paths); err != nil {
		return fmt.Errorf("raftstore: region %d: ingesting snapshot %s: %w", region.Id, key, err)
	}
	// Older snapshots of the region received meanwhile are of no use now.
	m.dropOlder(region.Id, snap.Metadata.Index)
	return nil
}

// writeStateSST writes the SST that turns the peer into the snapshot's: a
// range deletion over the region's log, then its RaftApplyState and its
// RegionLocalState (Normal), in key order (see keys.go).
func (m *snapManager) writeStateSST(r *recvSnap, region *metapb.Region, md raftpb.SnapshotMetadata) (string, error) {
	id := region.Id
	state := raft_serverpb.RegionLocalState{State: raft_serverpb.PeerState_Normal, Region: region}
	apply := raft_serverpb.RaftApplyState{AppliedIndex: md.Index,
		TruncatedState: &raft_serverpb.RaftTruncatedState{Index: md.Index, Term: md.Term}}
	path := m.fs.PathJoin(m.dir, r.name+"_raft.sst")
	w, err := m.createSST(path)
	if err != nil {
		return "", err
	}
	err = w.DeleteRange(logKey(id, 0), hardStateKey(id))
	if err == nil {
		err = w.Set(applyStateKey(id), mustMarshal(&apply))
	}
	if err == nil {
		err = w.Set(regionStateKey(id), mustMarshal(&state))
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		m.removeFiles([]string{path})
		return "", err
	}
	return path, nil
}

// afterSnapshot makes a persisted snapshot the peer's state in memory.
// Call with mu held.
func (p *Peer) afterSnapshot(snap raftpb.Snapshot) error {
	var data raft_serverpb.RaftSnapshotData
	if err := data.Unmarshal(snap.Data); err != nil {
		return err
	}
	if err := p.storage.ApplySnapshot(snap); err != nil {
		return err
	}
	p.region = data.Region
	p.initialized = true
	p.applied = snap.Metadata.Index
	p.lastIndex = snap.Metadata.Index
	p.publish()
	p.advanceApplied()
	p.s.SnapshotsApplied.Add(1)
	p.s.log.Info("applied snapshot", "region", p.region.Id, "index", snap.Metadata.Index,
		"range", fmt.Sprintf("[%x, %x)", p.region.StartKey, p.region.EndKey))
	return nil
}
