package schemasync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/testkit"
)

// These tests run two "nodes" in one process: two catalogs over one
// embedded store, each with its Syncer, on an embedded etcd. The tests of
// real processes are in cluster_test.go.

const testLease = 2 * time.Second // etcd's shortest TTL with its default ticks

// node is one SQL node of the test: a catalog and its syncer, with the
// oldest version in use set by the test (MaxInt64: none).
type node struct {
	cat   *catalog.Catalog
	sync  *Syncer
	inUse atomic.Int64
}

func startNode(t *testing.T, endpoint string, store kv.Storage) *node {
	t.Helper()
	s, err := New(Config{Endpoints: []string{endpoint}, Lease: testLease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cat, err := catalog.OpenShared(store, s)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{cat: cat, sync: s}
	n.inUse.Store(1 << 62)
	s.Start(cat, n.inUse.Load)
	waitFor(t, "the node to serve", func() bool { return s.Valid() == nil })
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func createTable(t *testing.T, n *node, name string) *catalog.TableInfo {
	t.Helper()
	var tb *catalog.TableInfo
	err := n.cat.RunDDL(context.Background(), func(m *catalog.Meta, is *catalog.InfoSchema) error {
		id, err := m.NewIDs(1)
		if err != nil {
			return err
		}
		db := is.DB(catalog.DefaultDB)
		tb = &catalog.TableInfo{ID: id, DBID: db.ID, Name: name}
		is.PutTable(db, tb)
		return m.PutTable(tb)
	})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func alterTable(t *testing.T, n *node, id int64) {
	t.Helper()
	err := n.cat.RunDDL(context.Background(), func(m *catalog.Meta, is *catalog.InfoSchema) error {
		nt := is.TableByID(id).Clone()
		nt.Comment += "x"
		is.PutTable(is.DBByID(nt.DBID), nt)
		return m.PutTable(nt)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func keysOf(ids ...int64) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for _, id := range ids {
			if !yield(tablecodec.RowKey(id, tablecodec.IntHandle(1))) {
				return
			}
		}
	}
}

func TestSyncer(t *testing.T) {
	endpoint := testkit.StartEtcd(t)
	store, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	a := startNode(t, endpoint, store)
	b := startNode(t, endpoint, store)

	// A change made on A is loaded on B when it returns.
	t1 := createTable(t, a, "t1")
	if got := b.cat.InfoSchema().TableByID(t1.ID); got == nil {
		t.Fatal("B has not loaded t1 when A's change returned")
	}

	// WaitInUse waits for B's oldest version in use: a transaction of B
	// pins the current version, A publishes the next.
	old := b.cat.InfoSchema().Version
	b.inUse.Store(old)
	createTable(t, a, "t0")
	v := a.cat.InfoSchema().Version
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err = a.sync.WaitInUse(ctx, v)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitInUse(%d) with B using version %d: %v, want a timeout", v, old, err)
	}
	done := make(chan error, 1)
	go func() { done <- a.sync.WaitInUse(context.Background(), v) }()
	time.Sleep(50 * time.Millisecond)
	b.inUse.Store(1 << 62)
	b.sync.Notify()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitInUse still waits after B's old transactions ended")
	}

	// A transaction of B under v commits while B stays registered, the
	// others having waited for it.
	t2 := createTable(t, a, "t2")
	ver := b.cat.InfoSchema().Version
	alterTable(t, a, t1.ID)
	if err := b.sync.CheckCommit(ver, 0, keysOf(t1.ID, t2.ID)); err != nil {
		t.Errorf("B's transaction under %d, B registered throughout: %v", ver, err)
	}

	// B drops out of etcd (as when its lease expires): it stops serving,
	// and A's changes no longer wait for it.
	b.sync.mu.Lock()
	lease := b.sync.lease
	b.sync.lease = 0
	b.sync.mu.Unlock()
	if _, err := b.sync.cli.Revoke(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	if err := b.sync.Valid(); !errors.Is(err, catalog.ErrSchemaOutdated) {
		t.Errorf("B unregistered: Valid = %v, want ErrSchemaOutdated", err)
	}
	if err := b.sync.CheckCommit(ver, 0, keysOf(t2.ID)); !errors.Is(err, catalog.ErrSchemaOutdated) {
		t.Errorf("B unregistered: CheckCommit = %v, want ErrSchemaOutdated", err)
	}
	alterTable(t, a, t1.ID)

	// Back (registered again, reloaded), B serves; its transaction from
	// before the gap fails if it wrote t1, which changed meanwhile, and
	// commits if it wrote t2 only (TiDB's rule).
	waitFor(t, "B to register again", func() bool { return b.sync.Valid() == nil })
	if got := b.cat.InfoSchema().Version; got != a.cat.InfoSchema().Version {
		t.Errorf("B serves version %d, A has %d", got, a.cat.InfoSchema().Version)
	}
	if err := b.sync.CheckCommit(ver, 0, keysOf(t2.ID, t1.ID)); !errors.Is(err, catalog.ErrSchemaChanged) {
		t.Errorf("B's transaction that wrote t1 across the gap: %v, want ErrSchemaChanged", err)
	}
	if err := b.sync.CheckCommit(ver, 0, keysOf(t2.ID)); err != nil {
		t.Errorf("B's transaction that wrote only t2 across the gap: %v", err)
	}
	if err := b.sync.CheckCommit(b.cat.InfoSchema().Version, 0, keysOf(t1.ID)); err != nil {
		t.Errorf("B's transaction under the new version: %v", err)
	}
	// A commit timestamp past the lease's end is refused.
	late := uint64(time.Now().Add(time.Minute).UnixMilli()) << 18
	if err := b.sync.CheckCommit(b.cat.InfoSchema().Version, late, keysOf(t1.ID)); !errors.Is(err, catalog.ErrSchemaOutdated) {
		t.Errorf("commit a minute past now: %v, want ErrSchemaOutdated", err)
	}

	// Concurrent changes from both nodes are serialized.
	errs := make(chan error, 2)
	for _, n := range []*node{a, b} {
		go func() {
			var err error
			for range 5 {
				if err = n.cat.RunDDL(context.Background(), func(m *catalog.Meta, is *catalog.InfoSchema) error {
					nt := is.TableByID(t2.ID).Clone()
					nt.Comment += "y"
					is.PutTable(is.DBByID(nt.DBID), nt)
					return m.PutTable(nt)
				}); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for name, n := range map[string]*node{"A": a, "B": b} {
		if got := n.cat.InfoSchema().TableByID(t2.ID).Comment; got != "yyyyyyyyyy" {
			t.Errorf("%s: t2's comment is %q after 10 changes from two nodes", name, got)
		}
	}
}
