package gcworker

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
	"github.com/basalt-db/basalt/tso"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fakeStore is the cluster's storage as GC sees it: a clock, this node's
// oldest transaction, PD's GC safe point and the other services' minimum.
type fakeStore struct {
	mu       sync.Mutex
	now      uint64
	minStart uint64
	gcSP     uint64
	service  uint64 // the other services' minimum safe point, 0 if none
	resolved []uint64
}

func (f *fakeStore) CurrentTS() (uint64, error) { f.mu.Lock(); defer f.mu.Unlock(); return f.now, nil }
func (f *fakeStore) MinStartTS() uint64         { f.mu.Lock(); defer f.mu.Unlock(); return f.minStart }

func (f *fakeStore) ResolveLocks(_ context.Context, sp uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolved = append(f.resolved, sp)
	return nil
}

func (f *fakeStore) GCSafePoint(context.Context) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gcSP, nil
}

func (f *fakeStore) UpdateGCSafePoint(_ context.Context, sp uint64) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gcSP = max(f.gcSP, sp)
	return f.gcSP, nil
}

func (f *fakeStore) BoundBySafePoints(_ context.Context, sp uint64) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.service != 0 && f.service < sp {
		return f.service, nil
	}
	return sp, nil
}

// The safe point is now − life time, below every node's oldest
// transaction and the other services' safe points; it never goes back,
// and GC does nothing while disabled.
func TestRunOnceSafePoint(t *testing.T) {
	cli := testkit.StartEtcdClient(t)
	ctx := context.Background()
	const nowMs = 1_800_000_000_000
	st := &fakeStore{now: tso.ComposeTS(nowMs, 5)}
	set := Settings{Enable: true, LifeTime: 10 * time.Second, RunInterval: time.Hour}
	var recorded []State
	w := &Worker{cfg: Config{Client: cli, ID: "me", Store: st, Logger: slog.Default(),
		Settings: func() Settings { return set },
		Record:   func(_ context.Context, s State) error { recorded = append(recorded, s); return nil }}}
	run := func(want uint64) {
		t.Helper()
		if err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if st.gcSP != want {
			t.Fatalf("safe point %d (%d ms), want %d (%d ms)", st.gcSP, tso.PhysicalMs(st.gcSP), want, tso.PhysicalMs(want))
		}
		if r := recorded[len(recorded)-1]; r.SafePoint != want || r.LeaderID != "me" || r.Settings != set {
			t.Fatalf("recorded %+v", r)
		}
	}
	report := func(node string, ts uint64) {
		t.Helper()
		if _, err := cli.Put(ctx, MinStartTSPrefix+node, strconv.FormatUint(ts, 10)); err != nil {
			t.Fatal(err)
		}
	}

	// No transaction anywhere: the life time alone.
	run(tso.ComposeTS(nowMs-10_000, 0))
	if !slices.Equal(st.resolved, []uint64{tso.ComposeTS(nowMs-10_000, 0)}) {
		t.Fatalf("resolved locks below %v", st.resolved)
	}
	// This node's oldest transaction, and another node's younger one,
	// both older than now − life time: the older holds it below its
	// start; a node reporting none (0) does not count.
	st.now = tso.ComposeTS(nowMs+60_000, 0)
	st.minStart = tso.ComposeTS(nowMs+15_000, 0)
	report("other", tso.ComposeTS(nowMs+20_000, 3))
	report("idle", 0)
	run(tso.ComposeTS(nowMs+15_000, 0) - 1)
	// This node's ended: the other node's holds it.
	st.minStart = 0
	run(tso.ComposeTS(nowMs+20_000, 3) - 1)
	// A service (a backup) holds it lower: the safe point stays (it never
	// goes back), and no lock is resolved again.
	st.service = tso.ComposeTS(nowMs+1_000, 0)
	n := len(st.resolved)
	run(tso.ComposeTS(nowMs+20_000, 3) - 1)
	if len(st.resolved) != n {
		t.Fatalf("locks resolved again below a safe point that did not move: %v", st.resolved)
	}
	// Disabled: nothing moves, though every report is gone.
	st.service = 0
	if _, err := cli.Delete(ctx, MinStartTSPrefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	set.Enable = false
	run(tso.ComposeTS(nowMs+20_000, 3) - 1)
	set.Enable = true
	run(tso.ComposeTS(nowMs+50_000, 0))
}

// Of two workers one leads; closed, the other takes over. Each reports
// its oldest transaction under its lease, gone once it closes.
func TestLeaderElection(t *testing.T) {
	cli := testkit.StartEtcdClient(t)
	ctx := context.Background()
	start := func(id string, st *fakeStore) *Worker {
		return Start(Config{Client: cli, ID: id, TTL: 2 * time.Second, Store: st, Logger: slog.Default(),
			Settings: func() Settings { return Settings{Enable: true, LifeTime: time.Second, RunInterval: time.Hour} }})
	}
	stA := &fakeStore{now: tso.ComposeTS(1_800_000_000_000, 0), minStart: 77}
	stB := &fakeStore{now: tso.ComposeTS(1_800_000_000_000, 0)}
	a, b := start("a", stA), start("b", stB)
	defer b.Close()
	var leader, other *Worker
	waitFor(t, 5*time.Second, "one leader", func() bool {
		switch {
		case a.IsLeader() && b.IsLeader():
			t.Fatal("two leaders")
		case a.IsLeader():
			leader, other = a, b
		case b.IsLeader():
			leader, other = b, a
		}
		return leader != nil
	})
	waitFor(t, 5*time.Second, "a's report", func() bool {
		resp, err := cli.Get(ctx, MinStartTSPrefix+"a")
		return err == nil && len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == "77"
	})
	for range 10 {
		time.Sleep(50 * time.Millisecond)
		if other.IsLeader() || !leader.IsLeader() {
			t.Fatal("leadership moved with both workers up")
		}
	}
	leader.Close()
	waitFor(t, 5*time.Second, "the other to take over", other.IsLeader)
	if leader == a {
		resp, err := cli.Get(ctx, MinStartTSPrefix+"a")
		if err != nil || len(resp.Kvs) != 0 {
			t.Fatalf("a's report after it closed: %v, %v", resp.Kvs, err)
		}
	} else {
		a.Close()
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
	}
}
