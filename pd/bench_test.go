package pd_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
)

// BenchmarkTSO takes timestamps through the real pd/client from one
// `basalt pd` process: ns/op is per timestamp over all callers, ts/s the
// throughput, p99-µs the 99th percentile of one GetTS.
//
//	go test -run '^$' -bench TSO -benchtime 200000x ./pd/
func BenchmarkTSO(b *testing.B) {
	ms := startCluster(b, 1)
	c := newClient(b, ms)
	for _, callers := range []int{1, 16, 64} {
		b.Run(map[int]string{1: "callers=1", 16: "callers=16", 64: "callers=64"}[callers], func(b *testing.B) {
			lat := make([][]time.Duration, callers)
			var wg sync.WaitGroup
			per := b.N / callers
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < callers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					l := make([]time.Duration, 0, per)
					for i := 0; i < per; i++ {
						t0 := time.Now()
						if _, _, err := c.GetTS(context.Background()); err != nil {
							b.Error(err)
							return
						}
						l = append(l, time.Since(t0))
					}
					lat[w] = l
				}(w)
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			if len(all) == 0 {
				return
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "ts/s")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkGetRegion looks up regions through pd/client from 16 and 64
// callers, in a directory of 1000 regions.
func BenchmarkGetRegion(b *testing.B) {
	ms := startCluster(b, 1)
	c := newClient(b, ms)
	ctx := context.Background()
	raw := rawClient(b, ms[0])
	h := &pdpb.RequestHeader{ClusterId: c.GetClusterID(ctx)}
	const regions = 1000
	ids, err := raw.AllocID(ctx, &pdpb.AllocIDRequest{Header: h, Count: 2*regions + 1})
	if err != nil {
		b.Fatal(err)
	}
	storeID := ids.Id
	key := func(i int) []byte {
		if i == 0 || i == regions {
			return nil
		}
		return []byte{byte(i >> 8), byte(i)}
	}
	region := func(i int) *metapb.Region {
		return &metapb.Region{Id: storeID + 1 + uint64(2*i), StartKey: key(i), EndKey: key(i + 1),
			RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
			Peers:       []*metapb.Peer{{Id: storeID + 2 + uint64(2*i), StoreId: storeID}}}
	}
	whole := region(0)
	whole.EndKey = nil
	if _, err := raw.Bootstrap(ctx, &pdpb.BootstrapRequest{Header: h,
		Store: &metapb.Store{Id: storeID, Address: "127.0.0.1:20160"}, Region: whole}); err != nil {
		b.Fatal(err)
	}
	stream, err := raw.RegionHeartbeat(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < regions; i++ {
		r := region(i)
		r.RegionEpoch.Version = 2
		if err := stream.Send(&pdpb.RegionHeartbeatRequest{Header: h, Region: r, Leader: r.Peers[0]}); err != nil {
			b.Fatal(err)
		}
	}
	for {
		r, err := c.GetRegion(ctx, key(regions-1))
		if err == nil && r != nil && r.Meta.Id == region(regions-1).Id {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, callers := range []int{16, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			b.SetParallelism(callers / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i = (i + 7) % regions
					if _, err := c.GetRegion(ctx, append(key(i), 0)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "lookups/s")
		})
	}
}

// BenchmarkTSOStream is the floor under BenchmarkTSO: one raw pdpb Tso
// stream, one request in flight, no pd/client. ns/op is one round trip
// between two processes over loopback gRPC.
func BenchmarkTSOStream(b *testing.B) {
	ms := startCluster(b, 1)
	c := newClient(b, ms)
	ctx := context.Background()
	h := &pdpb.RequestHeader{ClusterId: c.GetClusterID(ctx)}
	stream, err := rawClient(b, ms[0]).Tso(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := stream.Send(&pdpb.TsoRequest{Header: h, Count: 1}); err != nil {
			b.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}
