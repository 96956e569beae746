// Package session runs SQL for one connection at a time: it parses, plans
// and executes statements, keeps the connection's state (current database,
// variables, transaction, prepared statements) and maps errors to MySQL's
// codes. It knows nothing of the wire: it returns Results of datums and
// errno.Errors, and driver/ adapts Driver, Session and Stmt to the
// protocol server.
package session

import (
	"context"
	"fmt"
	"iter"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/clustersync"
	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/ddljob"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/gcworker"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/schemasync"
	"github.com/basalt-db/basalt/slowlog"
	"github.com/basalt-db/basalt/stmtsummary"
	"github.com/basalt-db/basalt/types"
)

// Config configures a Driver.
type Config struct {
	// RootPassword is root's password on a new data directory (when the
	// grant tables are created); later starts ignore it.
	RootPassword string
	// LockWaitTimeout is innodb_lock_wait_timeout's default.
	LockWaitTimeout time.Duration
	// PessimisticByDefault makes explicit transactions pessimistic.
	PessimisticByDefault bool
	// PlanCacheCapacity > 0 turns on the plan cache: a prepared statement
	// keeps its plan across executions while the schema version holds. The
	// number is not a bound yet (each statement holds one plan).
	PlanCacheCapacity int
	// ServerVersion is VERSION()'s value.
	ServerVersion string
	// PessimisticRetryLimit bounds how often a statement of a pessimistic
	// transaction runs again after a write conflict; 0 means 256
	// (pessimistic-txn.max-retry-count).
	PessimisticRetryLimit int
	// RequireSecureTransport is require_secure_transport's initial value:
	// refuse connections that use neither TLS nor a Unix socket.
	RequireSecureTransport bool
	// SecureFilePriv is secure_file_priv: where LOAD DATA INFILE may read
	// files on the server. "" allows any file (MariaDB's and TiDB's
	// default), "NULL" none, a directory the files under it.
	SecureFilePriv string
	// SchemaSync, on a cluster, shares the schema with the other SQL
	// nodes through PD's etcd (package schemasync); nil on an embedded
	// store, which has no other node.
	SchemaSync *schemasync.Config
	// SlowQueryFile is the slow query log (TiDB's log.slow-query-file);
	// empty: none. It is rotated past SlowQueryMaxSize megabytes (0: 300),
	// keeping SlowQueryMaxBackups old files (0: all).
	SlowQueryFile       string
	SlowQueryMaxSize    int
	SlowQueryMaxBackups int
	// Topology describes this SQL node (its MySQL and status addresses,
	// version, git hash, start time): on a cluster it is announced in
	// PD's etcd for information_schema.CLUSTER_INFO (cluster_info.go).
	Topology clustersync.TopologyInfo
	// SplitTable (TiDB's split-table) starts a region at the first key of
	// every table that CREATE TABLE or TRUNCATE TABLE makes, on a store
	// that has regions (kv.RegionSplitter).
	SplitTable bool
	// NoLoadDataIngest makes every LOAD DATA go through a transaction,
	// also those that could load an empty table through the importer
	// (loaddata_ingest.go); for tests that compare the two.
	NoLoadDataIngest bool
}

// Driver opens sessions over one store.
type Driver struct {
	cfg     Config
	store   kv.Storage
	catalog *catalog.Catalog
	ddl     *ddl.DDL
	// sync keeps the schema in step with the other SQL nodes of a
	// cluster; nil on an embedded store.
	sync *schemasync.Syncer
	// vars shares the global variables, aclWatch reloads the grant
	// tables other nodes changed, and gc is the node's part in GC, on a
	// cluster (cluster.go); nil on an embedded store.
	vars     *clustersync.Vars
	aclWatch *clustersync.Watcher
	// statsWatch reloads the statistics another node's ANALYZE stored.
	statsWatch *clustersync.Watcher
	// topology announces the node in PD's etcd (CLUSTER_INFO).
	topology *clustersync.Topology
	// bindWatch reloads the global bindings another node changed.
	bindWatch *clustersync.Watcher
	gc        *gcworker.Worker
	// jobs is the node's part in the DDL job queue and owner election
	// (ddl_job.go), on a cluster; nil on an embedded store.
	jobs *ddljob.Owner
	// reads counts the autocommit reads running per read timestamp, for
	// GC (cluster.go).
	readsMu sync.Mutex
	reads   map[uint64]int
	// conns is the server's connections (KILL, SHOW PROCESSLIST, ...); nil
	// until SetConnections.
	conns Connections
	// started is when the SQL layer opened: SHOW STATUS's Uptime.
	started time.Time

	mu sync.Mutex
	// pins counts running statements and open transactions per schema
	// version, in pinShards shards by connection; DDL waits for the old
	// versions to drain (pinSchema).
	pins [pinShards]pinShard
	// drained, on mu, wakes waitLocalVersion when a version's count drops
	// to zero in a shard; pinWaiters counts the waiters, so that unpin
	// takes mu only when someone waits.
	drained    *sync.Cond
	pinWaiters atomic.Int32
	globals    map[string]types.Datum
	// globalsChanged counts changes of globals, for sessions' caches.
	globalsChanged atomic.Uint64

	acl aclState // accounts and grants (acl.go)

	// slowLog is the slow query log, nil without one; summary the
	// statement summary (observe.go).
	slowLog *slowlog.Logger
	summary *stmtsummary.Summary
	brie    brieJobs // BACKUP and RESTORE jobs (brie_stmt.go)

	// globalBinds are the global SQL plan bindings by digest, replaced
	// whole on each load; bindsVer counts the loads (binding.go).
	globalBinds atomic.Pointer[map[string]*bindRecord]
	bindsVer    atomic.Uint64

	// loadIngests counts the LOAD DATA statements committed through the
	// importer (loaddata_ingest.go).
	loadIngests atomic.Int64
	// textParseHits counts the text statements taken from a session's
	// templates instead of the parser (text_parse.go), for the tests.
	textParseHits atomic.Int64
	// textPlanHits counts the text statements run with their template's
	// plan (text_parse.go), for the tests.
	textPlanHits atomic.Int64
}

// Open opens the catalog in store (creating it on a new store, with the
// mysql schema of accounts and grants) and returns a driver for sessions
// over it.
func Open(store kv.Storage, cfg Config) (_ *Driver, err error) {
	var syncer *schemasync.Syncer
	var cluster catalog.Cluster // nil, not a nil *Syncer, when embedded
	if cfg.SchemaSync != nil {
		if syncer, err = schemasync.New(*cfg.SchemaSync); err != nil {
			return nil, err
		}
		cluster = syncer
		defer func() {
			if err != nil {
				syncer.Close()
			}
		}()
	}
	cat, err := catalog.OpenShared(store, cluster)
	if err != nil {
		return nil, err
	}
	if cfg.LockWaitTimeout == 0 {
		cfg.LockWaitTimeout = 50 * time.Second
	}
	if cfg.ServerVersion != "" {
		expression.Version = cfg.ServerVersion
	}
	d := &Driver{cfg: cfg, store: store, catalog: cat, globals: map[string]types.Datum{}, started: time.Now()}
	d.drained = sync.NewCond(&d.mu)
	for i := range d.pins {
		d.pins[i].active = map[int64]int{}
	}
	d.summary = stmtsummary.New(stmtsummary.Config{})
	if cfg.SlowQueryFile != "" {
		d.slowLog = slowlog.Open(cfg.SlowQueryFile, cfg.SlowQueryMaxSize, cfg.SlowQueryMaxBackups)
	}
	if cfg.RequireSecureTransport {
		d.globals["require_secure_transport"] = types.NewBool(true)
	}
	d.ddl = &ddl.DDL{Store: store, Catalog: cat, Wait: d.waitVersion, SplitTable: cfg.SplitTable}
	if syncer != nil {
		d.sync = syncer
		syncer.Start(cat, d.oldestInUse)
		if err := d.waitServing(); err != nil {
			return nil, err
		}
	}
	if syncer == nil {
		// A schema change that a restart interrupted. On a cluster the
		// DDL owner recovers the job of a runner that died (ddljob).
		if _, err := d.ddl.RecoverSchema(context.Background(), nil, nil); err != nil {
			return nil, err
		}
	}
	if err := d.bootstrapACL(context.Background()); err != nil {
		return nil, fmt.Errorf("grant tables: %w", err)
	}
	if err := d.bootstrapBindings(context.Background()); err != nil {
		return nil, fmt.Errorf("SQL plan bindings: %w", err)
	}
	if err := d.startCluster(context.Background()); err != nil {
		return nil, err
	}
	return d, nil
}

// SetConnections gives the driver the connections of the server that
// serves it, for KILL, SHOW PROCESSLIST, the auth cache and the connection
// limits. Call it before the server accepts a connection.
func (d *Driver) SetConnections(c Connections) { d.conns = c }

// Catalog returns the driver's catalog.
func (d *Driver) Catalog() *catalog.Catalog { return d.catalog }

// waitServing waits, at start on a cluster, until the node has
// registered and loaded the schema, for at most two leases.
func (d *Driver) waitServing() error {
	deadline := time.Now().Add(2 * d.sync.Lease())
	for {
		err := d.sync.Valid()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot share the schema with the cluster's other SQL nodes: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close stops sharing the schema with the other SQL nodes (they no
// longer wait for this one). Call it once the sessions are closed.
func (d *Driver) Close() error {
	if d.slowLog != nil {
		d.slowLog.Close()
	}
	d.stopCluster()
	if d.sync != nil {
		return d.sync.Close()
	}
	return nil
}

// oldestInUse is the oldest schema version a running statement or open
// transaction uses, math.MaxInt64 if none.
func (d *Driver) oldestInUse() int64 {
	v := int64(math.MaxInt64)
	for i := range d.pins {
		sh := &d.pins[i]
		sh.mu.Lock()
		for ver, n := range sh.active {
			if n > 0 && ver < v {
				v = ver
			}
		}
		sh.mu.Unlock()
	}
	return v
}

// schemaCheckable is a transaction whose commit can check that the schema
// its writes were made under still holds (store/tikv's).
type schemaCheckable interface {
	SetSchemaCheck(check func(commitTS uint64, keys iter.Seq[[]byte]) error)
}

// checkSchemaAtCommit makes txn's commit fail, on a cluster, if the
// schema it runs under (is) may no longer be one of the two in use
// (schemasync.Syncer.CheckCommit).
func (d *Driver) checkSchemaAtCommit(txn kv.Txn, is *catalog.InfoSchema) {
	if d.sync == nil {
		return
	}
	if c, ok := txn.(schemaCheckable); ok {
		ver := is.Version
		c.SetSchemaCheck(func(commitTS uint64, keys iter.Seq[[]byte]) error {
			return d.sync.CheckCommit(ver, commitTS, keys)
		})
	}
}

// pinShards is the number of shards of the schema pins; a power of two.
const pinShards = 16

// pinShard counts the pins of the connections whose id falls in it.
type pinShard struct {
	mu     sync.Mutex
	active map[int64]int // schema version -> statements and transactions
	_      [64]byte      // keep the shards' mutexes off each other's cache lines
}

// pinSchema returns the current schema and records a statement or
// transaction of connection conn running under it until unpin (with the
// same conn). Reading the schema and recording it happen under one lock,
// the shard's, which waitLocalVersion takes too, after the schema change
// published its version: so the change either sees this pin or was
// published before it was read, and at most two versions are ever in use.
// (Reading first and registering later let a statement plan with an index
// that DROP INDEX then deleted, or without one that CREATE INDEX had
// already backfilled.) The pins are sharded by connection because one
// lock for all of them, taken twice by every autocommit statement, was
// 20% of the server's mutex wait under oltp_update_non_index.
//
// On a cluster it fails with catalog.ErrSchemaOutdated while the node
// cannot tell that its schema is current (schemasync.Syncer.Valid).
func (d *Driver) pinSchema(conn uint32) (*catalog.InfoSchema, error) {
	if d.sync != nil {
		if err := d.sync.Valid(); err != nil {
			return nil, err
		}
	}
	sh := &d.pins[conn%pinShards]
	sh.mu.Lock()
	is := d.catalog.InfoSchema()
	sh.active[is.Version]++
	sh.mu.Unlock()
	return is, nil
}

func (d *Driver) unpin(is *catalog.InfoSchema, conn uint32) {
	sh := &d.pins[conn%pinShards]
	sh.mu.Lock()
	v := is.Version
	sh.active[v]--
	drained := sh.active[v] <= 0
	if drained {
		delete(sh.active, v)
	}
	sh.mu.Unlock()
	if !drained {
		return
	}
	// A waiter counts itself before it looks at the shards, and looks
	// with mu held until it waits: if it saw this pin, this sees it and
	// broadcasts once it waits.
	if d.pinWaiters.Load() > 0 {
		d.mu.Lock()
		d.drained.Broadcast()
		d.mu.Unlock()
	}
	if d.sync != nil && !d.inUse(v) {
		d.sync.Notify()
	}
}

// inUse reports whether a statement or transaction runs under version v.
func (d *Driver) inUse(v int64) bool {
	for i := range d.pins {
		sh := &d.pins[i]
		sh.mu.Lock()
		n := sh.active[v]
		sh.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// usesOlder reports whether a statement or transaction runs under a
// version below v.
func (d *Driver) usesOlder(v int64) bool {
	for i := range d.pins {
		sh := &d.pins[i]
		sh.mu.Lock()
		for ver, n := range sh.active {
			if ver < v && n > 0 {
				sh.mu.Unlock()
				return true
			}
		}
		sh.mu.Unlock()
	}
	return false
}

// waitVersion waits until nothing runs under a schema version below v,
// on this node and, on a cluster, on every other SQL node.
func (d *Driver) waitVersion(ctx context.Context, v int64) error {
	if err := d.waitLocalVersion(ctx, v); err != nil {
		return err
	}
	if d.sync != nil {
		return d.sync.WaitInUse(ctx, v)
	}
	return nil
}

func (d *Driver) waitLocalVersion(ctx context.Context, v int64) error {
	deadline := time.Now().Add(10 * time.Minute)
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		d.drained.Broadcast()
		d.mu.Unlock()
	})
	defer stop()
	timer := time.AfterFunc(time.Second, func() {
		d.mu.Lock()
		d.drained.Broadcast()
		d.mu.Unlock()
	})
	defer timer.Stop()
	d.pinWaiters.Add(1)
	defer d.pinWaiters.Add(-1)
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		if !d.usesOlder(v) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("schema change gave up waiting for older transactions")
		}
		timer.Reset(100 * time.Millisecond)
		d.drained.Wait()
	}
}

// StatementSummary is the statement summary (information_schema's
// STATEMENTS_SUMMARY), for the status port's dashboard.
func (d *Driver) StatementSummary() *stmtsummary.Summary { return d.summary }

// SlowLog is the slow query log, nil without one.
func (d *Driver) SlowLog() *slowlog.Logger { return d.slowLog }
