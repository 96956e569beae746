// Package schemasync keeps the schemas of the SQL nodes that share one
// cluster in step, through PD's etcd, as TiDB's DDL schema syncer and
// metadata lock do. It is used in cluster mode only (--store tikv); an
// embedded store has one node and needs none of it.
//
// The invariant is F1's (online schema change, see ddl/alter.go): at any
// time the statements and transactions of every node together use at most
// two adjacent schema versions of a table. One node alone keeps it by
// counting what runs under each version (session.Driver's pins) and
// waiting, after each step of a schema change, until nothing runs under
// an older version. Across nodes, each reports in etcd, under a lease of
// its own:
//
//	/tidb/ddl/all_schema_versions/<node>  the schema version it has loaded
//	/basalt/ddl/schema_in_use/<node>      the oldest version one of its
//	                                      statements or transactions uses
//	/tidb/ddl/global_schema_version       the newest version (no lease)
//
// (the first and last are TiDB's keys). A node that commits a schema
// change publishes its version and waits until every other registered node
// has loaded it (Published), so that a statement run on any node after
// the DDL statement returned sees the change; where ddl waits for older
// versions to drain (Waiter), it also waits until every other node's
// oldest version in use has reached it (WaitInUse). A node that dies or
// cannot reach etcd has its keys removed when its lease expires, and is no
// longer waited for: before that happens it stops serving (Valid), and a
// transaction of it that ran across the gap fails at commit
// (CheckCommit). Each node reloads the schema when the global version
// changes (a watch) and every half lease (a poll of the stored version),
// so that a lost notification costs at most half a lease.
//
// Schema changes from several nodes are serialized by an etcd mutex held
// for a DDL statement's duration (LockDDL), with the stored schema version
// as a second guard: a schema change checks that the stored version is
// the one it loaded under the lock, and two commits of it conflict. A
// client's schema change is a job queued in KV and run by the DDL owner,
// one node elected as TiDB's is (package ddljob), which holds the mutex
// for the job's whole run; a job whose runner died is recovered by the
// next owner. The driver's own schema changes, views and triggers run in
// the issuing node, under the same mutex.
package schemasync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/basalt-db/basalt/catalog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// The keys in etcd (see the package comment).
const (
	GlobalVersionKey = "/tidb/ddl/global_schema_version"
	LoadedPrefix     = "/tidb/ddl/all_schema_versions/"
	InUsePrefix      = "/basalt/ddl/schema_in_use/"
	ddlLockKey       = "/basalt/ddl/lock"
)

// DefaultLease is the schema lease when none is configured: TiDB's
// `lease` default.
const DefaultLease = 45 * time.Second

// waitLimit bounds a schema change's wait for other nodes, as the wait
// for this node's own older transactions (session.Driver.waitVersion).
const waitLimit = 10 * time.Minute

// Config configures a Syncer.
type Config struct {
	// Endpoints are PD's client URLs (host:port), where its etcd serves.
	Endpoints []string
	// Lease is the schema lease: a node that has not renewed its
	// registration or reloaded the schema for this long stops serving.
	// The registration's etcd lease has about this TTL (at least etcd's
	// minimum, a couple of seconds). 0 means DefaultLease.
	Lease time.Duration
	// Logger receives the syncer's warnings; nil means slog.Default().
	Logger *slog.Logger
}

// Syncer is one SQL node's part in keeping schemas in step: its
// registration in etcd, the loops that keep it alive, reload the schema
// and report the versions, and the waits and lock of schema changes.
// Create it with New before the catalog opens (the catalog's own bootstrap
// may change the schema), then Start it.
//
// All methods are safe for concurrent use.
type Syncer struct {
	cfg    Config
	log    *slog.Logger
	cli    *clientv3.Client
	id     string
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	cat   *catalog.Catalog // set by Start
	inUse func() int64     // oldest version in use locally; set by Start

	report chan struct{} // wakes the reporter
	reload chan struct{} // wakes the reload loop

	mu sync.Mutex
	// lease is the registration, 0 while unregistered; gen counts
	// registrations.
	lease clientv3.LeaseID
	gen   uint64
	ttl   time.Duration
	// aliveUntil is when the registration may have expired in etcd at the
	// earliest: the last keep-alive's send time plus the TTL.
	aliveUntil time.Time
	// freshUntil is when the loaded schema stops being known current: the
	// start of the last successful reload plus the lease.
	freshUntil time.Time
	// floor is the version loaded first after the current registration,
	// -1 until then. A transaction under an older version may have run
	// while this node was not registered, and no one waited for it.
	floor int64
	// reported is what the reporter last wrote under lease.
	// loadFailing is set when a node that could not reload for a lease
	// unregistered; it registers again once a reload succeeds.
	loadFailing  bool
	reported     [2]int64
	reportedFor  clientv3.LeaseID
	lastFailWarn time.Time

	ddlMu      sync.Mutex
	ddlSession *concurrency.Session
}

// New connects to etcd at cfg.Endpoints and registers this node, with
// version 0 (so that nobody publishes a schema change without waiting for
// it to load the current schema first), and keeps the registration alive.
func New(cfg Config) (*Syncer, error) {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("schemasync: connect to PD's etcd at %v: %w", cfg.Endpoints, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Syncer{cfg: cfg, log: cfg.Logger, cli: cli, id: nodeID(), ctx: ctx, cancel: cancel,
		report: make(chan struct{}, 1), reload: make(chan struct{}, 1), floor: -1}
	if err := s.register(); err != nil {
		cancel()
		cli.Close()
		return nil, fmt.Errorf("schemasync: register in PD's etcd at %v: %w", cfg.Endpoints, err)
	}
	s.wg.Add(1)
	go s.keepAliveLoop()
	return s, nil
}

// nodeID names this node in etcd: host, process and a random part.
func nodeID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// ID is this node's name in etcd.
func (s *Syncer) ID() string { return s.id }

// Client is the syncer's etcd client, for the node's other cluster-wide
// state (package clustersync, gcworker); it is closed by Close.
func (s *Syncer) Client() *clientv3.Client { return s.cli }

// Lease is the schema lease in effect.
func (s *Syncer) Lease() time.Duration { return s.cfg.Lease }

// Start makes the syncer follow cat: it reloads cat when another node
// changes the schema, and reports the loaded version and inUse(), the
// oldest version this node's statements and transactions still use (at
// most cat's current version). Call Notify when the latter may have
// grown.
func (s *Syncer) Start(cat *catalog.Catalog, inUse func() int64) {
	s.mu.Lock()
	s.cat, s.inUse = cat, inUse
	s.mu.Unlock()
	s.wg.Add(2)
	go s.reloadLoop()
	go s.reportLoop()
	s.kick(s.reload)
}

// Notify tells the reporter that the versions in use may have changed.
func (s *Syncer) Notify() { s.kick(s.report) }

func (s *Syncer) kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Close stops the loops and removes this node's registration, so that no
// schema change waits for it, and closes the etcd client.
func (s *Syncer) Close() error {
	s.cancel()
	s.wg.Wait()
	s.ddlMu.Lock()
	if s.ddlSession != nil {
		_ = s.ddlSession.Close()
	}
	s.ddlMu.Unlock()
	s.mu.Lock()
	lease := s.lease
	s.lease = 0
	s.mu.Unlock()
	if lease != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = s.cli.Revoke(ctx, lease)
		cancel()
	}
	return s.cli.Close()
}

// register grants a lease and writes this node's keys under it with
// version 0, until it has loaded the current schema.
func (s *Syncer) register() error {
	ttl := int64(math.Ceil(s.cfg.Lease.Seconds()))
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	sent := time.Now()
	g, err := s.cli.Grant(ctx, ttl)
	if err != nil {
		return err
	}
	_, err = s.cli.Txn(ctx).Then(
		clientv3.OpPut(LoadedPrefix+s.id, "0", clientv3.WithLease(g.ID)),
		clientv3.OpPut(InUsePrefix+s.id, "0", clientv3.WithLease(g.ID)),
	).Commit()
	if err != nil {
		_, _ = s.cli.Revoke(ctx, g.ID)
		return err
	}
	s.mu.Lock()
	s.lease, s.ttl = g.ID, time.Duration(g.TTL)*time.Second
	s.gen++
	s.aliveUntil = sent.Add(s.ttl)
	s.floor = -1
	s.reported, s.reportedFor = [2]int64{}, g.ID
	s.mu.Unlock()
	return nil
}

// keepAliveLoop renews the registration every third of its TTL. Once it
// may have expired in etcd (other nodes no longer wait for this one), it
// registers again, and the node serves again once it has reloaded.
func (s *Syncer) keepAliveLoop() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		lease, ttl, until, failing := s.lease, s.ttl, s.aliveUntil, s.loadFailing
		s.mu.Unlock()
		interval := ttl / 3
		if lease == 0 {
			interval = 200 * time.Millisecond
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(interval):
		}
		if lease == 0 {
			if failing {
				continue // the reload loop retries; register once it loads
			}
			if err := s.register(); err != nil {
				s.warn("cannot register in PD's etcd; not serving", err)
				continue
			}
			s.log.Info("schemasync: registered again", "node", s.id)
			s.kick(s.reload)
			continue
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(s.ctx, interval)
		_, err := s.cli.KeepAliveOnce(ctx, lease)
		cancel()
		s.mu.Lock()
		switch {
		case err == nil:
			s.aliveUntil = sent.Add(s.ttl)
		case time.Now().After(until):
			// Gone in etcd, or about to be: start over.
			s.lease = 0
		}
		s.mu.Unlock()
		if err != nil {
			s.warn("cannot renew the schema lease", err)
		}
	}
}

// reloadLoop reloads the catalog every half lease, and at once when the
// global version changes.
func (s *Syncer) reloadLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.Lease / 2)
	defer tick.Stop()
	watch := s.cli.Watch(s.ctx, GlobalVersionKey)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		case <-s.reload:
		case _, ok := <-watch:
			if !ok {
				// The watch ended (a compaction, a lost connection):
				// the poll covers the gap; watch again.
				watch = s.cli.Watch(s.ctx, GlobalVersionKey)
			}
		}
		s.reloadOnce()
	}
}

// reloadOnce reloads the catalog; the loaded schema is then known current
// for one lease from the start of the reload (its read sees every version
// published before it began).
func (s *Syncer) reloadOnce() {
	s.mu.Lock()
	gen, registered := s.gen, s.lease != 0
	s.mu.Unlock()
	start := time.Now()
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Lease)
	v, err := s.cat.Reload(ctx)
	cancel()
	s.mu.Lock()
	if err != nil {
		stale := start.After(s.freshUntil)
		lease := s.lease
		if stale && lease != 0 {
			// Cannot load the schema for a lease: unregister, so that
			// schema changes stop waiting for this node; it registers
			// again and serves once it can load again.
			s.lease, s.loadFailing = 0, true
		}
		s.mu.Unlock()
		s.warn("cannot reload the schema", err)
		if stale && lease != 0 {
			ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
			_, _ = s.cli.Revoke(ctx, lease)
			cancel()
		}
		return
	}
	s.freshUntil = start.Add(s.cfg.Lease)
	s.loadFailing = false
	if registered && s.gen == gen && s.lease != 0 && s.floor < 0 {
		// The first load that began after registering: other nodes
		// have waited for this node since before it read the schema.
		s.floor = v
	}
	s.mu.Unlock()
	s.kick(s.report)
}

// reportLoop writes this node's versions to etcd when they change (and
// retries a failed write every tick).
func (s *Syncer) reportLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.Lease / 4)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		case <-s.report:
		}
		s.reportOnce()
	}
}

func (s *Syncer) reportOnce() {
	s.mu.Lock()
	lease, floor := s.lease, s.floor
	same := s.reportedFor == lease
	prev := s.reported
	s.mu.Unlock()
	if lease == 0 || floor < 0 {
		return // registered with 0 until the first reload
	}
	loaded := s.cat.InfoSchema().Version
	inUse := min(s.inUse(), loaded)
	now := [2]int64{loaded, inUse}
	if same && now == prev {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	_, err := s.cli.Txn(ctx).Then(
		clientv3.OpPut(LoadedPrefix+s.id, strconv.FormatInt(loaded, 10), clientv3.WithLease(lease)),
		clientv3.OpPut(InUsePrefix+s.id, strconv.FormatInt(inUse, 10), clientv3.WithLease(lease)),
	).Commit()
	cancel()
	if err != nil {
		s.warn("cannot report the schema version", err)
		return
	}
	s.mu.Lock()
	if s.lease == lease {
		s.reported, s.reportedFor = now, lease
	}
	s.mu.Unlock()
}

// warn logs a failure, at most once a second.
func (s *Syncer) warn(msg string, err error) {
	if errors.Is(err, context.Canceled) && s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	quiet := time.Since(s.lastFailWarn) < time.Second
	if !quiet {
		s.lastFailWarn = time.Now()
	}
	s.mu.Unlock()
	if !quiet {
		s.log.Warn("schemasync: "+msg, "node", s.id, "err", err)
	}
}
