package storenode

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/basalt-db/basalt/storenode/raftstore"
	"github.com/basalt-db/basalt/tso"
	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// The service over a real gRPC server on a loopback port, called with
// tikvpb's client, on a store that holds (in testRegions):
//
//	region 2  [-inf, "m")  led here
//	region 4  ["m", +inf)  led here
//	region 6  everything   led here, but reads fail their read index and
//	                       writes fail to replicate (as when leadership is
//	                       lost under a command)
//	region 8  everything   led by store 3
//	region 10 everything   led here, but every second read index fails:
//	                       a read passes its first check and loses the
//	                       lead while it waits (for a commit in flight,
//	                       for the read pool)
//
// Regions 2 and 4 share one in-memory engine, latches and lock waits, as a
// storage node's regions share its Pebble and wait manager.
//
// Responses are compared in protobuf's compact text form.

// testRegion is one region of testRegions.
type testRegion struct {
	meta    *metapb.Region
	st      *mvcc.Store
	readErr error
	// loseEverySecond: every second ReadIndex answers NotLeader.
	loseEverySecond bool
	readIndexes     atomic.Int32
	term            atomic.Uint64 // LeaderTerm's answer; 1 if unset
	// What RecordRead counted.
	bytesRead, keysRead atomic.Uint64
}

func (r *testRegion) Meta() *metapb.Region { return r.meta }
func (r *testRegion) MVCC() *mvcc.Store    { return r.st }
func (r *testRegion) ReadIndex(context.Context) error {
	if r.loseEverySecond && r.readIndexes.Add(1)%2 == 0 {
		return raftstore.NotLeader(r.meta.Id, nil)
	}
	return r.readErr
}
func (r *testRegion) RecordRead(bytes, keys uint64) {
	r.bytesRead.Add(bytes)
	r.keysRead.Add(keys)
}
func (r *testRegion) LeaderTerm() uint64 {
	if t := r.term.Load(); t != 0 {
		return t
	}
	return 1
}

type testRegions struct {
	waits   *mvcc.WaitManager
	regions map[uint64]*testRegion
	// leaders: the leaders of the regions this store holds but does not
	// lead.
	leaders map[uint64]*metapb.Peer

	mu     sync.Mutex
	splits [][]byte // the raw keys Split was asked for
}

var epoch = &metapb.RegionEpoch{ConfVer: 1, Version: 1}

// failingEngine replicates nothing: every write fails as a lost
// leadership does.
type failingEngine struct{ mvcc.Engine }

func (failingEngine) Write(*mvcc.Batch, bool) error { return raftstore.NotLeader(6, nil) }

func newTestRegions(t *testing.T) *testRegions {
	eng := mvcc.NewMemEngine()
	latches, waits := mvcc.NewLatches(), mvcc.NewWaitManager(mvcc.RealClock{})
	store := func(e mvcc.Engine) *mvcc.Store {
		st, err := mvcc.NewStore(e, mvcc.RealClock{}, mvcc.Options{Latches: latches, Waits: waits})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	region := func(id uint64, start, end string) *metapb.Region {
		r := &metapb.Region{Id: id, RegionEpoch: epoch, Peers: []*metapb.Peer{{Id: id + 1, StoreId: 1}}}
		if start != "" {
			r.StartKey = codec.EncodeBytes(nil, []byte(start))
		}
		if end != "" {
			r.EndKey = codec.EncodeBytes(nil, []byte(end))
		}
		return r
	}
	return &testRegions{waits: waits,
		regions: map[uint64]*testRegion{
			2:  {meta: region(2, "", "m"), st: store(eng)},
			4:  {meta: region(4, "m", ""), st: store(eng)},
			6:  {meta: region(6, "", ""), st: store(failingEngine{eng}), readErr: raftstore.NotLeader(6, nil)},
			8:  {meta: region(8, "", ""), st: store(eng)},
			10: {meta: region(10, "", ""), st: store(eng), loseEverySecond: true},
		},
		leaders: map[uint64]*metapb.Peer{8: {Id: 9, StoreId: 3}},
	}
}

func (rs *testRegions) Leader(ctx *kvrpcpb.Context) (Region, *errorpb.Error) {
	r, ok := rs.regions[ctx.GetRegionId()]
	if !ok {
		return nil, &errorpb.Error{Message: "region not found", RegionNotFound: &errorpb.RegionNotFound{RegionId: ctx.GetRegionId()}}
	}
	if l, ok := rs.leaders[ctx.GetRegionId()]; ok {
		return nil, raftstore.NotLeader(ctx.GetRegionId(), l).Err
	}
	if e := ctx.GetRegionEpoch(); e.GetVersion() != epoch.Version || e.GetConfVer() != epoch.ConfVer {
		return nil, &errorpb.Error{Message: "epoch not match", EpochNotMatch: &errorpb.EpochNotMatch{CurrentRegions: []*metapb.Region{r.meta}}}
	}
	return r, nil
}

// LeaderNow is Leader on its way without waits: a region whose
// ReadIndex fails (or may) is not.
func (rs *testRegions) LeaderNow(ctx *kvrpcpb.Context) Region {
	r, rerr := rs.Leader(ctx)
	if rerr != nil || r.(*testRegion).readErr != nil || r.(*testRegion).loseEverySecond {
		return nil
	}
	return r
}

func (rs *testRegions) Split(_ context.Context, r Region, rawKeys [][]byte) ([]*metapb.Region, error) {
	rs.mu.Lock()
	rs.splits = append(rs.splits, rawKeys...)
	rs.mu.Unlock()
	meta := r.Meta()
	left := &metapb.Region{Id: 100, StartKey: meta.StartKey, EndKey: codec.EncodeBytes(nil, rawKeys[0]), RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 2}}
	right := &metapb.Region{Id: meta.Id, StartKey: left.EndKey, EndKey: meta.EndKey, RegionEpoch: left.RegionEpoch}
	return []*metapb.Region{left, right}, nil
}

// startService serves a Service over rs on a loopback port, set up by
// setup before it serves.
func startService(t *testing.T, rs *testRegions, lockWait time.Duration, setup ...func(*Service)) (tikvpb.TikvClient, *Service) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(1, rs)
	svc.WaitForLockTimeout = lockWait
	for _, f := range setup {
		f(svc)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(svc.CheckCluster))
	tikvpb.RegisterTikvServer(srv, svc)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return tikvpb.NewTikvClient(conn), svc
}

// rc is the request context for region id, as client-go fills it.
func rc(id uint64) *kvrpcpb.Context {
	return &kvrpcpb.Context{RegionId: id, RegionEpoch: epoch, Peer: &metapb.Peer{Id: id + 1, StoreId: 1}}
}

func put(k, v string) *kvrpcpb.Mutation {
	return &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: []byte(k), Value: []byte(v)}
}

func del(k string) *kvrpcpb.Mutation { return &kvrpcpb.Mutation{Op: kvrpcpb.Op_Del, Key: []byte(k)} }

func mut(op kvrpcpb.Op, k string) *kvrpcpb.Mutation { return &kvrpcpb.Mutation{Op: op, Key: []byte(k)} }

func keys(ks ...string) [][]byte {
	out := make([][]byte, len(ks))
	for i, k := range ks {
		out[i] = []byte(k)
	}
	return out
}

// ms is a timestamp at physical time ms, for commands that compare TTLs.
func ms(ms int64) uint64 { return tso.ComposeTS(ms, 0) }

// step is one call and the response it must give, in compact text.
type step struct {
	name string
	call func(context.Context) (fmt.Stringer, error)
	want string
}

func run(t *testing.T, steps []step) {
	t.Helper()
	ctx := context.Background()
	for _, s := range steps {
		resp, err := s.call(ctx)
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		if got := strings.TrimSpace(resp.String()); got != s.want {
			t.Errorf("%s:\n got: %s\nwant: %s", s.name, got, s.want)
		}
	}
}

// failed is the error of a call, or the error its response carries.
func failed(resp fmt.Stringer, err error) error {
	if err != nil {
		return err
	}
	if s := resp.String(); strings.Contains(s, "error") {
		return fmt.Errorf("error response: %s", s)
	}
	return nil
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// commit writes muts in one transaction, primary the first, through the
// region.
func commit(t *testing.T, c tikvpb.TikvClient, region, start, commitTS uint64, muts ...*kvrpcpb.Mutation) {
	t.Helper()
	ctx := context.Background()
	ok(t, failed(c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(region), Mutations: muts,
		PrimaryLock: muts[0].Key, StartVersion: start, LockTtl: 3000})))
	var ks [][]byte
	for _, m := range muts {
		ks = append(ks, m.Key)
	}
	ok(t, failed(c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(region), StartVersion: start, Keys: ks, CommitVersion: commitTS})))
}

func TestServiceRegionErrors(t *testing.T) {
	c, _ := startService(t, newTestRegions(t), time.Second)
	endM := `"m\000\000\000\000\000\000\000\370"`
	wrongStore := rc(2)
	wrongStore.Peer = &metapb.Peer{Id: 3, StoreId: 7}
	staleEpoch := rc(2)
	staleEpoch.RegionEpoch = &metapb.RegionEpoch{ConfVer: 1}
	run(t, []step{
		{"no context", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Key: []byte("a")})
		}, `region_error:<message:"region not found" region_not_found:<> >`},
		{"unknown region", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(9), Key: []byte("a")})
		}, `region_error:<message:"region not found" region_not_found:<region_id:9 > >`},
		{"another store", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: wrongStore, Key: []byte("a")})
		}, `region_error:<message:"store 1 is not store 7" store_not_match:<request_store_id:7 actual_store_id:1 > >`},
		{"not leader", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(8), Mutations: []*kvrpcpb.Mutation{put("a", "1")}})
		}, `region_error:<message:"not leader" not_leader:<region_id:8 leader:<id:9 store_id:3 > > >`},
		{"stale epoch", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: staleEpoch, Keys: keys("a"), StartVersion: 1, CommitVersion: 2})
		}, `region_error:<message:"epoch not match" epoch_not_match:<current_regions:<id:2 end_key:` + endM +
			` region_epoch:<conf_ver:1 version:1 > peers:<id:3 store_id:1 > > > >`},
		{"get: key of the next region", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("n")})
		}, `region_error:<message:"key \"n\" is not in region 2" key_not_in_region:<key:"n" region_id:2 end_key:` + endM + ` > >`},
		{"get: the region's end key", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("m")})
		}, `region_error:<message:"key \"m\" is not in region 2" key_not_in_region:<key:"m" region_id:2 end_key:` + endM + ` > >`},
		{"get: key of the previous region", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(4), Key: []byte("l")})
		}, `region_error:<message:"key \"l\" is not in region 4" key_not_in_region:<key:"l" region_id:4 start_key:` + endM + ` > >`},
		{"batch get: one key outside", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{Context: rc(2), Keys: keys("a", "z")})
		}, `region_error:<message:"key \"z\" is not in region 2" key_not_in_region:<key:"z" region_id:2 end_key:` + endM + ` > >`},
		{"prewrite: one key outside", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(4), Mutations: []*kvrpcpb.Mutation{put("n", "1"), put("a", "1")}})
		}, `region_error:<message:"key \"a\" is not in region 4" key_not_in_region:<key:"a" region_id:4 start_key:` + endM + ` > >`},
		{"pessimistic lock: one key outside", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPessimisticLock(ctx, &kvrpcpb.PessimisticLockRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{mut(kvrpcpb.Op_PessimisticLock, "x")}})
		}, `region_error:<message:"key \"x\" is not in region 2" key_not_in_region:<key:"x" region_id:2 end_key:` + endM + ` > >`},
		{"scan from the next region", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), StartKey: []byte("n"), Limit: 10})
		}, `region_error:<message:"key \"n\" is not in region 2" key_not_in_region:<key:"n" region_id:2 end_key:` + endM + ` > >`},
		{"reverse scan from above the region", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), StartKey: []byte("n"), Limit: 10, Reverse: true})
		}, `region_error:<message:"key \"n\" is not in region 2" key_not_in_region:<key:"n" region_id:2 end_key:` + endM + ` > >`},
		{"reverse scan from the region's start", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(4), StartKey: []byte("m"), Limit: 10, Reverse: true})
		}, `region_error:<message:"key \"m\" is not in region 4" key_not_in_region:<key:"m" region_id:4 start_key:` + endM + ` > >`},
		{"reverse scan from the region's end is fine", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), StartKey: []byte("m"), Limit: 10, Reverse: true})
		}, ``},
		{"read index lost", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(6), Key: []byte("a")})
		}, `region_error:<message:"not leader" not_leader:<region_id:6 > >`},
		{"scan: read index lost", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(6), Limit: 1})
		}, `region_error:<message:"not leader" not_leader:<region_id:6 > >`},
		{"get: lead lost while the read waited", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(10), Key: []byte("a")})
		}, `region_error:<message:"not leader" not_leader:<region_id:10 > >`},
		{"batch get: lead lost while the read waited", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{Context: rc(10), Keys: keys("a", "b")})
		}, `region_error:<message:"not leader" not_leader:<region_id:10 > >`},
		{"scan: lead lost while the read waited", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(10), Limit: 1})
		}, `region_error:<message:"not leader" not_leader:<region_id:10 > >`},
		{"write not replicated", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(6), Mutations: []*kvrpcpb.Mutation{put("a", "1")}, PrimaryLock: []byte("a"), StartVersion: 1})
		}, `region_error:<message:"not leader" not_leader:<region_id:6 > >`},
		{"nothing was written", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{Context: rc(2), MaxVersion: 100})
		}, ``},
	})
}

func TestServiceReadsAndWrites(t *testing.T) {
	c, _ := startService(t, newTestRegions(t), time.Second)
	long := strings.Repeat("x", 300)
	commit(t, c, 2, 10, 11, put("a", "1"), put("b", "2"), put("c", long))
	commit(t, c, 4, 12, 13, put("n", "3"), put("o", "4"))
	run(t, []step{
		{"get", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("a"), Version: 20})
		}, `value:"1"`},
		{"get a long value", func(ctx context.Context) (fmt.Stringer, error) {
			r, err := c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("c"), Version: 20})
			if err == nil && string(r.Value) == long {
				r.Value = []byte("x*300")
			}
			return r, err
		}, `value:"x*300"`},
		{"get below the commit", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("a"), Version: 10})
		}, `not_found:true`},
		{"batch get leaves absent keys out", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{Context: rc(2), Keys: keys("b", "d", "a"), Version: 20})
		}, `pairs:<key:"b" value:"2" > pairs:<key:"a" value:"1" >`},
		{"scan stops at the region's end", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), Limit: 10, Version: 20, KeyOnly: true})
		}, `pairs:<key:"a" > pairs:<key:"b" > pairs:<key:"c" >`},
		{"scan with a limit and an end", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), StartKey: []byte("a"), EndKey: []byte("c"), Limit: 1, Version: 20})
		}, `pairs:<key:"a" value:"1" >`},
		{"scan with limit 0", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), Version: 20})
		}, ``},
		{"scan of the next region from its start", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(4), StartKey: []byte("m"), Limit: 10, Version: 20})
		}, `pairs:<key:"n" value:"3" > pairs:<key:"o" value:"4" >`},
		{"reverse scan stops at the region's start", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(4), Limit: 10, Version: 20, Reverse: true})
		}, `pairs:<key:"o" value:"4" > pairs:<key:"n" value:"3" >`},
		{"reverse scan from +inf: from the region's end", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), Limit: 10, Version: 20, Reverse: true, KeyOnly: true})
		}, `pairs:<key:"c" > pairs:<key:"b" > pairs:<key:"a" >`},
		{"reverse scan between bounds", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), StartKey: []byte("c"), EndKey: []byte("a"), Limit: 10, Version: 20, Reverse: true, KeyOnly: true})
		}, `pairs:<key:"b" > pairs:<key:"a" >`},
		{"prewrite (as client-go: min commit ts above start)", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("a", "10"), del("b")},
				PrimaryLock: []byte("a"), StartVersion: 30, LockTtl: 3000, MinCommitTs: 31, TxnSize: 2})
		}, ``},
		{"async commit and 1PC need max ts synced with PD (and this store has no TSO)", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(4), Mutations: []*kvrpcpb.Mutation{put("p", "p")},
				PrimaryLock: []byte("p"), StartVersion: 32, LockTtl: 3000, MinCommitTs: 33, UseAsyncCommit: true,
				Secondaries: keys("q"), TryOnePc: true, MaxCommitTs: 100})
		}, `region_error:<message:"max ts of region 4 not synced: the store has no timestamp source" max_timestamp_not_synced:<> >`},
		{"a lock hides a key from a later reader", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("b"), Version: 40})
		}, `error:<locked:<primary_lock:"a" lock_version:30 key:"b" lock_ttl:3000 txn_size:2 lock_type:Del min_commit_ts:31 > >`},
		{"but not from an earlier one", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("b"), Version: 25})
		}, `value:"2"`},
		{"batch get: each lock a pair", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{Context: rc(2), Keys: keys("a", "b", "c"), Version: 40})
		}, `pairs:<error:<locked:<primary_lock:"a" lock_version:30 key:"a" lock_ttl:3000 txn_size:2 min_commit_ts:31 > > key:"a" > ` +
			`pairs:<error:<locked:<primary_lock:"a" lock_version:30 key:"b" lock_ttl:3000 txn_size:2 lock_type:Del min_commit_ts:31 > > key:"b" > ` +
			`pairs:<key:"c" value:"` + long + `" >`},
		{"scan: a lock fails the scan", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), Limit: 10, Version: 40})
		}, `error:<locked:<primary_lock:"a" lock_version:30 key:"a" lock_ttl:3000 txn_size:2 min_commit_ts:31 > >`},
		{"reader resolved the txn (rolled back, or commits later)", func(ctx context.Context) (fmt.Stringer, error) {
			ctx2 := rc(2)
			ctx2.ResolvedLocks = []uint64{30}
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: ctx2, Limit: 10, Version: 40, KeyOnly: true})
		}, `pairs:<key:"a" > pairs:<key:"b" > pairs:<key:"c" >`},
		{"reader learned the txn committed below it", func(ctx context.Context) (fmt.Stringer, error) {
			ctx2 := rc(2)
			ctx2.CommittedLocks = []uint64{30}
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: ctx2, Limit: 10, Version: 40, KeyOnly: true})
		}, `pairs:<key:"a" > pairs:<key:"c" >`},
		{"... as a get", func(ctx context.Context) (fmt.Stringer, error) {
			ctx2 := rc(2)
			ctx2.CommittedLocks = []uint64{30}
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: ctx2, Key: []byte("a"), Version: 40})
		}, `value:"10"`},
		{"a reader pushes the live txn's min commit ts", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCheckTxnStatus(ctx, &kvrpcpb.CheckTxnStatusRequest{Context: rc(2), PrimaryKey: []byte("a"), LockTs: 30,
				CallerStartTs: 40, CurrentTs: 40, VerifyIsPrimary: true})
		}, `lock_ttl:3000 action:MinCommitTSPushed lock_info:<primary_lock:"a" lock_version:30 key:"a" lock_ttl:3000 txn_size:2 min_commit_ts:41 >`},
		{"and reads past its primary", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("a"), Version: 40})
		}, `value:"1"`},
		{"the txn's commit below the push is refused", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: 30, Keys: keys("a"), CommitVersion: 35})
		}, `error:<commit_ts_expired:<start_ts:30 attempted_commit_ts:35 key:"a" min_commit_ts:41 > >`},
		{"and goes through above it", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: 30, Keys: keys("a", "b"), CommitVersion: 45})
		}, `commit_version:45`},
		{"a commit is idempotent", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: 30, Keys: keys("a", "b"), CommitVersion: 45})
		}, `commit_version:45`},
		{"the delete committed", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{Context: rc(2), Keys: keys("a", "b"), Version: 50})
		}, `pairs:<key:"a" value:"10" >`},
	})
}

func TestServiceWriteErrors(t *testing.T) {
	c, _ := startService(t, newTestRegions(t), time.Second)
	commit(t, c, 2, 10, 11, put("k", "1"))
	prewrite := func(start, forUpdate uint64, muts ...*kvrpcpb.Mutation) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			req := &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: muts, PrimaryLock: muts[0].Key,
				StartVersion: start, ForUpdateTs: forUpdate, LockTtl: 3000}
			if forUpdate != 0 {
				for range muts {
					req.PessimisticActions = append(req.PessimisticActions, kvrpcpb.PrewriteRequest_DO_PESSIMISTIC_CHECK)
				}
			}
			resp, err := c.KvPrewrite(ctx, req)
			for _, e := range resp.GetErrors() {
				if e.Conflict != nil && e.Retryable != "" {
					e.Retryable = "..."
				}
			}
			return resp, err
		}
	}
	run(t, []step{
		{"optimistic write conflict", prewrite(5, 0, put("j", "5"), put("k", "5")),
			`errors:<retryable:"..." conflict:<start_ts:5 conflict_ts:10 key:"k" primary:"j" conflict_commit_ts:11 reason:Optimistic > >`},
		{"insert of an existing key", prewrite(20, 0, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Insert, Key: []byte("k"), Value: []byte("2")}),
			`errors:<already_exist:<key:"k" > >`},
		{"check-not-exists of an existing key", prewrite(20, 0, put("j", "2"), mut(kvrpcpb.Op_CheckNotExists, "k")),
			`errors:<already_exist:<key:"k" > >`},
		{"check-not-exists of an absent key", prewrite(20, 0, put("j", "2"), mut(kvrpcpb.Op_CheckNotExists, "i")),
			``},
		{"another txn's lock", prewrite(21, 0, put("j", "3")),
			`errors:<locked:<primary_lock:"j" lock_version:20 key:"j" lock_ttl:3000 txn_size:1 > >`},
		{"a retried prewrite", prewrite(20, 0, put("j", "2"), mut(kvrpcpb.Op_CheckNotExists, "i")),
			``},
		{"rollback", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvBatchRollback(ctx, &kvrpcpb.BatchRollbackRequest{Context: rc(2), StartVersion: 20, Keys: keys("j")})
		}, ``},
		{"a prewrite after the rollback conflicts with itself", prewrite(20, 0, put("j", "2")),
			`errors:<retryable:"..." conflict:<start_ts:20 conflict_ts:20 key:"j" primary:"j" conflict_commit_ts:20 reason:SelfRolledBack > >`},
		{"a commit after the rollback", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: 20, Keys: keys("j"), CommitVersion: 22})
		}, `error:<txn_lock_not_found:<key:"j" > >`},
		{"a rollback of a committed txn", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvBatchRollback(ctx, &kvrpcpb.BatchRollbackRequest{Context: rc(2), StartVersion: 10, Keys: keys("k")})
		}, `error:<abort:"mvcc: cannot roll back key \"k\": its transaction committed at 11" >`},
		{"a commit ts not above the start ts", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: 30, Keys: keys("k"), CommitVersion: 30})
		}, `error:<abort:"invalid transaction timestamps: commit ts 30 is not above start ts 30" >`},
		{"a mutation of an unknown kind", prewrite(30, 0, mut(kvrpcpb.Op_Rollback, "k")),
			`errors:<abort:"prewrite: unsupported mutation op Rollback" >`},
		{"a pessimistic prewrite without its pessimistic lock", prewrite(40, 40, put("k", "4")),
			`errors:<abort:"mvcc: pessimistic lock not found: key \"k\", txn 40" >`},
		{"a pessimistic lock behind a newer commit", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPessimisticLock(ctx, &kvrpcpb.PessimisticLockRequest{Context: rc(2), PrimaryLock: []byte("k"),
				Mutations: []*kvrpcpb.Mutation{mut(kvrpcpb.Op_PessimisticLock, "k")}, StartVersion: 5, ForUpdateTs: 5, LockTtl: 3000})
		}, `errors:<retryable:"kv: write conflict on key \"k\": txn 5, conflicting txn 10 committed at 11" ` +
			`conflict:<start_ts:5 conflict_ts:10 key:"k" primary:"k" conflict_commit_ts:11 reason:PessimisticRetry > >`},
	})
}

// lockReq is a pessimistic lock request of txn on keys, for_update_ts =
// txn, waiting wait ms.
func lockReq(txn uint64, wait int64, ks ...string) *kvrpcpb.PessimisticLockRequest {
	req := &kvrpcpb.PessimisticLockRequest{Context: rc(2), PrimaryLock: []byte(ks[0]), StartVersion: txn,
		ForUpdateTs: txn, LockTtl: 3000, WaitTimeout: wait, MinCommitTs: txn + 1}
	for _, k := range ks {
		req.Mutations = append(req.Mutations, mut(kvrpcpb.Op_PessimisticLock, k))
	}
	return req
}

func TestServicePessimisticLock(t *testing.T) {
	rs := newTestRegions(t)
	// c waits at most 300ms for a lock; c5, for the waits that must end
	// by a wake-up, 5s.
	c, _ := startService(t, rs, 300*time.Millisecond)
	c5, _ := startService(t, rs, 5*time.Second)
	ctx := context.Background()
	commit(t, c, 2, 10, 11, put("h1", "1"))

	timed := func(f func(context.Context) (fmt.Stringer, error), min, max time.Duration) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			start := time.Now()
			resp, err := f(ctx)
			if d := time.Since(start); d < min || d > max {
				t.Errorf("answered after %v, not in [%v, %v]", d, min, max)
			}
			return resp, err
		}
	}
	lock := func(req *kvrpcpb.PessimisticLockRequest) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) { return c.KvPessimisticLock(ctx, req) }
	}
	withValues := lockReq(100, 0, "h1", "h2")
	withValues.ReturnValues = true
	existence := lockReq(100, 0, "h1", "h2")
	existence.CheckExistence = true
	onlyIfExists := lockReq(100, 0, "h3")
	onlyIfExists.ReturnValues, onlyIfExists.LockOnlyIfExists = true, true
	forceLock := lockReq(100, 0, "h1")
	forceLock.WakeUpMode = kvrpcpb.PessimisticLockWakeUpMode_WakeUpModeForceLock
	lockedP := `errors:<locked:<primary_lock:"h1" lock_version:100 key:"h1" lock_ttl:3000 lock_type:PessimisticLock lock_for_update_ts:100 min_commit_ts:101 > >`
	run(t, []step{
		{"lock with values", lock(withValues), `values:"1" values:"" not_founds:false not_founds:true`},
		{"again, checking existence", lock(existence), `not_founds:false not_founds:true`},
		{"only if exists", lock(onlyIfExists), `values:"" not_founds:true`},
		{"no wait", timed(lock(lockReq(200, -1, "h1")), 0, 200*time.Millisecond), lockedP},
		{"wait 100ms", timed(lock(lockReq(200, 100, "h1")), 100*time.Millisecond, 250*time.Millisecond), lockedP},
		{"wait forever: the store's limit", timed(lock(lockReq(200, 1<<62, "h1")), 300*time.Millisecond, time.Second), lockedP},
		{"default wait: the store's limit", timed(lock(lockReq(200, 0, "h1")), 300*time.Millisecond, time.Second), lockedP},
		{"r was not locked", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{Context: rc(2), MaxVersion: 1000})
		}, `locks:<primary_lock:"h1" lock_version:100 key:"h1" lock_ttl:3000 lock_type:PessimisticLock lock_for_update_ts:100 min_commit_ts:101 > ` +
			`locks:<primary_lock:"h1" lock_version:100 key:"h2" lock_ttl:3000 lock_type:PessimisticLock lock_for_update_ts:100 min_commit_ts:101 >`},
		{"force-lock wake-up mode", lock(forceLock), `errors:<abort:"pessimistic lock: wake-up mode WakeUpModeForceLock is not supported" >`},
		{"a shared lock", lock(&kvrpcpb.PessimisticLockRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{mut(kvrpcpb.Op_SharedPessimisticLock, "h4")}}),
			`errors:<abort:"pessimistic lock: unsupported op SharedPessimisticLock" >`},
	})

	// A waiter is woken when the holder commits, and then takes the lock
	// (its for-update ts is above the commit).
	type result struct {
		resp *kvrpcpb.PessimisticLockResponse
		err  error
		took time.Duration
	}
	waiting := make(chan result, 1)
	go func() {
		start := time.Now()
		resp, err := c5.KvPessimisticLock(ctx, lockReq(200, 5000, "h2"))
		waiting <- result{resp, err, time.Since(start)}
	}()
	waitFor(t, rs.waits, 200, 100)
	time.Sleep(100 * time.Millisecond)
	ok(t, failed(c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("h1", "2"), put("h2", "2")},
		PrimaryLock: []byte("h1"), StartVersion: 100, ForUpdateTs: 100, LockTtl: 3000, MinCommitTs: 101,
		PessimisticActions: []kvrpcpb.PrewriteRequest_PessimisticAction{kvrpcpb.PrewriteRequest_DO_PESSIMISTIC_CHECK, kvrpcpb.PrewriteRequest_DO_PESSIMISTIC_CHECK}})))
	ok(t, failed(c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: 100, Keys: keys("h1", "h2"), CommitVersion: 150})))
	r := <-waiting
	if r.err != nil || r.resp.String() != "" || r.took < 100*time.Millisecond || r.took > 2*time.Second {
		t.Errorf("the waiter got %v %v after %v; want the lock once the holder committed, after 100ms", r.resp, r.err, r.took)
	}

	// Two transactions that wait for each other: the second to wait is
	// refused.
	ok(t, failed(c.KvPessimisticLock(ctx, lockReq(300, 0, "i1"))))
	ok(t, failed(c.KvPessimisticLock(ctx, lockReq(400, 0, "i2"))))
	go func() {
		resp, err := c5.KvPessimisticLock(ctx, lockReq(300, 5000, "i2"))
		waiting <- result{resp: resp, err: err}
	}()
	waitFor(t, rs.waits, 300, 400)
	run(t, []step{
		{"deadlock", func(ctx context.Context) (fmt.Stringer, error) {
			return c5.KvPessimisticLock(ctx, lockReq(400, 5000, "i1"))
		},
			`errors:<deadlock:<lock_ts:300 lock_key:"i1" wait_chain:<txn:300 wait_for_txn:400 key:"i2" > wait_chain:<txn:400 wait_for_txn:300 key:"i1" > deadlock_key:"i2" > >`},
		{"the victim rolls back", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KVPessimisticRollback(ctx, &kvrpcpb.PessimisticRollbackRequest{Context: rc(2), StartVersion: 400, ForUpdateTs: 400, Keys: keys("i2")})
		}, ``},
	})
	if r := <-waiting; r.err != nil || r.resp.String() != "" {
		t.Errorf("the other transaction got %v %v; want its lock", r.resp, r.err)
	}

	// Pessimistic rollback of some keys, then of the rest of the region.
	ok(t, failed(c.KvPessimisticLock(ctx, lockReq(500, 0, "e", "f", "g"))))
	run(t, []step{
		{"rollback of e", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KVPessimisticRollback(ctx, &kvrpcpb.PessimisticRollbackRequest{Context: rc(2), StartVersion: 500, ForUpdateTs: 500, Keys: keys("e")})
		}, ``},
		{"locks of a newer for-update ts stay", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KVPessimisticRollback(ctx, &kvrpcpb.PessimisticRollbackRequest{Context: rc(2), StartVersion: 500, ForUpdateTs: 499})
		}, ``},
		{"f and g left", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{Context: rc(2), StartKey: []byte("e"), EndKey: []byte("h"), MaxVersion: 1000})
		}, `locks:<primary_lock:"e" lock_version:500 key:"f" lock_ttl:3000 lock_type:PessimisticLock lock_for_update_ts:500 min_commit_ts:501 > ` +
			`locks:<primary_lock:"e" lock_version:500 key:"g" lock_ttl:3000 lock_type:PessimisticLock lock_for_update_ts:500 min_commit_ts:501 >`},
		{"rollback of the region's", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KVPessimisticRollback(ctx, &kvrpcpb.PessimisticRollbackRequest{Context: rc(2), StartVersion: 500, ForUpdateTs: 500})
		}, ``},
		{"none left", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{Context: rc(2), StartKey: []byte("e"), EndKey: []byte("h"), MaxVersion: 1000})
		}, ``},
	})
}

// waitFor waits until transaction txn waits for holder's lock.
func waitFor(t *testing.T, waits *mvcc.WaitManager, txn, holder uint64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if h, ok := waits.WaitingFor(txn); ok && h == holder {
			return
		}
	}
	t.Fatalf("txn %d does not wait for txn %d", txn, holder)
}

func TestServiceTxnStatus(t *testing.T) {
	c, _ := startService(t, newTestRegions(t), time.Second)
	ctx := context.Background()
	t0 := ms(1000)
	ok(t, failed(c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("a", "1"), put("b", "1")},
		PrimaryLock: []byte("a"), StartVersion: t0, LockTtl: 3000, MinCommitTs: t0 + 1})))
	status := func(primary string, lockTS, current uint64, rollbackIfNotExist bool) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCheckTxnStatus(ctx, &kvrpcpb.CheckTxnStatusRequest{Context: rc(2), PrimaryKey: []byte(primary), LockTs: lockTS,
				CurrentTs: current, RollbackIfNotExist: rollbackIfNotExist, VerifyIsPrimary: true})
		}
	}
	heartbeat := func(primary string, start, ttl uint64) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvTxnHeartBeat(ctx, &kvrpcpb.TxnHeartBeatRequest{Context: rc(2), PrimaryLock: []byte(primary), StartVersion: start, AdviseLockTtl: ttl})
		}
	}
	cleanup := func(key string, start, current uint64) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCleanup(ctx, &kvrpcpb.CleanupRequest{Context: rc(2), Key: []byte(key), StartVersion: start, CurrentTs: current})
		}
	}
	run(t, []step{
		{"alive", status("a", t0, ms(2000), false),
			`lock_ttl:3000 lock_info:<primary_lock:"a" lock_version:262144000 key:"a" lock_ttl:3000 txn_size:2 min_commit_ts:262144001 >`},
		{"asked of a secondary", status("b", t0, ms(2000), false),
			`error:<primary_mismatch:<lock_info:<primary_lock:"a" lock_version:262144000 key:"b" lock_ttl:3000 txn_size:2 min_commit_ts:262144001 > > >`},
		{"heartbeat", heartbeat("a", t0, 10000), `lock_ttl:10000`},
		{"a heartbeat never shortens", heartbeat("a", t0, 100), `lock_ttl:10000`},
		{"heartbeat of another txn", heartbeat("a", t0+5, 100), `error:<txn_not_found:<start_ts:262144005 primary_key:"a" > >`},
		{"alive for longer", status("a", t0, ms(5000), false),
			`lock_ttl:10000 lock_info:<primary_lock:"a" lock_version:262144000 key:"a" lock_ttl:10000 txn_size:2 min_commit_ts:262144001 >`},
		{"expired: rolled back", status("a", t0, ms(11000), false), `action:TTLExpireRollback`},
		{"rolled back", status("a", t0, ms(11000), false), ``},
		{"no trace", status("l", t0, ms(11000), false), `error:<txn_not_found:<start_ts:262144000 primary_key:"l" > >`},
		{"no trace, rollback if not exist", status("l", t0, ms(11000), true), `action:LockNotExistRollback`},
		{"the secondary's lock is left for a resolver", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{Context: rc(2), MaxVersion: t0})
		}, `locks:<primary_lock:"a" lock_version:262144000 key:"b" lock_ttl:3000 txn_size:2 min_commit_ts:262144001 >`},
		{"cleanup of a live lock", cleanup("b", t0, ms(2000)),
			`error:<locked:<primary_lock:"a" lock_version:262144000 key:"b" lock_ttl:3000 txn_size:2 min_commit_ts:262144001 > >`},
		{"cleanup of an expired lock", cleanup("b", t0, ms(5000)), ``},
	})
	commit(t, c, 2, ms(20000), ms(20001), put("c", "1"))
	run(t, []step{
		{"committed", status("c", ms(20000), ms(30000), false), `commit_version:5243142144`},
		{"cleanup of a committed txn", cleanup("c", ms(20000), 0), `commit_version:5243142144`},
	})

	// Secondary locks, as the resolver of an async-commit txn checks them.
	ok(t, failed(c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("c1", "1"), put("c2", "1")},
		PrimaryLock: []byte("c1"), StartVersion: 50, LockTtl: 3000})))
	secondaries := func(start uint64, ks ...string) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCheckSecondaryLocks(ctx, &kvrpcpb.CheckSecondaryLocksRequest{Context: rc(2), Keys: keys(ks...), StartVersion: start})
		}
	}
	run(t, []step{
		{"all locked", secondaries(50, "c1", "c2"),
			`locks:<primary_lock:"c1" lock_version:50 key:"c1" lock_ttl:3000 txn_size:2 > locks:<primary_lock:"c1" lock_version:50 key:"c2" lock_ttl:3000 txn_size:2 >`},
		{"commit s1", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: 50, Keys: keys("c1"), CommitVersion: 51})
		}, `commit_version:51`},
		{"one committed", secondaries(50, "c2", "c1"), `commit_ts:51`},
		{"a key without a trace", secondaries(60, "c3"), ``},
		{"which can no longer be prewritten", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("c3", "1")},
				PrimaryLock: []byte("c3"), StartVersion: 60, LockTtl: 3000})
		}, `errors:<retryable:"mvcc: txn 60 was rolled back on key \"c3\"" conflict:<start_ts:60 conflict_ts:60 key:"c3" primary:"c3" conflict_commit_ts:60 reason:SelfRolledBack > >`},
	})
}

func TestServiceResolveLock(t *testing.T) {
	c, _ := startService(t, newTestRegions(t), time.Second)
	ctx := context.Background()
	// A big transaction: 300 locks in region 2 (more than one resolve
	// batch), one in region 4.
	var muts []*kvrpcpb.Mutation
	for i := range 300 {
		muts = append(muts, put(fmt.Sprintf("a%03d", i), "v"))
	}
	ok(t, failed(c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: muts, PrimaryLock: []byte("a000"),
		StartVersion: 10, LockTtl: 3000, TxnSize: 301})))
	ok(t, failed(c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(4), Mutations: []*kvrpcpb.Mutation{put("n", "v")},
		PrimaryLock: []byte("a000"), StartVersion: 10, LockTtl: 3000, TxnSize: 301})))
	// Two small ones, and one of another txn in the way.
	ok(t, failed(c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("b1", "v")},
		PrimaryLock: []byte("b1"), StartVersion: 30, LockTtl: 3000})))
	ok(t, failed(c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("b2", "v"), put("b3", "v")},
		PrimaryLock: []byte("b2"), StartVersion: 31, LockTtl: 3000})))
	resolve := func(req *kvrpcpb.ResolveLockRequest) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) { return c.KvResolveLock(ctx, req) }
	}
	scanLock := func(region uint64, maxTS uint64, limit uint32) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			start := map[uint64][]byte{2: nil, 4: []byte("m")}[region]
			resp, err := c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{Context: rc(region), StartKey: start, MaxVersion: maxTS, Limit: limit})
			if len(resp.GetLocks()) > 3 {
				n := len(resp.Locks)
				resp.Locks = resp.Locks[:3]
				resp.Locks[2] = &kvrpcpb.LockInfo{Key: []byte(fmt.Sprintf("... %d in all", n))}
			}
			return resp, err
		}
	}
	scanValues := func(region uint64, ts uint64) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			start := map[uint64][]byte{2: nil, 4: []byte("m")}[region]
			resp, err := c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(region), StartKey: start, Version: ts, Limit: 1000, KeyOnly: true})
			if n := len(resp.GetPairs()); n > 3 {
				resp.Pairs = append(resp.Pairs[:2], &kvrpcpb.KvPair{Key: []byte(fmt.Sprintf("... %d in all", n))})
			}
			return resp, err
		}
	}
	run(t, []step{
		{"scan locks up to ts 30, at most 2", scanLock(2, 30, 2),
			`locks:<primary_lock:"a000" lock_version:10 key:"a000" lock_ttl:3000 txn_size:301 > ` +
				`locks:<primary_lock:"a000" lock_version:10 key:"a001" lock_ttl:3000 txn_size:301 >`},
		{"scan locks up to ts 30", scanLock(2, 30, 0),
			`locks:<primary_lock:"a000" lock_version:10 key:"a000" lock_ttl:3000 txn_size:301 > ` +
				`locks:<primary_lock:"a000" lock_version:10 key:"a001" lock_ttl:3000 txn_size:301 > locks:<key:"... 301 in all" >`},
		{"commit of the big txn, region-wide", resolve(&kvrpcpb.ResolveLockRequest{Context: rc(2), StartVersion: 10, CommitVersion: 20}), ``},
		{"its locks in region 2 are gone, others stay", scanLock(2, 100, 0),
			`locks:<primary_lock:"b1" lock_version:30 key:"b1" lock_ttl:3000 txn_size:1 > ` +
				`locks:<primary_lock:"b2" lock_version:31 key:"b2" lock_ttl:3000 txn_size:2 > ` +
				`locks:<primary_lock:"b2" lock_version:31 key:"b3" lock_ttl:3000 txn_size:2 >`},
		{"committed", scanValues(2, 25), `pairs:<key:"a000" > pairs:<key:"a001" > pairs:<key:"... 300 in all" >`},
		{"region 4's lock is its own", scanLock(4, 100, 0),
			`locks:<primary_lock:"a000" lock_version:10 key:"n" lock_ttl:3000 txn_size:301 >`},
		{"rollback of a key", resolve(&kvrpcpb.ResolveLockRequest{Context: rc(4), StartVersion: 10, Keys: keys("n")}), ``},
		{"rolled back", scanValues(4, 25), ``},
		{"a batch of txns, as GC resolves", resolve(&kvrpcpb.ResolveLockRequest{Context: rc(2),
			TxnInfos: []*kvrpcpb.TxnInfo{{Txn: 30, Status: 40}, {Txn: 31}}}), ``},
		{"no locks left", scanLock(2, 100, 0), ``},
		{"b1 committed, b2 and b3 rolled back", scanValues(2, 45), `pairs:<key:"a000" > pairs:<key:"a001" > pairs:<key:"... 301 in all" >`},
		{"a commit ts not above the start ts", resolve(&kvrpcpb.ResolveLockRequest{Context: rc(2), StartVersion: 10, CommitVersion: 5}),
			`error:<abort:"invalid transaction timestamps: commit ts 5 is not above start ts 10" >`},
		{"a key outside the region", resolve(&kvrpcpb.ResolveLockRequest{Context: rc(2), StartVersion: 10, Keys: keys("z")}),
			`region_error:<message:"key \"z\" is not in region 2" key_not_in_region:<key:"z" region_id:2 end_key:"m\000\000\000\000\000\000\000\370" > >`},
	})
}

func TestServiceDeleteRangeGCSplit(t *testing.T) {
	rs := newTestRegions(t)
	c, _ := startService(t, rs, time.Second)
	commit(t, c, 2, 10, 11, put("k1", "old"), put("k2", "1"), put("k3", "1"), put("l", "1"))
	commit(t, c, 2, 20, 21, put("k1", "new"))
	commit(t, c, 4, 20, 21, put("n", "1"))
	get := func(region uint64, key string, ts uint64) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{Context: rc(region), Keys: keys(key), Version: ts})
		}
	}
	deleteRange := func(region uint64, start, end string, notifyOnly bool) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvDeleteRange(ctx, &kvrpcpb.DeleteRangeRequest{Context: rc(region), StartKey: []byte(start), EndKey: []byte(end), NotifyOnly: notifyOnly})
		}
	}
	run(t, []step{
		{"old version", get(2, "k1", 15), `pairs:<key:"k1" value:"old" >`},
		{"gc", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGC(ctx, &kvrpcpb.GCRequest{Context: rc(2), SafePoint: 30})
		}, ``},
		{"old version gone", get(2, "k1", 15), ``},
		{"new version kept", get(2, "k1", 30), `pairs:<key:"k1" value:"new" >`},
		{"delete range, notify only", deleteRange(2, "k1", "k3", true), ``},
		{"nothing deleted", get(2, "k1", 30), `pairs:<key:"k1" value:"new" >`},
		{"delete range", deleteRange(2, "k1", "k3", false), ``},
		{"deleted", get(2, "k2", 30), ``},
		{"the end is kept", get(2, "k3", 30), `pairs:<key:"k3" value:"1" >`},
		{"delete to the region's end", deleteRange(2, "k3", "", false), ``},
		{"deleted up to the end", get(2, "l", 30), ``},
		{"the next region kept", get(4, "n", 30), `pairs:<key:"n" value:"1" >`},
		{"delete range past the region", deleteRange(2, "a", "z", false),
			`region_error:<message:"key \"z\" is not in region 2" key_not_in_region:<key:"z" region_id:2 end_key:"m\000\000\000\000\000\000\000\370" > >`},
		{"delete range without an end", deleteRange(4, "n", "", false), `error:"delete range: the range has no end"`},
		{"split", func(ctx context.Context) (fmt.Stringer, error) {
			return c.SplitRegion(ctx, &kvrpcpb.SplitRegionRequest{Context: rc(2), SplitKeys: keys("f")})
		}, `left:<id:100 end_key:"f\000\000\000\000\000\000\000\370" region_epoch:<conf_ver:1 version:2 > > ` +
			`right:<id:2 start_key:"f\000\000\000\000\000\000\000\370" end_key:"m\000\000\000\000\000\000\000\370" region_epoch:<conf_ver:1 version:2 > > ` +
			`regions:<id:100 end_key:"f\000\000\000\000\000\000\000\370" region_epoch:<conf_ver:1 version:2 > > ` +
			`regions:<id:2 start_key:"f\000\000\000\000\000\000\000\370" end_key:"m\000\000\000\000\000\000\000\370" region_epoch:<conf_ver:1 version:2 > >`},
		{"split at a key outside", func(ctx context.Context) (fmt.Stringer, error) {
			return c.SplitRegion(ctx, &kvrpcpb.SplitRegionRequest{Context: rc(2), SplitKey: []byte("x")})
		}, `region_error:<message:"key \"x\" is not in region 2" key_not_in_region:<key:"x" region_id:2 end_key:"m\000\000\000\000\000\000\000\370" > >`},
		{"split without a key", func(ctx context.Context) (fmt.Stringer, error) {
			return c.SplitRegion(ctx, &kvrpcpb.SplitRegionRequest{Context: rc(2)})
		}, `errors:<abort:"split region: no split key" >`},
		{"safe ts", func(ctx context.Context) (fmt.Stringer, error) {
			return c.GetStoreSafeTS(ctx, &kvrpcpb.StoreSafeTSRequest{})
		}, ``},
	})
	if !reflect.DeepEqual(rs.splits, keys("f")) {
		t.Errorf("split at %q, want the raw key f", rs.splits)
	}
}

// batchClient sends requests on one BatchCommands stream and collects the
// responses by id.
type batchClient struct {
	t      *testing.T
	stream tikvpb.Tikv_BatchCommandsClient
	mu     sync.Mutex
	got    map[uint64]*tikvpb.BatchCommandsResponse_Response
	order  []uint64
	done   chan error
}

func newBatchClient(t *testing.T, c tikvpb.TikvClient) *batchClient {
	stream, err := c.BatchCommands(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := &batchClient{t: t, stream: stream, got: map[uint64]*tikvpb.BatchCommandsResponse_Response{}, done: make(chan error, 1)}
	go func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				b.done <- err
				return
			}
			if len(msg.Responses) != len(msg.RequestIds) {
				t.Errorf("%d responses under %d ids", len(msg.Responses), len(msg.RequestIds))
			}
			b.mu.Lock()
			for i, id := range msg.RequestIds {
				b.got[id] = msg.Responses[i]
				b.order = append(b.order, id)
			}
			b.mu.Unlock()
		}
	}()
	return b
}

func (b *batchClient) send(ids []uint64, reqs ...*tikvpb.BatchCommandsRequest_Request) {
	if err := b.stream.Send(&tikvpb.BatchCommandsRequest{Requests: reqs, RequestIds: ids}); err != nil {
		b.t.Fatal(err)
	}
}

// wait returns the response to id, once it came.
func (b *batchClient) wait(id uint64) *tikvpb.BatchCommandsResponse_Response {
	b.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b.mu.Lock()
		r, ok := b.got[id]
		b.mu.Unlock()
		if ok {
			return r
		}
	}
	b.t.Fatalf("no response to request %d", id)
	return nil
}

func TestServiceBatchCommands(t *testing.T) {
	c, _ := startService(t, newTestRegions(t), 5*time.Second)
	commit(t, c, 2, 10, 11, put("a", "1"))
	ok(t, failed(c.KvPessimisticLock(context.Background(), lockReq(100, 0, "k"))))
	b := newBatchClient(t, c)

	type req = tikvpb.BatchCommandsRequest_Request
	get := &req{Cmd: &tikvpb.BatchCommandsRequest_Request_Get{Get: &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("a"), Version: 20}}}
	b.send([]uint64{1, 2, 3, 4},
		get,
		&req{Cmd: &tikvpb.BatchCommandsRequest_Request_Empty{Empty: &tikvpb.BatchCommandsEmptyRequest{TestId: 7}}},
		&req{Cmd: &tikvpb.BatchCommandsRequest_Request_RawGet{RawGet: &kvrpcpb.RawGetRequest{Context: rc(2), Key: []byte("a")}}},
		&req{})
	for id, want := range map[uint64]string{
		1: `Get:<value:"1" >`,
		2: `Empty:<test_id:7 >`,
		3: `RawGet:<error:"basalt store does not serve RawGet" >`,
		4: `Empty:<>`,
	} {
		if got := strings.TrimSpace(b.wait(id).String()); got != want {
			t.Errorf("response %d: %s, want %s", id, got, want)
		}
	}

	// A lock wait holds up nothing else on the stream: the get sent after
	// it is answered first, and the rollback that ends the wait, sent
	// after both, goes through.
	b.send([]uint64{10}, &req{Cmd: &tikvpb.BatchCommandsRequest_Request_PessimisticLock{PessimisticLock: lockReq(200, 0, "k")}})
	time.Sleep(50 * time.Millisecond)
	b.send([]uint64{11}, get)
	b.wait(11)
	b.send([]uint64{12}, &req{Cmd: &tikvpb.BatchCommandsRequest_Request_PessimisticRollback{PessimisticRollback: &kvrpcpb.PessimisticRollbackRequest{
		Context: rc(2), StartVersion: 100, ForUpdateTs: 100, Keys: keys("k")}}})
	if got := strings.TrimSpace(b.wait(10).String()); got != `PessimisticLock:<>` {
		t.Errorf("the waiting lock got %s", got)
	}
	b.mu.Lock()
	order := b.order[4:]
	b.mu.Unlock()
	if !reflect.DeepEqual(order, []uint64{11, 12, 10}) && !reflect.DeepEqual(order, []uint64{11, 10, 12}) {
		t.Errorf("responses came in the order %v; want 11 before 10", order)
	}

	// Once the client closes its side, the stream ends.
	if err := b.stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-b.done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("the stream ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the stream did not end")
	}
}

// Requests with missing or nonsensical fields get answers, never a panic:
// every method of the service, in process with a nil request and over
// gRPC with an empty one, and nonsense in a region.
func TestServiceGarbage(t *testing.T) {
	rs := newTestRegions(t)
	c, svc := startService(t, rs, 100*time.Millisecond)
	ctx := context.Background()
	calls := map[string]func(ctx context.Context, nilReq bool) (fmt.Stringer, error){
		"KvGet": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvGet(ctx, nil)
			}
			return c.KvGet(ctx, &kvrpcpb.GetRequest{})
		},
		"KvBatchGet": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvBatchGet(ctx, nil)
			}
			return c.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{})
		},
		"KvScan": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvScan(ctx, nil)
			}
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{})
		},
		"KvScanLock": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvScanLock(ctx, nil)
			}
			return c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{})
		},
		"KvPrewrite": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvPrewrite(ctx, nil)
			}
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{})
		},
		"KvCommit": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvCommit(ctx, nil)
			}
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{})
		},
		"KvPessimisticLock": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvPessimisticLock(ctx, nil)
			}
			return c.KvPessimisticLock(ctx, &kvrpcpb.PessimisticLockRequest{})
		},
		"KVPessimisticRollback": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KVPessimisticRollback(ctx, nil)
			}
			return c.KVPessimisticRollback(ctx, &kvrpcpb.PessimisticRollbackRequest{})
		},
		"KvBatchRollback": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvBatchRollback(ctx, nil)
			}
			return c.KvBatchRollback(ctx, &kvrpcpb.BatchRollbackRequest{})
		},
		"KvCleanup": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvCleanup(ctx, nil)
			}
			return c.KvCleanup(ctx, &kvrpcpb.CleanupRequest{})
		},
		"KvCheckTxnStatus": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvCheckTxnStatus(ctx, nil)
			}
			return c.KvCheckTxnStatus(ctx, &kvrpcpb.CheckTxnStatusRequest{})
		},
		"KvCheckSecondaryLocks": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvCheckSecondaryLocks(ctx, nil)
			}
			return c.KvCheckSecondaryLocks(ctx, &kvrpcpb.CheckSecondaryLocksRequest{})
		},
		"KvResolveLock": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvResolveLock(ctx, nil)
			}
			return c.KvResolveLock(ctx, &kvrpcpb.ResolveLockRequest{})
		},
		"KvTxnHeartBeat": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvTxnHeartBeat(ctx, nil)
			}
			return c.KvTxnHeartBeat(ctx, &kvrpcpb.TxnHeartBeatRequest{})
		},
		"KvDeleteRange": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvDeleteRange(ctx, nil)
			}
			return c.KvDeleteRange(ctx, &kvrpcpb.DeleteRangeRequest{})
		},
		"KvGC": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.KvGC(ctx, nil)
			}
			return c.KvGC(ctx, &kvrpcpb.GCRequest{})
		},
		"SplitRegion": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.SplitRegion(ctx, nil)
			}
			return c.SplitRegion(ctx, &kvrpcpb.SplitRegionRequest{})
		},
		"GetStoreSafeTS": func(ctx context.Context, n bool) (fmt.Stringer, error) {
			if n {
				return svc.GetStoreSafeTS(ctx, nil)
			}
			return c.GetStoreSafeTS(ctx, &kvrpcpb.StoreSafeTSRequest{})
		},
	}
	for name, call := range calls {
		for _, n := range []bool{true, false} {
			resp, err := call(ctx, n)
			if err != nil || resp == nil || reflect.ValueOf(resp).IsNil() {
				t.Errorf("%s (nil request %t): %v %v", name, n, resp, err)
			}
		}
	}

	// Every kind of batched request, with nothing inside.
	for i := range 256 {
		req := &tikvpb.BatchCommandsRequest_Request{}
		if err := req.Unmarshal(append(binary.AppendUvarint(nil, uint64(i)<<3|2), 0)); err != nil || req.Cmd == nil {
			continue // not a request kind
		}
		if resp := svc.dispatch(ctx, req); resp.GetCmd() == nil {
			t.Errorf("%T: a response without a command", req.Cmd)
		}
	}

	// Nonsense in a region.
	run(t, []step{
		{"a scan whose end is below its start", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), StartKey: []byte("k"), EndKey: []byte("b"), Limit: 10, Version: 1})
		}, ``},
		{"a reverse scan likewise", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), StartKey: []byte("b"), EndKey: []byte("k"), Limit: 10, Version: 1, Reverse: true})
		}, ``},
		{"a prewrite with empty keys", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{{}, {Op: kvrpcpb.Op_Del}}, StartVersion: 1})
		}, ``},
		{"whose lock is there (one key, the last mutation's)", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{Context: rc(2), MaxVersion: 1})
		}, `locks:<lock_version:1 txn_size:2 lock_type:Del >`},
		{"a commit of no keys", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: 1, CommitVersion: 2})
		}, `commit_version:2`},
		{"a lock of no keys", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPessimisticLock(ctx, &kvrpcpb.PessimisticLockRequest{Context: rc(2), StartVersion: 5, ReturnValues: true})
		}, ``},
	})
}

// fakeTSO is PD's timestamp service as a store's Service.TSO calls it: it
// answers ts, or fails while fail is set, and counts the calls.
type fakeTSO struct {
	ts    atomic.Uint64
	fail  atomic.Bool
	calls atomic.Int64
}

func (f *fakeTSO) get(context.Context) (uint64, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		return 0, errors.New("PD is unreachable")
	}
	return f.ts.Load(), nil
}

func asyncPrewrite(region, start uint64, primary string, secondaries []string, muts ...*kvrpcpb.Mutation) *kvrpcpb.PrewriteRequest {
	return &kvrpcpb.PrewriteRequest{Context: rc(region), Mutations: muts, PrimaryLock: []byte(primary), StartVersion: start,
		LockTtl: 3000, MinCommitTs: start + 1, UseAsyncCommit: true, Secondaries: keys(secondaries...)}
}

func onePCPrewrite(region, start uint64, muts ...*kvrpcpb.Mutation) *kvrpcpb.PrewriteRequest {
	return &kvrpcpb.PrewriteRequest{Context: rc(region), Mutations: muts, PrimaryLock: muts[0].Key, StartVersion: start,
		LockTtl: 3000, MinCommitTs: start + 1, TryOnePc: true}
}

// A region's leader syncs max ts with PD once per term before it serves
// async commit or 1PC, and refuses them until it has; two phases need
// nothing of it.
func TestServiceMaxTSSync(t *testing.T) {
	rs := newTestRegions(t)
	tso := &fakeTSO{}
	tso.fail.Store(true)
	c, svc := startService(t, rs, time.Second, func(s *Service) { s.TSO = tso.get })
	prewrite := func(req *kvrpcpb.PrewriteRequest) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) { return c.KvPrewrite(ctx, req) }
	}
	notSynced := `region_error:<message:"max ts of region 2 not synced: getting a timestamp from PD: PD is unreachable" max_timestamp_not_synced:<> >`
	run(t, []step{
		{"async commit, PD unreachable", prewrite(asyncPrewrite(2, 10, "a", nil, put("a", "1"))), notSynced},
		{"1PC, PD unreachable", prewrite(onePCPrewrite(2, 10, put("a", "1"))), notSynced},
		{"two phases go ahead", prewrite(&kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("k", "1")},
			PrimaryLock: []byte("k"), StartVersion: 10, LockTtl: 3000}), ``},
	})
	if n := tso.calls.Load(); n != 2 {
		t.Errorf("%d calls to PD, want one per async-commit or 1PC prewrite", n)
	}
	tso.fail.Store(false)
	tso.ts.Store(100)
	run(t, []step{
		{"synced: above PD's ts", prewrite(asyncPrewrite(2, 10, "a", nil, put("a", "1"))), `min_commit_ts:101`},
		{"once per term", prewrite(asyncPrewrite(2, 20, "b", nil, put("b", "1"))), `min_commit_ts:101`},
		{"and per region", prewrite(onePCPrewrite(4, 20, put("n", "1"))), `one_pc_commit_ts:101`},
	})
	if n := tso.calls.Load(); n != 4 {
		t.Errorf("%d calls to PD, want 4: one per region once PD answers", n)
	}
	// The store leads region 2 again, in a new term: others may have
	// served reads of it since.
	rs.regions[2].term.Store(2)
	tso.ts.Store(200)
	run(t, []step{
		{"a new term syncs again", prewrite(asyncPrewrite(2, 30, "c", nil, put("c", "1"))), `min_commit_ts:201`},
	})
	if st := svc.PrewriteStats(); st != (PrewriteStats{TwoPC: 1, AsyncCommit: 3, OnePC: 1, NotSynced: 2}) {
		t.Errorf("stats %+v", st)
	}
}

// The responses of async commit and 1PC, and the commands that resolve
// async-commit locks.
func TestServiceAsyncCommit(t *testing.T) {
	rs := newTestRegions(t)
	tso := &fakeTSO{}
	tso.ts.Store(100)
	c, svc := startService(t, rs, time.Second, func(s *Service) { s.TSO = tso.get })
	prewrite := func(req *kvrpcpb.PrewriteRequest) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) { return c.KvPrewrite(ctx, req) }
	}
	get := func(key string, ts uint64) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte(key), Version: ts})
		}
	}
	commit := func(start, commitTS uint64, ks ...string) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc(2), StartVersion: start, Keys: keys(ks...), CommitVersion: commitTS})
		}
	}
	checkSecondaries := func(start uint64, ks ...string) func(context.Context) (fmt.Stringer, error) {
		return func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCheckSecondaryLocks(ctx, &kvrpcpb.CheckSecondaryLocksRequest{Context: rc(2), StartVersion: start, Keys: keys(ks...)})
		}
	}
	scanLocks := func(ctx context.Context) (fmt.Stringer, error) {
		return c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{Context: rc(2), MaxVersion: 1000})
	}
	tooLate := asyncPrewrite(2, 30, "d", nil, put("d", "1"))
	tooLate.MaxCommitTs = 120
	onePCTooLate := onePCPrewrite(2, 60, put("i", "1"))
	onePCTooLate.MaxCommitTs = 140
	both := asyncPrewrite(2, 70, "j", []string{"k"}, put("j", "1"), put("k", "1"))
	both.TryOnePc = true
	run(t, []step{
		// The store's max ts is PD's 100 once synced, then the reads'.
		{"async commit: above max ts", prewrite(asyncPrewrite(2, 10, "a", []string{"b"}, put("a", "1"), put("b", "2"))), `min_commit_ts:101`},
		{"a read raises max ts", get("c", 150), `not_found:true`},
		{"the next commits above the read", prewrite(asyncPrewrite(2, 20, "c", nil, put("c", "3"))), `min_commit_ts:151`},
		{"a retry answers as the first prewrite did", prewrite(asyncPrewrite(2, 10, "a", []string{"b"}, put("a", "1"), put("b", "2"))), `min_commit_ts:101`},
		{"above max_commit_ts: ordinary locks, and 0", prewrite(tooLate), ``},
		{"the locks (GC's lock scan raises max ts, as TiKV's)", scanLocks,
			`locks:<primary_lock:"a" lock_version:10 key:"a" lock_ttl:3000 txn_size:2 use_async_commit:true min_commit_ts:101 secondaries:"b" > ` +
				`locks:<primary_lock:"a" lock_version:10 key:"b" lock_ttl:3000 txn_size:2 use_async_commit:true min_commit_ts:101 > ` +
				`locks:<primary_lock:"c" lock_version:20 key:"c" lock_ttl:3000 txn_size:1 use_async_commit:true min_commit_ts:151 > ` +
				`locks:<primary_lock:"d" lock_version:30 key:"d" lock_ttl:3000 txn_size:1 min_commit_ts:31 >`},
		{"a reader below the min commit ts passes the lock", get("b", 100), `not_found:true`},
		{"one above it meets it", get("b", 120),
			`error:<locked:<primary_lock:"a" lock_version:10 key:"b" lock_ttl:3000 txn_size:2 use_async_commit:true min_commit_ts:101 > >`},
		{"check-txn-status does not push it", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCheckTxnStatus(ctx, &kvrpcpb.CheckTxnStatusRequest{Context: rc(2), PrimaryKey: []byte("a"), LockTs: 10,
				CallerStartTs: 120, CurrentTs: 120, VerifyIsPrimary: true})
		}, `lock_ttl:3000 lock_info:<primary_lock:"a" lock_version:10 key:"a" lock_ttl:3000 txn_size:2 use_async_commit:true min_commit_ts:101 secondaries:"b" >`},
		{"check-secondary-locks: all locked", checkSecondaries(10, "b"),
			`locks:<primary_lock:"a" lock_version:10 key:"b" lock_ttl:3000 txn_size:2 use_async_commit:true min_commit_ts:101 >`},
		{"a commit below the min commit ts", commit(10, 100, "a", "b"),
			`error:<commit_ts_expired:<start_ts:10 attempted_commit_ts:100 key:"a" min_commit_ts:101 > >`},
		{"at it", commit(10, 101, "a", "b"), `commit_version:101`},
		{"check-secondary-locks: committed", checkSecondaries(10, "b"), `commit_ts:101`},
		{"a retry after the commit finds it", prewrite(asyncPrewrite(2, 10, "a", []string{"b"}, put("a", "1"), put("b", "2"))), `min_commit_ts:101`},
		// A transaction whose client died before prewriting its secondary:
		// the check rolls it back for good.
		{"a crashed transaction's primary", prewrite(asyncPrewrite(2, 40, "e", []string{"f"}, put("e", "1"))), `min_commit_ts:1001`},
		{"check-secondary-locks: one missing", checkSecondaries(40, "f"), ``},
		{"its late prewrite fails", prewrite(asyncPrewrite(2, 40, "e", []string{"f"}, put("f", "1"))),
			`errors:<retryable:"mvcc: txn 40 was rolled back on key \"f\"" conflict:<start_ts:40 conflict_ts:40 key:"f" primary:"e" conflict_commit_ts:40 reason:SelfRolledBack > >`},
		{"1PC: committed at once", prewrite(onePCPrewrite(2, 50, put("g", "5"), put("h", "5"))), `one_pc_commit_ts:1001`},
		{"a 1PC retry answers the commit", prewrite(onePCPrewrite(2, 50, put("g", "5"), put("h", "5"))), `one_pc_commit_ts:1001`},
		{"read at the commit ts", get("h", 1001), `value:"5"`},
		{"1PC above max_commit_ts: ordinary locks, and 0/0", prewrite(onePCTooLate), ``},
		{"1PC with async commit: one phase", prewrite(both), `one_pc_commit_ts:1002`},
		{"the locks left", scanLocks,
			`locks:<primary_lock:"c" lock_version:20 key:"c" lock_ttl:3000 txn_size:1 use_async_commit:true min_commit_ts:151 > ` +
				`locks:<primary_lock:"d" lock_version:30 key:"d" lock_ttl:3000 txn_size:1 min_commit_ts:31 > ` +
				`locks:<primary_lock:"e" lock_version:40 key:"e" lock_ttl:3000 txn_size:1 use_async_commit:true min_commit_ts:1001 secondaries:"f" > ` +
				`locks:<primary_lock:"i" lock_version:60 key:"i" lock_ttl:3000 txn_size:1 min_commit_ts:61 >`},
		// Expired, an async-commit primary is still only reported: its
		// resolver checks the secondaries.
		{"check-txn-status of an expired one", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCheckTxnStatus(ctx, &kvrpcpb.CheckTxnStatusRequest{Context: rc(2), PrimaryKey: []byte("e"), LockTs: 40,
				CurrentTs: ms(10000), RollbackIfNotExist: true, VerifyIsPrimary: true})
		}, `lock_ttl:3000 lock_info:<primary_lock:"e" lock_version:40 key:"e" lock_ttl:3000 txn_size:1 use_async_commit:true min_commit_ts:1001 secondaries:"f" >`},
		{"unless the resolver forces two phases", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvCheckTxnStatus(ctx, &kvrpcpb.CheckTxnStatusRequest{Context: rc(2), PrimaryKey: []byte("e"), LockTs: 40,
				CurrentTs: ms(10000), RollbackIfNotExist: true, VerifyIsPrimary: true, ForceSyncCommit: true})
		}, `action:TTLExpireRollback`},
	})
	if st := svc.PrewriteStats(); st != (PrewriteStats{AsyncCommit: 5, OnePC: 3, Fallback: 2}) {
		t.Errorf("stats %+v", st)
	}
}

// gatedEngine holds every write while its gate is closed, and says when
// one arrives: a write being replicated.
type gatedEngine struct {
	mvcc.Engine
	arrived chan struct{}

	mu   sync.Mutex
	gate chan struct{} // nil: open
}

func (e *gatedEngine) Write(b *mvcc.Batch, sync bool) error {
	e.mu.Lock()
	gate := e.gate
	e.mu.Unlock()
	if gate != nil {
		e.arrived <- struct{}{}
		<-gate
	}
	return e.Engine.Write(b, sync)
}

func (e *gatedEngine) hold() {
	e.mu.Lock()
	e.gate = make(chan struct{})
	e.mu.Unlock()
}

func (e *gatedEngine) release() {
	e.mu.Lock()
	close(e.gate)
	e.gate = nil
	e.mu.Unlock()
}

// A reader must not miss an async-commit or 1PC transaction in flight
// that may commit at or below its ts: the prewrite marks its keys before
// it reads max ts, the reader raises max ts before it looks, so the
// reader either made the commit ts go above its own or waits for the
// prewrite to be applied.
func TestServiceReadsWaitForCommitsInFlight(t *testing.T) {
	eng := &gatedEngine{Engine: mvcc.NewMemEngine(), arrived: make(chan struct{})}
	st, err := mvcc.NewStore(eng, mvcc.RealClock{}, mvcc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs := &testRegions{waits: st.Waits(), regions: map[uint64]*testRegion{2: {meta: &metapb.Region{Id: 2, RegionEpoch: epoch,
		Peers: []*metapb.Peer{{Id: 3, StoreId: 1}}}, st: st}}}
	c, _ := startService(t, rs, time.Second, func(s *Service) {
		s.TSO = func(context.Context) (uint64, error) { return 1, nil }
	})
	ctx := context.Background()
	type answer struct {
		resp fmt.Stringer
		err  error
	}
	inFlight := func(req *kvrpcpb.PrewriteRequest) chan answer {
		eng.hold()
		done := make(chan answer, 1)
		go func() {
			resp, err := c.KvPrewrite(ctx, req)
			done <- answer{resp, err}
		}()
		<-eng.arrived
		return done
	}
	read := func(key string, ts uint64) chan answer {
		done := make(chan answer, 1)
		go func() {
			resp, err := c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte(key), Version: ts})
			done <- answer{resp, err}
		}()
		return done
	}
	expect := func(what string, ch chan answer, want string) {
		t.Helper()
		select {
		case a := <-ch:
			if a.err != nil {
				t.Fatalf("%s: %v", what, a.err)
			}
			if got := strings.TrimSpace(a.resp.String()); got != want {
				t.Errorf("%s:\n got: %s\nwant: %s", what, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no answer", what)
		}
	}
	waits := func(what string, ch chan answer) {
		t.Helper()
		select {
		case a := <-ch:
			t.Fatalf("%s answered while the prewrite was in flight: %v %v", what, a.resp, a.err)
		case <-time.After(200 * time.Millisecond):
		}
	}

	// Max ts is 1: the prewrite chooses 11. A reader at 20 arrives while
	// it is replicated; without waiting it would read nothing, though the
	// transaction commits at 11.
	pw := inFlight(asyncPrewrite(2, 10, "a", nil, put("a", "1")))
	reader := read("a", 20)
	waits("the reader at 20", reader)
	eng.release()
	expect("the prewrite", pw, `min_commit_ts:11`)
	expect("the reader at 20", reader,
		`error:<locked:<primary_lock:"a" lock_version:10 key:"a" lock_ttl:3000 txn_size:1 use_async_commit:true min_commit_ts:11 > >`)

	// Max ts is 20 now: the next chooses 31 (above its start), and a
	// reader at 30 need not wait, nor one at 25 below the start.
	pw = inFlight(asyncPrewrite(2, 30, "b", nil, put("b", "2")))
	expect("the reader at 30", read("b", 30), `not_found:true`)
	reader = read("b", 31)
	waits("the reader at 31", reader)
	eng.release()
	expect("the prewrite", pw, `min_commit_ts:31`)
	expect("the reader at 31", reader,
		`error:<locked:<primary_lock:"b" lock_version:30 key:"b" lock_ttl:3000 txn_size:1 use_async_commit:true min_commit_ts:31 > >`)

	// A one-phase commit in flight: the reader waits and reads its value.
	pw = inFlight(onePCPrewrite(2, 40, put("c", "3")))
	reader = read("c", 45)
	waits("the reader at 45", reader)
	eng.release()
	expect("the 1PC", pw, `one_pc_commit_ts:41`)
	expect("the reader at 45", reader, `value:"3"`)

	// Two phases mark nothing: a reader goes ahead (the commit ts will
	// come from PD after the locks are written, above its ts).
	pw = inFlight(&kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("d", "4")},
		PrimaryLock: []byte("d"), StartVersion: 50, LockTtl: 3000})
	expect("the reader at 55", read("d", 55), `not_found:true`)
	eng.release()
	expect("the prewrite", pw, ``)
}

// pipelined sets pessimistic-txn.pipelined.
func pipelined(on bool) func(*Service) { return func(s *Service) { s.Pipelined = on } }

// pessimisticPrewrite is txn's prewrite of key, locked pessimistically at
// for_update_ts txn.
func pessimisticPrewrite(txn uint64, key string) *kvrpcpb.PrewriteRequest {
	return &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put(key, "v")}, PrimaryLock: []byte(key),
		StartVersion: txn, ForUpdateTs: txn, LockTtl: 3000,
		PessimisticActions: []kvrpcpb.PrewriteRequest_PessimisticAction{kvrpcpb.PrewriteRequest_DO_PESSIMISTIC_CHECK}}
}

// Pipelined, a pessimistic lock is answered once raft has accepted its
// write, before it applies; the transaction's prewrite still finds the
// lock, waiting for the write to apply. A request that waits for another
// transaction's lock after a first batch is answered only with its last.
// If the write is lost, the prewrite fails. Not pipelined, the answer
// waits for the write to apply.
func TestServicePipelinedPessimisticLock(t *testing.T) {
	rs, eng := oneHookedRegion(t)
	c, _ := startService(t, rs, 5*time.Second, pipelined(true))
	ctx := context.Background()
	lock := func(req *kvrpcpb.PessimisticLockRequest) chan answer {
		return async(func() (fmt.Stringer, error) {
			resp, err := c.KvPessimisticLock(ctx, req)
			eng.record("answered")
			return resp, err
		})
	}

	hold := eng.holdWrites()
	locked := lock(lockReq(10, 0, "k"))
	eng.await(t, "the lock's write")
	expectAnswer(t, "the lock, its write held", locked, ``)
	prewritten := async(func() (fmt.Stringer, error) { return c.KvPrewrite(ctx, pessimisticPrewrite(10, "k")) })
	time.Sleep(50 * time.Millisecond) // the prewrite waits for the lock's latch, or fails at once without it
	eng.openWrites()
	close(hold)
	expectAnswer(t, "the prewrite after the lock applied", prewritten, ``)
	if got := eng.log(); got != "answered, applied, applied" {
		t.Errorf("events: %s; want the lock answered before it applied, then the prewrite", got)
	}

	// Txn 30 locks x, then waits for txn 20's lock on y: no answer for
	// the first batch; the second, once txn 20 lets y go, is answered
	// when proposed.
	ok(t, failed(c.KvPessimisticLock(ctx, lockReq(20, 0, "y"))))
	first := eng.holdWrites()
	waiting := lock(lockReq(30, 5000, "x", "y"))
	eng.await(t, "txn 30's lock of x")
	second := eng.holdWrites()
	close(first)
	waitFor(t, rs.waits, 30, 20)
	time.Sleep(50 * time.Millisecond)
	select {
	case a := <-waiting:
		t.Fatalf("answered %v %v after the first batch, before the wait", a.resp, a.err)
	default:
	}
	rolledBack := async(func() (fmt.Stringer, error) {
		return c.KVPessimisticRollback(ctx, &kvrpcpb.PessimisticRollbackRequest{Context: rc(2), StartVersion: 20, ForUpdateTs: 20, Keys: keys("y")})
	})
	eng.await(t, "txn 20's rollback")
	third := eng.holdWrites()
	close(second)
	expectAnswer(t, "the rollback", rolledBack, ``)
	eng.await(t, "txn 30's lock of y")
	expectAnswer(t, "txn 30's locks, the last batch held", waiting, ``)
	eng.openWrites()
	close(third)

	// A lock answered, then lost with the leadership: the prewrite fails
	// instead of committing without it.
	hold = eng.holdWrites()
	locked = lock(lockReq(40, 0, "z"))
	eng.await(t, "the lock's write")
	expectAnswer(t, "the lock to be lost", locked, ``)
	eng.mu.Lock()
	eng.fail = true
	eng.mu.Unlock()
	eng.openWrites()
	close(hold)
	run(t, []step{
		{"the prewrite without its lock", func(ctx context.Context) (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, pessimisticPrewrite(40, "z"))
		}, `errors:<abort:"mvcc: pessimistic lock not found: key \"z\", txn 40" >`},
	})

	// Not pipelined: answered once applied.
	rs, eng = oneHookedRegion(t)
	c, _ = startService(t, rs, 5*time.Second, pipelined(false))
	hold = eng.holdWrites()
	locked = lock(lockReq(50, 0, "k"))
	eng.await(t, "the lock's write")
	time.Sleep(50 * time.Millisecond) // time to answer, wrongly
	eng.openWrites()
	close(hold)
	expectAnswer(t, "the lock, not pipelined", locked, ``)
	if got := eng.log(); got != "applied, answered" {
		t.Errorf("events: %s; want the lock answered after it applied", got)
	}
}

// A request whose context names another cluster is refused as TiKV
// refuses it: gRPC's InvalidArgument for a unary call, and the end of the
// stream for a batched one. A context without a cluster ID passes.
func TestServiceClusterID(t *testing.T) {
	c, _ := startService(t, newTestRegions(t), time.Second, func(s *Service) { s.ClusterID = 7 })
	calls := map[string]func(context.Context, *kvrpcpb.Context) (fmt.Stringer, error){
		"KvGet": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc, Key: []byte("a")})
		},
		"KvBatchGet": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{Context: rc})
		},
		"KvScan": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc})
		},
		"KvScanLock": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvScanLock(ctx, &kvrpcpb.ScanLockRequest{Context: rc})
		},
		"KvPrewrite": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc})
		},
		"KvCommit": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvCommit(ctx, &kvrpcpb.CommitRequest{Context: rc, StartVersion: 1, CommitVersion: 2})
		},
		"KvPessimisticLock": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvPessimisticLock(ctx, &kvrpcpb.PessimisticLockRequest{Context: rc})
		},
		"KVPessimisticRollback": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KVPessimisticRollback(ctx, &kvrpcpb.PessimisticRollbackRequest{Context: rc, Keys: keys("a")})
		},
		"KvBatchRollback": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvBatchRollback(ctx, &kvrpcpb.BatchRollbackRequest{Context: rc})
		},
		"KvCleanup": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvCleanup(ctx, &kvrpcpb.CleanupRequest{Context: rc, Key: []byte("a"), StartVersion: 1})
		},
		"KvCheckTxnStatus": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvCheckTxnStatus(ctx, &kvrpcpb.CheckTxnStatusRequest{Context: rc, PrimaryKey: []byte("a"), LockTs: 1, RollbackIfNotExist: true})
		},
		"KvCheckSecondaryLocks": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvCheckSecondaryLocks(ctx, &kvrpcpb.CheckSecondaryLocksRequest{Context: rc, StartVersion: 1})
		},
		"KvResolveLock": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvResolveLock(ctx, &kvrpcpb.ResolveLockRequest{Context: rc, StartVersion: 1, Keys: keys("a")})
		},
		"KvTxnHeartBeat": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvTxnHeartBeat(ctx, &kvrpcpb.TxnHeartBeatRequest{Context: rc, PrimaryLock: []byte("a"), StartVersion: 1})
		},
		"KvDeleteRange": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvDeleteRange(ctx, &kvrpcpb.DeleteRangeRequest{Context: rc, NotifyOnly: true, StartKey: []byte("a"), EndKey: []byte("b")})
		},
		"KvGC": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.KvGC(ctx, &kvrpcpb.GCRequest{Context: rc})
		},
		"SplitRegion": func(ctx context.Context, rc *kvrpcpb.Context) (fmt.Stringer, error) {
			return c.SplitRegion(ctx, &kvrpcpb.SplitRegionRequest{Context: rc, SplitKey: []byte("b")})
		},
	}
	ctx := context.Background()
	for name, call := range calls {
		for _, id := range []uint64{0, 7, 8} {
			rctx := rc(2)
			rctx.ClusterId = id
			resp, err := call(ctx, rctx)
			switch {
			case id != 8 && (err != nil || strings.Contains(resp.String(), "region_error")):
				t.Errorf("%s, cluster %d: %v %v; want an answer", name, id, resp, err)
			case id == 8 && (status.Code(err) != codes.InvalidArgument ||
				status.Convert(err).Message() != "the cluster id of the request does not match the TiKV cluster"):
				t.Errorf("%s, cluster 8: %v %v; want TiKV's InvalidArgument", name, resp, err)
			}
		}
	}

	// On the stream: the requests without an ID and with this cluster's
	// are answered; one naming another cluster ends the stream.
	b := newBatchClient(t, c)
	get := func(cluster uint64) *tikvpb.BatchCommandsRequest_Request {
		rctx := rc(2)
		rctx.ClusterId = cluster
		return &tikvpb.BatchCommandsRequest_Request{Cmd: &tikvpb.BatchCommandsRequest_Request_Get{Get: &kvrpcpb.GetRequest{Context: rctx, Key: []byte("a")}}}
	}
	b.send([]uint64{1, 2}, get(0), get(7))
	b.wait(1)
	b.wait(2)
	b.send([]uint64{3}, get(8))
	select {
	case err := <-b.done:
		if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != "cluster of request=8 does not match TiKV cluster id=7" {
			t.Errorf("the stream ended with %v; want TiKV's InvalidArgument", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the stream goes on after a request of another cluster")
	}
}

// What a read answers is counted for PD's heartbeats (Region.RecordRead):
// the keys and values of the pairs found, not the keys absent or locked.
func TestServiceReadFlow(t *testing.T) {
	rs := newTestRegions(t)
	c, _ := startService(t, rs, time.Second)
	ctx := context.Background()
	commit(t, c, 2, 10, 11, put("a", "1"), put("b", "22"))
	ok(t, failed(c.KvPrewrite(ctx, &kvrpcpb.PrewriteRequest{Context: rc(2), Mutations: []*kvrpcpb.Mutation{put("c", "3")},
		PrimaryLock: []byte("c"), StartVersion: 30, LockTtl: 3000})))
	reg := rs.regions[2]
	expect := func(what string, bytes, keys uint64) {
		t.Helper()
		if b, k := reg.bytesRead.Swap(0), reg.keysRead.Swap(0); b != bytes || k != keys {
			t.Errorf("%s: counted %d bytes, %d keys; want %d, %d", what, b, k, bytes, keys)
		}
	}
	ok(t, failed(c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("a"), Version: 20})))
	expect("a get", 2, 1)
	ok(t, failed(c.KvGet(ctx, &kvrpcpb.GetRequest{Context: rc(2), Key: []byte("e"), Version: 20})))
	expect("a get of an absent key", 0, 0)
	if _, err := c.KvBatchGet(ctx, &kvrpcpb.BatchGetRequest{Context: rc(2), Keys: keys("a", "b", "c", "d"), Version: 40}); err != nil {
		t.Fatal(err)
	}
	expect("a batch get with a lock in the way", 5, 2)
	ok(t, failed(c.KvScan(ctx, &kvrpcpb.ScanRequest{Context: rc(2), Limit: 10, Version: 20, KeyOnly: true})))
	expect("a key-only scan", 2, 2)
}
