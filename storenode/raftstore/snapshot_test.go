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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/store/mvcc"
	storepebble "github.com/basalt-db/basalt/store/pebble"
	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/pingcap/kvproto/pkg/eraftpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// runSnapshot runs the commands for snapshots (testdata/snapshot):
//
//	put-many region=R n=N size=B [batches=K]
//	                           N keys k0000… with values of B bytes, in K
//	                           proposals (default 1)
//	digest region=R            each store's count and checksum of the
//	                           region's keys and values, where it has a
//	                           replica
//	snapshots store=S          the snapshots the store received whole, in
//	                           how many chunks, and its snapshot directory
//	set-hard-state store=S region=R term=T commit=C
//	                           overwrite the hard state of a stopped store's
//	                           peer
//	abort-snapshot region=R store=S how=cancel|truncate
//	                           start sending store S a snapshot of the
//	                           region, then cancel the stream once S wrote
//	                           files, or close it before the trailer; then
//	                           S's snapshot directory once S cleaned up
func (c *raftCluster) runSnapshot(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	switch td.Cmd {
	case "put-many":
		p := c.leader(arg("region"))
		n, size, batches := arg("n"), arg("size"), uint64(1)
		if td.HasArg("batches") {
			batches = arg("batches")
		}
		for b := range batches {
			var wb mvcc.Batch
			for i := b * n / batches; i < (b+1)*n/batches; i++ {
				v := strings.Repeat(string(rune('a'+i%26)), int(size))
				wb.Put(mvcc.CFDefault, codec.EncodeBytes(nil, fmt.Appendf(nil, "k%04d", i)), []byte(v))
			}
			if err := p.MVCC().Engine().Write(&wb, true); err != nil {
				return "error: " + err.Error(), true
			}
		}
		return "", true
	case "digest":
		return c.digest(arg("region")), true
	case "snapshots":
		m := c.stores[arg("store")].rs.trans.snaps
		return fmt.Sprintf("received %d in %d chunks\nfiles: %s", m.receivedCount.Load(), m.chunksReceived.Load(),
			filesString(m.files())), true
	case "set-hard-state":
		// As a crash between a snapshot's ingestion and the write of its
		// Ready's hard state leaves it.
		sid, id := arg("store"), arg("region")
		if c.stores[sid] != nil {
			t.Fatalf("store %d is running", sid)
		}
		eng, err := storepebble.Open(filepath.Join(c.dir, strconv.FormatUint(sid, 10)), storepebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		hs := raftpb.HardState{Term: arg("term"), Commit: arg("commit")}
		if err := eng.DB().Set(hardStateKey(id), mustMarshal(&hs), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
		return "", true
	case "abort-snapshot":
		var how string
		td.ScanArgs(t, "how", &how)
		return c.abortSnapshot(arg("region"), arg("store"), how), true
	}
	return "", false
}

func filesString(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, " ")
}

// digest lists, for each store with an initialized replica of the region,
// how many keys it holds in the default column family and their checksum.
func (c *raftCluster) digest(id uint64) string {
	var b strings.Builder
	for _, sid := range c.storeIDs() {
		s := c.stores[sid]
		p := s.rs.Peer(id)
		if p == nil || !p.isInitialized() {
			continue
		}
		data := c.data(s, p.Meta())
		fmt.Fprintf(&b, "store %d: %d keys, crc %08x\n", sid, len(data),
			crc32.ChecksumIEEE([]byte(strings.Join(data, "\n"))))
	}
	return b.String()
}

func (c *raftCluster) storeIDs() []uint64 {
	var ids []uint64
	for id := range c.stores {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// abortSnapshot sends store sid the start of a snapshot of region id, as
// its leader would, and breaks the stream off.
func (c *raftCluster) abortSnapshot(id, sid uint64, how string) string {
	leader := c.leader(id)
	leader.mu.Lock()
	region, applied, term := leader.region, leader.applied, leader.rn.BasicStatus().Term
	leader.mu.Unlock()
	to := findStorePeer(region, sid)
	if to == nil {
		return fmt.Sprintf("error: store %d has no peer of region %d", sid, id)
	}
	data := raft_serverpb.RaftSnapshotData{Region: region, Version: snapshotVersion}
	msg := &raft_serverpb.RaftMessage{RegionId: id, FromPeer: leader.self, ToPeer: to, RegionEpoch: region.RegionEpoch,
		Message: &eraftpb.Message{MsgType: eraftpb.MessageType_MsgSnapshot, From: leader.self.Id, To: to.Id, Term: term,
			Snapshot: &eraftpb.Snapshot{Data: mustMarshal(&data), Metadata: &eraftpb.SnapshotMetadata{
				Index: applied + 100, Term: term, ConfState: &eraftpb.ConfState{}}}}}
	var records bytes.Buffer
	for i := range 3 {
		k := append([]byte{'d'}, codec.EncodeBytes(nil, fmt.Appendf(nil, "k%04d", i))...)
		records.Write(binaryRecord(k, []byte("v")))
	}
	cc, err := grpc.NewClient(c.addr(sid), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := tikvpb.NewTikvClient(cc).Snapshot(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := st.Send(&raft_serverpb.SnapshotChunk{Message: msg}); err != nil {
		c.t.Fatal(err)
	}
	if err := st.Send(&raft_serverpb.SnapshotChunk{Data: records.Bytes()}); err != nil {
		c.t.Fatal(err)
	}
	m := c.stores[sid].rs.trans.snaps
	var out strings.Builder
	switch how {
	case "cancel":
		if !waitFor(func() bool { return len(m.files()) > 0 }) {
			return "error: the receiver wrote no file"
		}
		out.WriteString("the receiver wrote files\n")
		cancel()
	case "truncate":
		_, err := st.CloseAndRecv()
		fmt.Fprintf(&out, "the receiver answered: %v\n", err)
	}
	waitFor(func() bool { return len(m.files()) == 0 })
	fmt.Fprintf(&out, "files: %s", filesString(m.files()))
	return out.String()
}

// binaryRecord encodes a record of a snapshot stream.
func binaryRecord(k, v []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(k)))
	b = append(b, k...)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// waitFor polls cond for up to five seconds.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestSnapshotStream: the records written from a pebble.Snapshot decode to
// the same keys and values, an empty value included, and a stream cut
// short or altered is refused.
func TestSnapshotStream(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := map[string]string{}
	for _, cf := range dataCFs {
		for i := range 50 {
			k := fmt.Sprintf("%ck%03d", cf, i)
			v := strings.Repeat("x", i%7) // some empty
			want[k] = v
			if err := db.Set([]byte(k), []byte(v), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Set([]byte("mident"), []byte("not region data"), nil); err != nil {
		t.Fatal(err)
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	var stream bytes.Buffer
	if err := writeSnapshotData(&stream, &genSnap{region: &metapb.Region{}, snap: snap}); err != nil {
		t.Fatal(err)
	}
	decode := func(b []byte) (map[string]string, error) {
		got := map[string]string{}
		d := &snapDecoder{r: bufio.NewReader(bytes.NewReader(b))}
		for {
			k, v, err := d.next()
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			if err != nil {
				return got, err
			}
			got[string(k)] = string(v)
		}
	}
	got, err := decode(stream.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("decoded %d records, want %d:\n%v\n%v", len(got), len(want), got, want)
	}
	full := stream.Bytes()
	if _, err := decode(full[:len(full)-3]); err == nil {
		t.Error("a stream cut short decoded")
	}
	bad := bytes.Clone(full)
	bad[len(bad)/2] ^= 1
	if _, err := decode(bad); err == nil {
		t.Error("an altered stream decoded")
	}
}
