package raftstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
)

// recvSnap is a snapshot received whole, its data in SSTs under the
// snapshot directory, until the Ready loop ingests them or they are of no
// more use.
type recvSnap struct {
	key   snapKey
	to    uint64 // the peer it was sent to
	name  string // its files' names start with it
	paths []string
	// stepping: receivers that stepped its MsgSnap and are waiting to see
	// what raft made of it; sweep leaves it to them.
	stepping int
}

// ServeSnapshot receives a snapshot over tikvpb's Snapshot stream (see
// snapshot_send.go): it writes the data into SSTs, and once all of it has
// arrived steps the MsgSnap of the first chunk, and waits until raft took
// it or refused it. Files of a receive that fails are removed.
func (s *Store) ServeSnapshot(stream tikvpb.Tikv_SnapshotServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	msg := first.GetMessage()
	key, region, err := s.checkSnapshotMessage(msg)
	if err != nil {
		return err
	}
	m := s.trans.snaps
	m.sweep()
	start := time.Now()
	cr := &chunkReader{stream: stream, buf: first.Data}
	r, err := m.receive(key, region, msg.ToPeer.Id, cr)
	if err != nil {
		s.log.Warn("receiving snapshot failed", "region", key.region, "index", key.index, "err", err)
		return err
	}
	m.receivedCount.Add(1)
	m.chunksReceived.Add(int64(cr.chunks))
	s.log.Info("received snapshot", "region", key.region, "index", key.index, "from_store", msg.FromPeer.GetStoreId(),
		"chunks", cr.chunks, "took", time.Since(start))
	s.Step(msg)
	m.settle(stream.Context(), r)
	return stream.SendAndClose(&raft_serverpb.Done{})
}

// checkSnapshotMessage checks the first chunk's message: a MsgSnap for a
// peer on this store, with a snapshot of this format.
func (s *Store) checkSnapshotMessage(msg *raft_serverpb.RaftMessage) (snapKey, *metapb.Region, error) {
	em := msg.GetMessage()
	if em.GetMsgType() != eraftpb.MessageType_MsgSnapshot || em.GetSnapshot().GetMetadata() == nil {
		return snapKey{}, nil, errors.New("raftstore: a snapshot stream must start with a MsgSnapshot")
	}
	if msg.GetToPeer().GetStoreId() != s.cfg.StoreID || msg.GetFromPeer() == nil {
		return snapKey{}, nil, fmt.Errorf("raftstore: a snapshot for store %d reached store %d",
			msg.GetToPeer().GetStoreId(), s.cfg.StoreID)
	}
	var data raft_serverpb.RaftSnapshotData
	if err := data.Unmarshal(em.Snapshot.Data); err != nil {
		return snapKey{}, nil, fmt.Errorf("raftstore: bad snapshot metadata: %w", err)
	}
	if data.Version != snapshotVersion {
		return snapKey{}, nil, fmt.Errorf("raftstore: snapshot version %d, not %d", data.Version, snapshotVersion)
	}
	if data.Region == nil || data.Region.RegionEpoch == nil || data.Region.Id != msg.RegionId {
		return snapKey{}, nil, fmt.Errorf("raftstore: the snapshot's region is not region %d", msg.RegionId)
	}
	md := em.Snapshot.Metadata
	return snapKey{region: msg.RegionId, term: md.Term, index: md.Index}, data.Region, nil
}

// receive reads a snapshot's data from cr into SSTs, and records it.
func (m *snapManager) receive(key snapKey, region *metapb.Region, to uint64, cr *chunkReader) (*recvSnap, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrStopped
	}
	m.seq++
	r := &recvSnap{key: key, to: to, name: fmt.Sprintf("%s_%d", key, m.seq)}
	m.mu.Unlock()
	ssts := &snapSSTs{m: m, region: region, name: r.name, cf: -1}
	dec := &snapDecoder{r: bufio.NewReaderSize(cr, 64<<10)}
	for {
		k, v, err := dec.next()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = ssts.add(k, v)
		}
		if err != nil {
			ssts.abort()
			return nil, err
		}
	}
	var err error
	if _, rerr := dec.r.ReadByte(); rerr != io.EOF {
		err = errors.New("raftstore: data after the snapshot's trailer")
		if rerr != nil {
			err = rerr
		}
	}
	if err == nil {
		r.paths, err = ssts.finish()
	}
	if err != nil {
		ssts.abort()
		return nil, err
	}
	return m.register(r)
}

// register records r for raft to take, and counts its receiver as
// stepping. If the same snapshot is here already (the leader sent it
// again), that one stays and r's files go.
func (m *snapManager) register(r *recvSnap) (*recvSnap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		m.removeFiles(r.paths)
		return nil, ErrStopped
	}
	if old := m.received[r.key]; old != nil && old.to == r.to {
		m.removeFiles(r.paths)
		r = old
	} else if old != nil {
		m.removeFiles(old.paths)
	}
	m.received[r.key] = r
	r.stepping++
	return r, nil
}

// hasReceived says whether the data of snapshot key, sent to peer to, is
// here.
func (m *snapManager) hasReceived(key snapKey, to uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.received[key]
	return r != nil && r.to == to
}

// take hands snapshot key's files over to the Ready loop, to ingest.
func (m *snapManager) take(key snapKey) *recvSnap {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.received[key]
	delete(m.received, key)
	return r
}

// dropOlder removes the snapshots of region at or below index: raft
// refuses them once index is installed.
func (m *snapManager) dropOlder(region, index uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, r := range m.received {
		if k.region == region && k.index <= index {
			m.removeFiles(r.paths)
			delete(m.received, k)
		}
	}
}

// forget removes r if it is still recorded (and, with ifAlone, no other
// receiver is stepping it).
func (m *snapManager) forget(r *recvSnap, ifAlone bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.received[r.key] != r || (ifAlone && r.stepping > 1) {
		return
	}
	m.removeFiles(r.paths)
	delete(m.received, r.key)
}

// snapSettleTimeout bounds a receiver's wait for raft to take its
// snapshot; what is left then is for sweep.
const snapSettleTimeout = 10 * time.Second

// settle waits, once r's MsgSnap was stepped, until the Ready loop took r
// or r is of no more use, and then removes it.
func (m *snapManager) settle(ctx context.Context, r *recvSnap) {
	defer func() {
		m.mu.Lock()
		r.stepping--
		m.mu.Unlock()
	}()
	timer := time.NewTimer(snapSettleTimeout)
	defer timer.Stop()
	for {
		wait, useless, refused := m.check(r)
		if useless || refused {
			m.forget(r, !useless)
			return
		}
		if wait == nil {
			return
		}
		select {
		case <-wait:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// check says what became of r. useless: its peer is gone, or has applied
// its index (raft refuses it then). refused: raft's commit index is below
// r's, which it cannot be once raft took r (raft commits a snapshot it
// restores), so the last MsgSnap of r stepped was refused. Otherwise, wait
// is closed when the peer's applied index next moves, or nil if r was
// taken.
func (m *snapManager) check(r *recvSnap) (wait <-chan struct{}, useless, refused bool) {
	m.mu.Lock()
	recorded := m.received[r.key] == r
	m.mu.Unlock()
	if !recorded {
		return nil, false, false
	}
	p := m.s.Peer(r.key.region)
	if p == nil {
		return nil, true, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed || p.self.Id != r.to || p.applied >= r.key.index {
		return nil, true, false
	}
	if p.rn.BasicStatus().Commit < r.key.index {
		return nil, false, true
	}
	return p.appliedCh, false, false
}

// sweep removes the received snapshots no receiver waits on that are of
// no more use.
func (m *snapManager) sweep() {
	m.mu.Lock()
	var idle []*recvSnap
	for _, r := range m.received {
		if r.stepping == 0 {
			idle = append(idle, r)
		}
	}
	m.mu.Unlock()
	for _, r := range idle {
		if _, useless, _ := m.check(r); useless {
			m.forget(r, true)
		}
	}
}

// chunkReader reads the data of a snapshot stream's chunks.
type chunkReader struct {
	stream tikvpb.Tikv_SnapshotServer
	buf    []byte
	chunks int // chunks received after the first
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		c, err := r.stream.Recv()
		if err != nil {
			return 0, err // io.EOF once the sender closed the stream
		}
		r.chunks++
		r.buf = c.Data
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// maxSnapRecord bounds a key or value of a snapshot stream.
const maxSnapRecord = 1 << 30

// snapDecoder reads the records of a snapshot stream (see
// writeSnapshotData) and checks its trailer.
type snapDecoder struct {
	r        *bufio.Reader
	crc      uint32
	n        uint64
	hdr      []byte
	key, val bytes.Buffer
}

// next returns the next record, valid until the next call, or io.EOF
// after a trailer that matches the records.
func (d *snapDecoder) next() (key, value []byte, err error) {
	kl, err := d.length()
	if err != nil {
		return nil, nil, err
	}
	if kl == 0 {
		n, err := binary.ReadUvarint(d.r)
		var sum [4]byte
		if err == nil {
			_, err = io.ReadFull(d.r, sum[:])
		}
		if err != nil {
			return nil, nil, unexpected(err)
		}
		if n != d.n || binary.BigEndian.Uint32(sum[:]) != d.crc {
			return nil, nil, fmt.Errorf("raftstore: the snapshot's trailer does not match its %d records", d.n)
		}
		return nil, nil, io.EOF
	}
	d.sum(kl) // the trailer's 0 is not covered
	if err := d.read(&d.key, kl); err != nil {
		return nil, nil, err
	}
	vl, err := d.length()
	if err != nil {
		return nil, nil, unexpected(err)
	}
	d.sum(vl)
	if err := d.read(&d.val, vl); err != nil {
		return nil, nil, err
	}
	d.n++
	return d.key.Bytes(), d.val.Bytes(), nil
}

func (d *snapDecoder) length() (uint64, error) {
	l, err := binary.ReadUvarint(d.r)
	if err != nil {
		return 0, unexpected(err)
	}
	if l > maxSnapRecord {
		return 0, fmt.Errorf("raftstore: a snapshot record of %d bytes", l)
	}
	return l, nil
}

// sum adds a length, as the sender encoded it, to the checksum.
func (d *snapDecoder) sum(l uint64) {
	d.hdr = binary.AppendUvarint(d.hdr[:0], l)
	d.crc = crc32.Update(d.crc, castagnoli, d.hdr)
}

// read reads n bytes into buf, which grows as they arrive (a garbage
// length allocates nothing).
func (d *snapDecoder) read(buf *bytes.Buffer, n uint64) error {
	buf.Reset()
	if _, err := io.CopyN(buf, d.r, int64(n)); err != nil {
		return unexpected(err)
	}
	d.crc = crc32.Update(d.crc, castagnoli, buf.Bytes())
	return nil
}

// unexpected: a stream that ends before its trailer was cut short.
func unexpected(err error) error {
	if err == io.EOF {
		return fmt.Errorf("raftstore: the snapshot stream ended early: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// snapSSTs writes a received snapshot's data: one SST per column family,
// in dataCFs order, each holding a range deletion over the region's range
// in its column family as well as the region's keys there, so that
// ingesting it replaces what the store held in that range. (Keys of an
// ingested SST share one sequence number, which its own range deletion
// does not cover.)
type snapSSTs struct {
	m      *snapManager
	region *metapb.Region
	name   string
	paths  []string
	cf     int // index in dataCFs of the SST being written
	w      *sstable.Writer
	lo, hi []byte // the region's range in that column family
	last   []byte
}

// add adds a key, which must come after the last and be in the region.
func (t *snapSSTs) add(k, v []byte) error {
	i := slices.Index(dataCFs, k[0])
	if i < 0 || i < t.cf {
		return fmt.Errorf("raftstore: snapshot key %x is out of order", k)
	}
	for t.cf < i {
		if err := t.next(); err != nil {
			return err
		}
	}
	if bytes.Compare(k, t.lo) < 0 || bytes.Compare(k, t.hi) >= 0 || (t.last != nil && bytes.Compare(k, t.last) <= 0) {
		return fmt.Errorf("raftstore: snapshot key %x is out of order or out of the region", k)
	}
	t.last = append(t.last[:0], k...)
	return t.w.Set(k, v)
}

// next closes the SST being written and starts the next column family's.
func (t *snapSSTs) next() error {
	if t.w != nil {
		err := t.w.Close()
		t.w = nil
		if err != nil {
			return err
		}
	}
	t.cf++
	cf := dataCFs[t.cf]
	t.lo, t.hi = dataBounds(cf, t.region.StartKey, t.region.EndKey)
	path := t.m.fs.PathJoin(t.m.dir, fmt.Sprintf("%s_%c.sst", t.name, cf))
	t.paths = append(t.paths, path)
	w, err := t.m.createSST(path)
	if err != nil {
		return err
	}
	t.w = w
	return t.w.DeleteRange(t.lo, t.hi)
}

// finish writes the SSTs of the column families left, and returns the
// paths of all.
func (t *snapSSTs) finish() ([]string, error) {
	for t.cf < len(dataCFs)-1 {
		if err := t.next(); err != nil {
			return nil, err
		}
	}
	err := t.w.Close()
	t.w = nil
	return t.paths, err
}

// abort removes what was written.
func (t *snapSSTs) abort() {
	if t.w != nil {
		_ = t.w.Close()
		t.w = nil
	}
	t.m.removeFiles(t.paths)
}

// createSST creates an SST to ingest, synced on Close.
func (m *snapManager) createSST(path string) (*sstable.Writer, error) {
	f, err := m.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	return sstable.NewWriter(objstorageprovider.NewFileWritable(f), m.writerOpts), nil
}
