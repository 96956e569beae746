package storenode

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
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
