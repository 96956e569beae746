package storenode

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/grpccodec"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
)

// TestKvScanAllocs checks that a scan's response costs a few allocations,
// not three per pair (the pair, a copy of its key, a copy of its value):
// a range query of sysbench's read_only reads 100 rows in one KvScan, and
// the store's allocations per row were a tenth of its CPU in GC and
// allocation (docs/cluster-bench/README.md). It scans 100 rows shaped as
// sysbench's (a 19-byte key, a 190-byte value) through the service on the
// in-memory engine and compares the allocations with a scan of one row.
func TestKvScanAllocs(t *testing.T) {
	rs := newTestRegions(t)
	c, svc := startService(t, rs, 0)
	value := strings.Repeat("v", 190)
	var muts []*kvrpcpb.Mutation
	for i := range 100 {
		muts = append(muts, put(fmt.Sprintf("key%016d", i), value))
	}
	commit(t, c, 2, 10, 11, muts...)
	ctx := context.Background()
	scan := func(limit uint32) *kvrpcpb.ScanResponse {
		resp, err := svc.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), StartKey: []byte("key"), EndKey: []byte("kez"),
			Limit: limit, Version: 20})
		if err != nil || resp.RegionError != nil || resp.Error != nil {
			t.Fatalf("scan: %v %v", resp, err)
		}
		return resp
	}
	if n := len(scan(256).Pairs); n != 100 {
		t.Fatalf("scanned %d pairs, want 100", n)
	}
	for i, p := range scan(256).Pairs {
		if want := fmt.Sprintf("key%016d", i); string(p.Key) != want || string(p.Value) != value {
			t.Fatalf("pair %d: %q = %q, want %q = %q", i, p.Key, p.Value, want, value)
		}
	}
	one := testing.AllocsPerRun(50, func() { scan(1) })
	hundred := testing.AllocsPerRun(50, func() { scan(256) })
	t.Logf("allocations: %.0f for a scan of 1 pair, %.0f for 100", one, hundred)
	// The pairs' own allocations, beyond what the scan of one row makes
	// and what the engine's iterator makes per row.
	if extra := hundred - one; extra > 20 {
		t.Errorf("a scan of 100 pairs made %.0f allocations more than a scan of 1, want at most 20", extra)
	}
}

// BenchmarkKvScanService is the service's KvScan of 100 rows shaped as
// sysbench's on the in-memory engine, called directly: the store's own
// work for a range query, without gRPC or Pebble.
//
//	go test -run '^$' -bench KvScanService -count 5 ./storenode/
func BenchmarkKvScanService(b *testing.B) {
	t := &testing.T{}
	rs := newTestRegions(t)
	c, svc := startService(t, rs, 0)
	value := strings.Repeat("v", 190)
	var muts []*kvrpcpb.Mutation
	for i := range 100 {
		muts = append(muts, put(fmt.Sprintf("key%016d", i), value))
	}
	commit(t, c, 2, 10, 11, muts...)
	ctx := context.Background()
	req := &kvrpcpb.ScanRequest{Context: rc(2), StartKey: []byte("key"), EndKey: []byte("kez"), Limit: 256, Version: 20}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := svc.KvScan(ctx, req)
		if err != nil || len(resp.Pairs) != 100 {
			b.Fatalf("scan: %d pairs, %v", len(resp.Pairs), err)
		}
		if _, err := resp.Marshal(); err != nil {
			b.Fatal(err)
		}
	}
}

// scanRows commits 100 rows shaped as sysbench's (a 19-byte key, a
// 190-byte value naming its key) in region 2 and returns their values.
func scanRows(t *testing.T, c tikvpb.TikvClient) []string {
	t.Helper()
	var muts []*kvrpcpb.Mutation
	var values []string
	for i := range 100 {
		v := fmt.Sprintf("%03d", i) + strings.Repeat("v", 187)
		values = append(values, v)
		muts = append(muts, put(fmt.Sprintf("key%016d", i), v))
	}
	commit(t, c, 2, 10, 11, muts...)
	return values
}

// TestServiceBatchScansReuse: a scan on the BatchCommands stream makes
// its pairs in memory kept from the scans before it (scanAnswer), once
// their responses were sent, rather than in new memory: making and
// zeroing it was 6% of the leader's CPU under oltp_read_only. It fails
// with scanAnswer.free a no-op. And the answers stay right: many scans of
// different ranges in flight at once on one stream, each checked.
func TestServiceBatchScansReuse(t *testing.T) {
	rs := newTestRegions(t)
	c, svc := startService(t, rs, 0)
	values := scanRows(t, c)
	ctx := context.Background()
	type req = tikvpb.BatchCommandsRequest_Request
	scan := func(from, limit int) *req {
		return &req{Cmd: &tikvpb.BatchCommandsRequest_Request_Scan{Scan: &kvrpcpb.ScanRequest{Context: rc(2),
			StartKey: fmt.Appendf(nil, "key%016d", from), EndKey: []byte("kez"), Limit: uint32(limit), Version: 20}}}
	}

	// The sender's part: answers made, sent, freed, made again.
	snd := &batchSender{stream: discardStream{}, out: make(chan batchResult)}
	one := func() {
		res := batchResult{id: 1}
		res.resp, res.scan = svc.dispatchBatched(ctx, scan(0, 256))
		if n := len(res.resp.GetScan().GetPairs()); n != 100 {
			t.Fatalf("scanned %d pairs, want 100", n)
		}
		if err := snd.send([]batchResult{res}); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		one()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const scans = 200
	for range scans {
		one()
	}
	runtime.ReadMemStats(&after)
	// The 100 pairs' keys and values alone are 20,900 bytes, and the pairs
	// 6,400 more; what is left is the engine's and the message's.
	perScan := (after.TotalAlloc - before.TotalAlloc) / scans
	t.Logf("%d bytes allocated per scan of 100 rows", perScan)
	if perScan > 12<<10 && !raceEnabled {
		t.Errorf("a scan of 100 rows allocated %d bytes, want its pairs' memory kept from the scans before", perScan)
	}

	// Over a stream, scans of different ranges at once.
	b := newBatchClient(t, c)
	var ids []uint64
	var reqs []*req
	want := map[uint64]int{}
	for i := range 300 {
		id := uint64(i + 1)
		from := i % 90
		ids, reqs = append(ids, id), append(reqs, scan(from, 5+i%50))
		want[id] = from
		if len(ids) == 6 {
			b.send(ids, reqs...)
			ids, reqs = nil, nil
		}
	}
	b.send(ids, reqs...)
	for id, from := range want {
		pairs := b.wait(id).GetScan().GetPairs()
		limit := 5 + int(id-1)%50
		if n := min(limit, 100-from); len(pairs) != n {
			t.Fatalf("scan %d from %d: %d pairs, want %d", id, from, len(pairs), n)
		}
		for j, p := range pairs {
			i := from + j
			if string(p.Key) != fmt.Sprintf("key%016d", i) || string(p.Value) != values[i] {
				t.Fatalf("scan %d, pair %d: %q = %.8q..., want row %d", id, j, p.Key, p.Value, i)
			}
		}
	}
}

// discardStream is a BatchCommands server stream whose Send marshals the
// message, as gRPC does with the store's codec, and drops it.
type discardStream struct {
	tikvpb.Tikv_BatchCommandsServer
}

func (discardStream) Send(m *tikvpb.BatchCommandsResponse) error {
	data, err := grpccodec.NewGogo().Marshal(m)
	data.Free()
	return err
}
