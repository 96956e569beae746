package storenode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
)

// TestServiceBatchGetsInline: on the BatchCommands stream, a point get
// that need not wait is answered by the stream's receiving goroutine, not
// handed to a worker; one that must wait (a 1PC commit in flight on its
// key that may land below its ts, a region whose read index must be asked
// for) goes to a worker, and holds up neither the stream nor the gets
// after it. With more than one processor only the last request of a
// message is answered on the receiving goroutine.
func TestServiceBatchGetsInline(t *testing.T) {
	eng := &gatedEngine{Engine: mvcc.NewMemEngine(), arrived: make(chan struct{})}
	st, err := mvcc.NewStore(eng, mvcc.RealClock{}, mvcc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	meta := func(id uint64) *metapb.Region {
		return &metapb.Region{Id: id, RegionEpoch: epoch, Peers: []*metapb.Peer{{Id: id + 1, StoreId: 1}}}
	}
	rs := &testRegions{waits: st.Waits(), regions: map[uint64]*testRegion{
		2:  {meta: meta(2), st: st},
		10: {meta: meta(10), st: st, loseEverySecond: true}, // its reads ask for a read index
	}}
	c, svc := startService(t, rs, time.Second, func(s *Service) {
		s.TSO = func(context.Context) (uint64, error) { return 1, nil }
	})
	commit(t, c, 2, 10, 11, put("a", "1"))

	type req = tikvpb.BatchCommandsRequest_Request
	get := func(region uint64, key string, ts uint64) *req {
		return &req{Cmd: &tikvpb.BatchCommandsRequest_Request_Get{Get: &kvrpcpb.GetRequest{Context: rc(region), Key: []byte(key), Version: ts}}}
	}
	b := newBatchClient(t, c)
	answer := func(id uint64, want string) {
		t.Helper()
		if got := strings.TrimSpace(b.wait(id).String()); got != want {
			t.Errorf("response %d: %s, want %s", id, got, want)
		}
	}
	handoffs := func(want uint64) {
		t.Helper()
		if got := svc.handoffs.Load(); got != want {
			t.Errorf("%d requests handed to a worker, want %d", got, want)
		}
	}

	// With one processor both gets of a message are answered here.
	procs := 1
	defer func(f func() int) { gomaxprocs = f }(gomaxprocs)
	gomaxprocs = func() int { return procs }
	b.send([]uint64{1, 2}, get(2, "a", 20), get(2, "zz", 20))
	answer(1, `Get:<value:"1" >`)
	answer(2, `Get:<not_found:true >`)
	handoffs(0)
	// With more, only the last: the others go to workers, to run
	// meanwhile.
	procs = 2
	b.send([]uint64{101, 102, 103}, get(2, "a", 20), get(2, "zz", 20), get(2, "a", 20))
	answer(101, `Get:<value:"1" >`)
	answer(102, `Get:<not_found:true >`)
	answer(103, `Get:<value:"1" >`)
	handoffs(2)
	svc.handoffs.Store(0)
	procs = 1

	// A 1PC commit of "c" in flight: a get of "c" above its ts waits for it
	// on a worker, while the get of "a" sent after it is answered here.
	eng.hold()
	pw := make(chan error, 1)
	go func() {
		_, err := c.KvPrewrite(context.Background(), onePCPrewrite(2, 40, put("c", "3")))
		pw <- err
	}()
	<-eng.arrived
	b.send([]uint64{3}, get(2, "c", 45))
	b.send([]uint64{4}, get(2, "a", 45))
	answer(4, `Get:<value:"1" >`)
	handoffs(1)
	b.mu.Lock()
	_, early := b.got[3]
	b.mu.Unlock()
	if early {
		t.Error("the get of c was answered while the commit it waits for was in flight")
	}
	eng.release()
	if err := <-pw; err != nil {
		t.Fatal(err)
	}
	answer(3, `Get:<value:"3" >`)

	// A region whose reads ask for a read index: to a worker.
	b.send([]uint64{5}, get(10, "a", 45))
	b.wait(5)
	handoffs(2)
}
