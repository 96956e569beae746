package storenode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/pd"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"github.com/pingcap/log"
	"github.com/tikv/client-go/v2/config"
	tikverr "github.com/tikv/client-go/v2/error"
	tikvkv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/txnkv"
	"github.com/tikv/client-go/v2/txnkv/transaction"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
)

// The real client-go against the service alone: a Basalt PD in this process
// knows one store, the service on a loopback port, and one region, every
// key, led there (region 2, peer 3). client-go finds the store through PD
// and runs its transactions on it: its region cache, the BatchCommands
// stream (by default) or unary calls, two-phase commit, async commit and
// 1PC, pessimistic locks with server-side waits, deadlock detection, and
// its lock resolver.
func TestServiceClientGo(t *testing.T) {
	log.SetLevel(zap.FatalLevel) // client-go logs every lock it resolves
	pdAddr := startPD(t)
	rs := oneRegion(t)
	pdc := newPDClient([]string{pdAddr})
	t.Cleanup(pdc.close)
	storeAddr, calls, svc := serveStore(t, rs, func(s *Service) { s.TSO = pdc.tso })
	bootstrap(t, pdAddr, storeAddr)
	raw := tikvpb.NewTikvClient(dial(t, storeAddr))

	for _, mode := range []struct {
		name         string
		maxBatchSize uint
	}{{"batch-commands", config.GetGlobalConfig().TiKVClient.MaxBatchSize}, {"unary", 0}} {
		t.Run(mode.name, func(t *testing.T) {
			defer config.UpdateGlobal(func(c *config.Config) { c.TiKVClient.MaxBatchSize = mode.maxBatchSize })()
			client, err := txnkv.NewClient([]string{pdAddr})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			e := &e2e{t: t, c: client, raw: raw, rs: rs, svc: svc, prefix: mode.name + "/"}
			before := calls.snapshot()
			t.Run("read-write", e.readWrite)
			t.Run("optimistic-conflict", e.optimisticConflict)
			t.Run("pessimistic-wait", e.pessimisticWait)
			t.Run("deadlock", e.deadlock)
			t.Run("locks-left-behind", e.locksLeftBehind)
			t.Run("live-lock-pushed", e.liveLockPushed)
			t.Run("latest-read", e.latestRead)
			t.Run("async-commit", e.asyncCommit)
			t.Run("1pc", e.onePC)
			checks := calls.snapshot()["KvCheckSecondaryLocks"]
			t.Run("async-commit-crashed", e.asyncCommitCrashed)
			if checked := calls.snapshot()["KvCheckSecondaryLocks"] - checks; mode.maxBatchSize == 0 && checked == 0 {
				t.Errorf("the crashed async-commit transactions were resolved without KvCheckSecondaryLocks")
			}
			// The client used the transport the mode says (the test's own
			// raw prewrites and commits are unary).
			after := calls.snapshot()
			streams, gets := after["BatchCommands"]-before["BatchCommands"], after["KvGet"]-before["KvGet"]
			if batched := mode.maxBatchSize > 0; batched && (streams == 0 || gets != 0) || !batched && (streams != 0 || gets == 0) {
				t.Errorf("the client opened %d BatchCommands streams and sent %d unary KvGets", streams, gets)
			}
		})
	}
}

// e2e is one client-go client on the store, and its scenarios.
type e2e struct {
	t      *testing.T
	c      *txnkv.Client
	raw    tikvpb.TikvClient
	rs     *testRegions
	svc    *Service
	prefix string
}

func (e *e2e) key(s string) []byte { return []byte(e.prefix + s) }

func (e *e2e) begin(t *testing.T, pessimistic bool) *transaction.KVTxn {
	t.Helper()
	txn, err := e.c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	txn.SetPessimistic(pessimistic)
	return txn
}

// get reads key in a new transaction; nil if it is absent.
func (e *e2e) get(t *testing.T, key []byte) []byte {
	t.Helper()
	txn := e.begin(t, false)
	defer txn.Rollback()
	v, err := txn.Get(context.Background(), key)
	if tikverr.IsErrNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return v.Value
}

func (e *e2e) ts(t *testing.T) uint64 {
	t.Helper()
	ts, err := e.c.GetTimestamp(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func (e *e2e) readWrite(t *testing.T) {
	ctx := context.Background()
	txn := e.begin(t, false)
	for i := range 10 {
		if err := txn.Set(e.key(fmt.Sprintf("k%d", i)), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	txn = e.begin(t, false)
	if v, err := txn.Get(ctx, e.key("k3")); err != nil || string(v.Value) != "3" {
		t.Fatalf("get k3: %q %v", v.Value, err)
	}
	txn.Delete(e.key("k5"))
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v := e.get(t, e.key("k5")); v != nil {
		t.Fatalf("k5 = %q after its delete", v)
	}

	txn = e.begin(t, false)
	defer txn.Rollback()
	txn.GetSnapshot().SetScanBatchSize(3) // several requests per scan
	scan := func(it interface {
		Valid() bool
		Key() []byte
		Value() []byte
		Next() error
		Close()
	}, err error) string {
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		var b bytes.Buffer
		for ; it.Valid(); it.Next() {
			fmt.Fprintf(&b, "%s=%s ", bytes.TrimPrefix(it.Key(), []byte(e.prefix)), it.Value())
		}
		return b.String()
	}
	if got, want := scan(txn.Iter(e.key("k1"), e.key("k8"))), "k1=1 k2=2 k3=3 k4=4 k6=6 k7=7 "; got != want {
		t.Errorf("scan: %s, want %s", got, want)
	}
	if got, want := scan(txn.IterReverse(e.key("k8"), e.key("k1"))), "k7=7 k6=6 k4=4 k3=3 k2=2 k1=1 "; got != want {
		t.Errorf("reverse scan: %s, want %s", got, want)
	}
}

func (e *e2e) optimisticConflict(t *testing.T) {
	ctx := context.Background()
	t1, t2 := e.begin(t, false), e.begin(t, false)
	t1.Set(e.key("x"), []byte("1"))
	t2.Set(e.key("x"), []byte("2"))
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := t2.Commit(ctx); !tikverr.IsErrWriteConflict(err) {
		t.Fatalf("the second commit: %v, want a write conflict", err)
	}
	if v := e.get(t, e.key("x")); string(v) != "1" {
		t.Fatalf("x = %q, want the first commit's", v)
	}
}

// lock takes pessimistic locks on keys for txn at forUpdateTS (0: a fresh
// one), waiting as long as it takes.
func (e *e2e) lock(t *testing.T, txn *transaction.KVTxn, forUpdateTS uint64, keys ...[]byte) error {
	if forUpdateTS == 0 {
		forUpdateTS = e.ts(t)
	}
	return txn.LockKeys(context.Background(), tikvkv.NewLockCtx(forUpdateTS, tikvkv.LockAlwaysWait, time.Now()), keys...)
}

func (e *e2e) pessimisticWait(t *testing.T) {
	ctx := context.Background()
	k := e.key("p")
	t1, t2 := e.begin(t, true), e.begin(t, true)
	if err := e.lock(t, t1, 0, k); err != nil {
		t.Fatal(err)
	}
	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	forUpdate := e.ts(t)
	go func() {
		start := time.Now()
		err := e.lock(t, t2, forUpdate, k)
		done <- result{err, time.Since(start)}
	}()
	waitFor(t, e.rs.waits, t2.StartTS(), t1.StartTS()) // parked in the store
	time.Sleep(300 * time.Millisecond)
	t1.Set(k, []byte("t1"))
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// t1 committed after t2's for-update ts: t2's statement must retry.
	r := <-done
	if !tikverr.IsErrWriteConflict(r.err) || r.took < 300*time.Millisecond {
		t.Fatalf("the waiter got %v after %v; want a write conflict once t1 committed, after 300ms", r.err, r.took)
	}
	if err := e.lock(t, t2, 0, k); err != nil {
		t.Fatal(err)
	}
	t2.Set(k, []byte("t2"))
	if err := t2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v := e.get(t, k); string(v) != "t2" {
		t.Fatalf("p = %q, want t2", v)
	}
}

func (e *e2e) deadlock(t *testing.T) {
	ctx := context.Background()
	a, b := e.key("a"), e.key("b")
	t1, t2 := e.begin(t, true), e.begin(t, true)
	if err := e.lock(t, t1, 0, a); err != nil {
		t.Fatal(err)
	}
	if err := e.lock(t, t2, 0, b); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	forUpdate := e.ts(t)
	go func() { done <- e.lock(t, t1, forUpdate, b) }()
	waitFor(t, e.rs.waits, t1.StartTS(), t2.StartTS())
	var dl *tikverr.ErrDeadlock
	if err := e.lock(t, t2, 0, a); !errors.As(err, &dl) {
		t.Fatalf("t2 waiting for t1: %v, want a deadlock", err)
	}
	if dl.LockTs != t1.StartTS() || !bytes.Equal(dl.LockKey, a) {
		t.Errorf("deadlock on %q held by %d, want %q held by t1 (%d)", dl.LockKey, dl.LockTs, a, t1.StartTS())
	}
	if err := t2.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("t1, once t2 rolled back: %v", err)
	}
	t1.Set(a, []byte("t1"))
	t1.Set(b, []byte("t1"))
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// prewrite locks keys, the first the primary, in a transaction of its own
// that client-go does not know of, as a client that crashed would leave
// them.
func (e *e2e) prewrite(t *testing.T, startTS, ttl, txnSize uint64, keys ...[]byte) {
	t.Helper()
	req := &kvrpcpb.PrewriteRequest{Context: regionCtx(), PrimaryLock: keys[0], StartVersion: startTS,
		LockTtl: ttl, MinCommitTs: startTS + 1, TxnSize: txnSize}
	for _, k := range keys {
		req.Mutations = append(req.Mutations, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: k, Value: []byte("v")})
	}
	ok(t, failed(e.raw.KvPrewrite(context.Background(), req)))
}

func (e *e2e) commitRaw(t *testing.T, startTS uint64, keys ...[]byte) {
	t.Helper()
	ok(t, failed(e.raw.KvCommit(context.Background(), &kvrpcpb.CommitRequest{Context: regionCtx(),
		StartVersion: startTS, Keys: keys, CommitVersion: e.ts(t)})))
}

func (e *e2e) locksLeft(t *testing.T) []*kvrpcpb.LockInfo {
	t.Helper()
	resp, err := e.raw.KvScanLock(context.Background(), &kvrpcpb.ScanLockRequest{Context: regionCtx(),
		StartKey: []byte(e.prefix), EndKey: []byte(e.prefix + "\xff"), MaxVersion: e.ts(t)})
	if err := failed(resp, err); err != nil {
		t.Fatal(err)
	}
	return resp.Locks
}

func (e *e2e) locksLeftBehind(t *testing.T) {
	ctx := context.Background()
	// A prewrite whose client died: a reader passes it (it pushes the
	// transaction's commit above its own start); a writer, once the TTL
	// has run out, rolls it back.
	orphan := e.key("orphan")
	e.prewrite(t, e.ts(t), 100, 1, orphan)
	if v := e.get(t, orphan); v != nil {
		t.Errorf("orphan = %q before any commit", v)
	}
	txn := e.begin(t, false)
	txn.Set(orphan, []byte("new"))
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v := e.get(t, orphan); string(v) != "new" {
		t.Errorf("orphan = %q, want the writer's", v)
	}
	// A transaction whose client died after committing its primary: a
	// reader commits the secondary.
	p, s := e.key("p2"), e.key("s2")
	start := e.ts(t)
	e.prewrite(t, start, 60000, 2, p, s)
	e.commitRaw(t, start, p)
	if v := e.get(t, s); string(v) != "v" {
		t.Errorf("s2 = %q, want the committed v", v)
	}
	// A big one (client-go resolves its locks region by region): a scan
	// reads it committed.
	var keys [][]byte
	for i := range 20 {
		keys = append(keys, e.key(fmt.Sprintf("big%02d", i)))
	}
	start = e.ts(t)
	e.prewrite(t, start, 60000, uint64(len(keys)), keys...)
	e.commitRaw(t, start, keys[0])
	txn = e.begin(t, false)
	it, err := txn.Iter(e.key("big"), e.key("bih"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; it.Valid(); it.Next() {
		n++
	}
	it.Close()
	txn.Rollback()
	if n != len(keys) {
		t.Errorf("the scan saw %d keys of the big transaction, want %d", n, len(keys))
	}
	// And no lock is left (reads resolve in the background).
	for deadline := time.Now().Add(10 * time.Second); len(e.locksLeft(t)) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("locks left: %v", e.locksLeft(t))
		}
	}
}

func (e *e2e) liveLockPushed(t *testing.T) {
	// A transaction in the middle of its commit, alive for a minute: a
	// reader does not wait for it, but pushes its commit above its own
	// start and reads past its lock.
	k := e.key("live")
	start := e.ts(t)
	e.prewrite(t, start, 60000, 1, k)
	began := time.Now()
	if v := e.get(t, k); v != nil {
		t.Errorf("live = %q before its commit", v)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("the reader took %v: it waited for the live lock", d)
	}
	e.commitRaw(t, start, k)
	if v := e.get(t, k); string(v) != "v" {
		t.Errorf("live = %q after its commit, want v", v)
	}
}

// latestRead: reads of the newest versions (version math.MaxUint64, as a
// SQL node's autocommit point get sends them, store/tikv's LatestSnapshot)
// pass the locks of a transaction alive for a minute without waiting, on
// its primary as on a secondary, leave the store's max ts below
// math.MaxUint64 (an async commit would take its commit ts above it), and
// read the transaction's writes once its primary has committed.
func (e *e2e) latestRead(t *testing.T) {
	get := func(k []byte) []byte {
		t.Helper()
		v, err := e.c.GetSnapshot(math.MaxUint64).Get(context.Background(), k)
		if tikverr.IsErrNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return v.Value
	}
	p, s := e.key("latest-p"), e.key("latest-s")
	start := e.ts(t)
	e.prewrite(t, start, 60000, 2, p, s)
	began := time.Now()
	for _, k := range [][]byte{p, s} {
		if v := get(k); v != nil {
			t.Errorf("%s = %q before its commit", k, v)
		}
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("the reads took %v: they waited for the live locks", d)
	}
	if m := e.svc.cm.MaxTS(); m == math.MaxUint64 {
		t.Errorf("the store's max ts is %d after reads of the newest versions", m)
	}
	e.commitRaw(t, start, p)
	for _, k := range [][]byte{s, p} {
		if v := get(k); string(v) != "v" {
			t.Errorf("%s = %q after its primary's commit, want v", k, v)
		}
	}
}

// commitWith commits writes of key=value in a new transaction, set up by
// opt.
func (e *e2e) commitWith(t *testing.T, pessimistic bool, opt func(*transaction.KVTxn), kvs ...string) {
	t.Helper()
	ctx := context.Background()
	txn := e.begin(t, pessimistic)
	opt(txn)
	for i := 0; i+1 < len(kvs); i += 2 {
		if pessimistic {
			if err := e.lock(t, txn, 0, e.key(kvs[i])); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.Set(e.key(kvs[i]), []byte(kvs[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func (e *e2e) asyncCommit(t *testing.T) {
	before := e.svc.PrewriteStats()
	async := func(txn *transaction.KVTxn) { txn.SetEnableAsyncCommit(true) }
	e.commitWith(t, false, async, "ac1", "1", "ac2", "2", "ac3", "3")
	e.commitWith(t, true, async, "ac1", "10", "ac4", "4")
	// A reader right after the commit: the client commits the locks in
	// the background, and the reader meets them if it is first.
	e.commitWith(t, false, async, "ac2", "20", "ac3", "30")
	for k, want := range map[string]string{"ac1": "10", "ac2": "20", "ac3": "30", "ac4": "4"} {
		if v := e.get(t, e.key(k)); string(v) != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	after := e.svc.PrewriteStats()
	if after.AsyncCommit-before.AsyncCommit != 3 || after.Fallback != before.Fallback {
		t.Errorf("prewrites %+v, then %+v: want 3 answered with a min commit ts, none falling back", before, after)
	}
}

func (e *e2e) onePC(t *testing.T) {
	before := e.svc.PrewriteStats()
	onePC := func(txn *transaction.KVTxn) { txn.SetEnable1PC(true) }
	e.commitWith(t, false, onePC, "op1", "1", "op2", "2")
	e.commitWith(t, true, onePC, "op1", "10", "op3", "3")
	both := func(txn *transaction.KVTxn) { txn.SetEnable1PC(true); txn.SetEnableAsyncCommit(true) }
	e.commitWith(t, false, both, "op2", "20")
	for k, want := range map[string]string{"op1": "10", "op2": "20", "op3": "3"} {
		if v := e.get(t, e.key(k)); string(v) != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	after := e.svc.PrewriteStats()
	if after.OnePC-before.OnePC != 3 || after.Fallback != before.Fallback {
		t.Errorf("prewrites %+v, then %+v: want 3 committed in one phase, none falling back", before, after)
	}
	if locks := e.locksLeft(t); len(locks) > 0 {
		t.Errorf("1PC left locks: %v", locks)
	}
}

// prewriteAsync prewrites keys (the first the primary) as an async-commit
// transaction whose secondaries are the rest and missing, whose client
// then died; its locks live 20ms. It returns the min commit ts the store
// chose.
func (e *e2e) prewriteAsync(t *testing.T, startTS uint64, keys [][]byte, missing ...[]byte) uint64 {
	t.Helper()
	req := &kvrpcpb.PrewriteRequest{Context: regionCtx(), PrimaryLock: keys[0], StartVersion: startTS,
		LockTtl: 20, MinCommitTs: startTS + 1, TxnSize: uint64(len(keys) + len(missing)),
		UseAsyncCommit: true, Secondaries: append(slices.Clone(keys[1:]), missing...)}
	for _, k := range keys {
		req.Mutations = append(req.Mutations, &kvrpcpb.Mutation{Op: kvrpcpb.Op_Put, Key: k, Value: []byte("v")})
	}
	resp, err := e.raw.KvPrewrite(context.Background(), req)
	ok(t, failed(resp, err))
	if resp.MinCommitTs <= startTS {
		t.Fatalf("async-commit prewrite answered min commit ts %d, start ts %d", resp.MinCommitTs, startTS)
	}
	return resp.MinCommitTs
}

func (e *e2e) asyncCommitCrashed(t *testing.T) {
	// Every lock written: the transaction committed, and a reader that
	// finds its expired locks commits them, at their min commit ts.
	p, s1, s2 := e.key("acp"), e.key("acs1"), e.key("acs2")
	start := e.ts(t)
	minCommit := e.prewriteAsync(t, start, [][]byte{p, s1, s2})
	time.Sleep(50 * time.Millisecond) // the locks expire (client-go checks against its last ts from PD)
	for _, k := range [][]byte{s2, p, s1} {
		if v := e.get(t, k); string(v) != "v" {
			t.Errorf("%s = %q, want the committed v", k, v)
		}
	}
	resp, err := e.raw.KvCheckSecondaryLocks(context.Background(), &kvrpcpb.CheckSecondaryLocksRequest{Context: regionCtx(),
		Keys: [][]byte{s1}, StartVersion: start})
	if err := failed(resp, err); err != nil || resp.CommitTs != minCommit {
		t.Errorf("the transaction committed at %d (%v), want its min commit ts %d", resp.GetCommitTs(), err, minCommit)
	}

	// A secondary never written: the reader's check of it rolls the
	// transaction back for good.
	p, s1, s2 = e.key("acp2"), e.key("acs3"), e.key("acs4")
	start = e.ts(t)
	e.prewriteAsync(t, start, [][]byte{p, s1}, s2)
	time.Sleep(50 * time.Millisecond)
	for _, k := range [][]byte{s1, p} {
		if v := e.get(t, k); v != nil {
			t.Errorf("%s = %q, want nothing: the transaction never wrote %s", k, v, s2)
		}
	}
	late, err := e.raw.KvPrewrite(context.Background(), &kvrpcpb.PrewriteRequest{Context: regionCtx(), PrimaryLock: p,
		StartVersion: start, LockTtl: 3000, MinCommitTs: start + 1, UseAsyncCommit: true,
		Mutations: []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: s2, Value: []byte("v")}}})
	if err != nil || len(late.Errors) != 1 || late.Errors[0].GetConflict().GetReason() != kvrpcpb.WriteConflict_SelfRolledBack {
		t.Errorf("the late prewrite of %s: %v %v, want its transaction rolled back", s2, late, err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(e.locksLeft(t)) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("locks left: %v", e.locksLeft(t))
		}
	}
}

// oneRegion is a store's Regions with region 2 covering every key.
func oneRegion(t *testing.T) *testRegions {
	st, err := mvcc.NewStore(mvcc.NewMemEngine(), mvcc.RealClock{}, mvcc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &testRegions{waits: st.Waits(), regions: map[uint64]*testRegion{2: {meta: firstRegion(), st: st}}}
}

func firstRegion() *metapb.Region {
	return &metapb.Region{Id: 2, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
		Peers: []*metapb.Peer{{Id: 3, StoreId: 1}}}
}

func regionCtx() *kvrpcpb.Context {
	r := firstRegion()
	return &kvrpcpb.Context{RegionId: r.Id, RegionEpoch: r.RegionEpoch, Peer: r.Peers[0]}
}

// callCounter counts the gRPC calls a server received, by method name.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) add(fullMethod string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[path.Base(fullMethod)]++
}

func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// countingStream counts the Scan requests in BatchCommands messages as
// "BatchScan".
type countingStream struct {
	grpc.ServerStream
	calls *callCounter
}

func (s countingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if br, ok := m.(*tikvpb.BatchCommandsRequest); ok && err == nil {
		for _, r := range br.GetRequests() {
			if r.GetScan() != nil {
				s.calls.add("BatchScan")
			}
		}
	}
	return err
}

// serveStore serves the service over rs as a storage node does, with the
// keepalive policy and message sizes client-go needs, and gRPC health;
// setup sets the service up before it serves.
func serveStore(t *testing.T, rs *testRegions, setup ...func(*Service)) (string, *callCounter, *Service) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	calls := &callCounter{n: map[string]int{}}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(1<<30), grpc.MaxSendMsgSize(1<<30),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			calls.add(info.FullMethod)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			calls.add(info.FullMethod)
			return h(srv, countingStream{ss, calls})
		}))
	svc := NewService(1, rs)
	for _, f := range setup {
		f(svc)
	}
	tikvpb.RegisterTikvServer(srv, svc)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), calls, svc
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// startPD starts a one-member PD in this process and returns its client
// address once it leads.
func startPD(t testing.TB) string {
	ports := make([]int, 2)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	cfg := pd.DefaultConfig()
	cfg.Name, cfg.DataDir, cfg.LogLevel = "pd1", filepath.Join(t.TempDir(), "pd"), "error"
	cfg.ClientURLs = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	cfg.PeerURLs = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cfg.Replication.MaxReplicas = 1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	srv, err := pd.NewServer(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for deadline := time.Now().Add(30 * time.Second); !srv.IsLeader(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("PD does not lead")
		}
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}

// startNodeWithClient starts a one-member PD and one storage node in
// this process (its config from DefaultConfig, then edit, if not nil, on
// free loopback ports) and returns a client-go client of them, the
// node's config and PD's address.
func startNodeWithClient(t testing.TB, edit func(*Config)) (*txnkv.Client, Config, string) {
	log.SetLevel(zap.FatalLevel)
	pdAddr := startPD(t)
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	cfg := DefaultConfig()
	cfg.PD.Endpoints = []string{pdAddr}
	cfg.Server.Addr, cfg.Server.StatusAddr = free(), free()
	cfg.Storage.DataDir = filepath.Join(t.TempDir(), "store")
	if edit != nil {
		edit(&cfg)
	}
	n, err := Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	cli, err := txnkv.NewClient([]string{pdAddr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli, cfg, pdAddr
}

// bootstrap makes PD's cluster one store at storeAddr with one region
// led there, as a storage node's first start does.
func bootstrap(t *testing.T, pdAddr, storeAddr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := pdpb.NewPDClient(dial(t, pdAddr))
	members, err := c.GetMembers(ctx, &pdpb.GetMembersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	hdr := &pdpb.RequestHeader{ClusterId: members.GetHeader().GetClusterId()}
	store := &metapb.Store{Id: 1, Address: storeAddr, Version: StoreVersion, State: metapb.StoreState_Up}
	region := firstRegion()
	check := func(h *pdpb.ResponseHeader, err error) {
		t.Helper()
		if err == nil && h.GetError() != nil {
			err = errors.New(h.GetError().String())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	boot, err := c.Bootstrap(ctx, &pdpb.BootstrapRequest{Header: hdr, Store: store, Region: region})
	check(boot.GetHeader(), err)
	put, err := c.PutStore(ctx, &pdpb.PutStoreRequest{Header: hdr, Store: store})
	check(put.GetHeader(), err)
	hb, err := c.RegionHeartbeat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := hb.Send(&pdpb.RegionHeartbeatRequest{Header: hdr, Region: region, Leader: region.Peers[0]}); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := c.GetRegion(ctx, &pdpb.GetRegionRequest{Header: hdr, RegionKey: []byte("a")})
		check(r.GetHeader(), err)
		if r.GetLeader().GetId() == 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	hb.CloseSend()
}
