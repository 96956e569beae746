package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// genSnap is a snapshot this store generated: the region as of an applied
// index, and a pebble.Snapshot of the store taken then, closed once no
// MsgSnap needs it. Raft asks for one per MsgSnap; the MsgSnaps of one
// index share it.
type genSnap struct {
	key    snapKey
	region *metapb.Region
	snap   *pebble.Snapshot
	// pending: MsgSnaps raft emitted that transport.send has not taken
	// yet; sending: those being streamed.
	pending, sending int
	at               time.Time // when raft last asked for it
}

// lostSnapAfter: a generated snapshot whose MsgSnap has not reached the
// transport after this long was lost with its peer's Ready (the peer was
// destroyed first), and is closed.
const lostSnapAfter = time.Minute

// generate pins the data of one more MsgSnap of key: a new
// pebble.Snapshot, or the one taken already at the same index. Called with
// the region's peer's lock held, which keeps Pebble at the applied index.
// It returns false once the store is stopping.
func (m *snapManager) generate(key snapKey, region *metapb.Region) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	now := time.Now()
	for k, g := range m.generated {
		if g.sending == 0 && now.Sub(g.at) > lostSnapAfter {
			m.s.log.Warn("dropping a snapshot whose message was lost", "region", k.region, "index", k.index)
			_ = g.snap.Close()
			delete(m.generated, k)
		}
	}
	g := m.generated[key]
	if g == nil {
		g = &genSnap{key: key, region: region, snap: m.s.db.NewSnapshot()}
		m.generated[key] = g
	}
	g.pending++
	g.at = now
	return true
}

// startSend moves one pending MsgSnap of key to sending, and counts the
// send in m.sends. It returns nil if the snapshot is gone (dropped as lost,
// or the store is stopping).
func (m *snapManager) startSend(key snapKey) *genSnap {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.generated[key]
	if m.closed || g == nil || g.pending == 0 {
		return nil
	}
	g.pending--
	g.sending++
	m.sends.Add(1)
	return g
}

// drop forgets one MsgSnap of key that will not be sent (or whose send
// ended, if sending), closing the snapshot when no other needs it.
func (m *snapManager) drop(key snapKey, sending bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.generated[key]
	if g == nil {
		return
	}
	if sending {
		g.sending--
	} else if g.pending > 0 {
		g.pending--
	}
	if g.pending == 0 && g.sending == 0 {
		_ = g.snap.Close()
		delete(m.generated, key)
	}
}

// sendSnapshot streams a MsgSnap's snapshot to its store, on a goroutine
// of its own, and reports the outcome to raft: finished once the receiver
// has it all, failed (and the follower unreachable) otherwise.
func (t *transport) sendSnapshot(rm *raft_serverpb.RaftMessage, key snapKey) {
	m := t.snaps
	g := m.startSend(key)
	if g == nil {
		t.unreachable(rm)
		return
	}
	go func() {
		defer m.sends.Done()
		defer m.drop(key, true)
		start := time.Now()
		chunks, size, err := m.send(rm, g)
		if err != nil {
			t.s.log.Warn("sending snapshot failed", "region", key.region, "index", key.index,
				"to_store", rm.ToPeer.StoreId, "err", err)
			t.unreachable(rm)
			return
		}
		m.sent.Add(1)
		t.s.log.Info("sent snapshot", "region", key.region, "index", key.index, "to_store", rm.ToPeer.StoreId,
			"bytes", size, "chunks", chunks, "took", time.Since(start))
		t.snapshotSent(rm)
	}()
}

// send streams g over tikvpb's Snapshot RPC: a first chunk with the
// MsgSnap, then chunks of at most m.chunkSize bytes of data.
func (m *snapManager) send(rm *raft_serverpb.RaftMessage, g *genSnap) (chunks int, size int64, err error) {
	select {
	case m.sendSlots <- struct{}{}:
		defer func() { <-m.sendSlots }()
	case <-m.ctx.Done():
		return 0, 0, m.ctx.Err()
	}
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	addr, err := m.s.cfg.Resolve(rctx, rm.ToPeer.StoreId)
	rcancel()
	if err != nil {
		return 0, 0, err
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		return 0, 0, err
	}
	defer cc.Close()
	st, err := tikvpb.NewTikvClient(cc).Snapshot(ctx)
	if err != nil {
		return 0, 0, err
	}
	cw := &chunkWriter{st: st, max: m.chunkSize}
	err = st.Send(&raft_serverpb.SnapshotChunk{Message: rm})
	if err == nil {
		err = writeSnapshotData(cw, g)
	}
	if err == nil {
		err = cw.flush()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return cw.chunks, cw.bytes, err
	}
	// Send reports io.EOF when the receiver ended the stream; its reason
	// comes with CloseAndRecv.
	if _, rerr := st.CloseAndRecv(); rerr != nil {
		return cw.chunks, cw.bytes, rerr
	}
	if err != nil {
		return cw.chunks, cw.bytes, fmt.Errorf("the receiver ended the stream early")
	}
	return cw.chunks, cw.bytes, nil
}

// The data of a snapshot stream is the region's keys, in the store's key
// layout (a column family's byte, then the encoded key; see keys.go), in
// key order: column family 'd', then 'l', then 'w'.
//
//	record  = uvarint(len(key)) key uvarint(len(value)) value    (len(key) > 0)
//	trailer = uvarint(0) uvarint(number of records) crc32c(records) (4 bytes, big-endian)
//
// The trailer ends the stream; a receiver that gets no trailer, or one
// that does not match, drops what it got. Records run across chunks.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// writeSnapshotData writes g's records and trailer to w.
func writeSnapshotData(w io.Writer, g *genSnap) error {
	var crc uint32
	var n uint64
	var hdr []byte
	write := func(b []byte) error {
		crc = crc32.Update(crc, castagnoli, b)
		_, err := w.Write(b)
		return err
	}
	for _, cf := range dataCFs {
		lo, hi := dataBounds(cf, g.region.StartKey, g.region.EndKey)
		it, err := g.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return err
		}
		for it.First(); it.Valid(); it.Next() {
			v, err := it.ValueAndErr()
			if err == nil {
				hdr = binary.AppendUvarint(hdr[:0], uint64(len(it.Key())))
				err = write(hdr)
			}
			if err == nil {
				err = write(it.Key())
			}
			if err == nil {
				hdr = binary.AppendUvarint(hdr[:0], uint64(len(v)))
				err = write(hdr)
			}
			if err == nil {
				err = write(v)
			}
			if err != nil {
				_ = it.Close()
				return err
			}
			n++
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	trailer := binary.AppendUvarint([]byte{0}, n)
	trailer = binary.BigEndian.AppendUint32(trailer, crc)
	_, err := w.Write(trailer)
	return err
}

// chunkWriter cuts what is written to it into SnapshotChunks of max
// bytes (the last may be shorter, once flushed).
type chunkWriter struct {
	st     tikvpb.Tikv_SnapshotClient
	max    int // bytes a chunk holds
	buf    []byte
	chunks int   // chunks sent
	bytes  int64 // bytes sent
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, w.max)
		}
		k := min(len(p), w.max-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == w.max {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// flush sends what is buffered.
func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.st.Send(&raft_serverpb.SnapshotChunk{Data: w.buf})
	w.chunks++
	w.bytes += int64(len(w.buf))
	w.buf = nil // gRPC may still hold the message: a new buffer for the next
	return err
}
