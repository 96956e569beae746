package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/basalt-db/basalt/kv"
)

// Catalog owns the schema of one Basalt instance: it loads the stored
// catalog at start, runs schema changes one at a time, publishes a new
// InfoSchema after each, and hands out auto-increment values.
//
// On a cluster several SQL nodes share the stored catalog; a Cluster
// (schemasync) then serializes schema changes across them, tells the
// others of each new version and waits for them, and has each node
// Reload what the others changed.
//
// All methods are safe for concurrent use.
type Catalog struct {
	store   kv.Storage
	cluster Cluster    // nil on an embedded store
	ddlMu   sync.Mutex // one schema change at a time in this process
	loadMu  sync.Mutex // one swap of is at a time, never to an older version
	is      atomic.Pointer[InfoSchema]

	autoIDs sync.Map // table ID → *autoAlloc (autoid.go)

	statsMu sync.RWMutex
	stats   map[int64]*TableStats
	// statsGen counts the changes to stats (SetStats, a reload that took
	// newer statistics): the plan cache keeps a plan only while it stays
	// the same, as TiDB's tidb_plan_cache_invalidation_on_fresh_stats.
	statsGen atomic.Uint64
}

// Cluster is what a catalog shared by several SQL nodes needs of them
// (package schemasync implements it over PD's etcd).
type Cluster interface {
	// LockDDL takes the lock that serializes schema changes across the
	// nodes, until unlock.
	LockDDL(ctx context.Context) (unlock func(), err error)
	// Published announces schema version v, just committed by this node,
	// and returns once every other live node has loaded it.
	Published(ctx context.Context, v int64) error
}

// ErrSchemaChanged fails a transaction that wrote a table whose
// definition changed since the transaction's schema version, past what
// the other nodes are known to use (TiDB's 8028), and a schema change
// that found the stored schema changed under it by another node.
var ErrSchemaChanged = errors.New("catalog: schema changed during the transaction")

// ErrSchemaOutdated is a SQL node's refusal to run or commit a statement
// while it cannot tell that its schema is current: it could not renew its
// schema lease or reload the schema in time (TiDB's 8027).
var ErrSchemaOutdated = errors.New("catalog: schema lease expired")

// DefaultDB is created at first start, as TiDB does.
const DefaultDB = "test"

// Open loads the catalog stored in store, creating the default database
// on a new store.
func Open(store kv.Storage) (*Catalog, error) { return OpenShared(store, nil) }

// OpenShared is Open for a store that other SQL nodes share, cl
// coordinating the schema changes (nil: Open).
func OpenShared(store kv.Storage, cl Cluster) (*Catalog, error) {
	c := &Catalog{store: store, cluster: cl, stats: map[int64]*TableStats{}}
	if _, err := c.Reload(context.Background()); err != nil {
		return nil, err
	}
	if c.InfoSchema().Version == 0 {
		err := c.RunDDL(context.Background(), func(m *Meta, is *InfoSchema) error {
			if is.DB(DefaultDB) != nil {
				return nil // another node bootstrapped it first
			}
			id, err := m.NewIDs(1)
			if err != nil {
				return err
			}
			db := &DBInfo{ID: id, Name: DefaultDB, Charset: "utf8mb4", Collate: "utf8mb4_general_ci"}
			is.AddDB(db)
			return m.PutDB(db)
		})
		if err != nil {
			return nil, fmt.Errorf("catalog: bootstrap: %w", err)
		}
	}
	return c, nil
}

// Reload reads the stored schema version and, if it is newer than the
// loaded one (another node changed the schema), loads the stored catalog
// and publishes it. It returns the version loaded now.
func (c *Catalog) Reload(ctx context.Context) (int64, error) {
	txn, err := c.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return 0, err
	}
	defer txn.Rollback()
	m := NewMeta(txn)
	v, err := m.SchemaVersion()
	if err != nil {
		return 0, err
	}
	if cur := c.is.Load(); cur != nil && cur.Version >= v {
		return cur.Version, nil
	}
	is, stats, err := loadSchema(m, v)
	if err != nil {
		return 0, err
	}
	return c.swap(is, stats).Version, nil
}

// SchemaAt reads the schema as it was at timestamp ts (for reads of the
// past: tidb_snapshot).
func SchemaAt(store kv.Storage, ts uint64) (*InfoSchema, error) {
	txn, err := store.Begin(kv.TxnOptions{Mode: kv.Optimistic, StartTS: ts})
	if err != nil {
		return nil, err
	}
	defer txn.Rollback()
	m := NewMeta(txn)
	v, err := m.SchemaVersion()
	if err != nil {
		return nil, err
	}
	is, _, err := loadSchema(m, v)
	return is, err
}

// loadSchema reads every database, table and statistics record of m's
// transaction, whose schema version is v.
func loadSchema(m *Meta, v int64) (*InfoSchema, map[int64]*TableStats, error) {
	is := newInfoSchema(v)
	stats := map[int64]*TableStats{}
	dbs, err := m.DBs()
	if err != nil {
		return nil, nil, err
	}
	for _, db := range dbs {
		is.addDB(db)
		tables, err := m.Tables(db.ID)
		if err != nil {
			return nil, nil, err
		}
		for _, t := range tables {
			is.addTable(db, t)
			st, err := m.Stats(t.ID)
			if err != nil {
				return nil, nil, err
			}
			if st != nil {
				stats[t.ID] = st
			}
		}
	}
	return is, stats, nil
}

// swap publishes is (and, if not nil, the statistics loaded with it)
// unless a newer version is already published; it returns the published
// one.
func (c *Catalog) swap(is *InfoSchema, stats map[int64]*TableStats) *InfoSchema {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if cur := c.is.Load(); cur != nil && cur.Version >= is.Version {
		return cur
	}
	if stats != nil {
		c.statsMu.Lock()
		// Keep what SetStats recorded here after the load read the store.
		for id, old := range c.stats {
			if st := stats[id]; (st == nil && is.TableByID(id) != nil) || (st != nil && old.Version > st.Version) {
				stats[id] = old
			}
		}
		c.stats = stats
		c.statsGen.Add(1)
		c.statsMu.Unlock()
	}
	c.is.Store(is)
	return is
}

// InfoSchema returns the current schema snapshot.
func (c *Catalog) InfoSchema() *InfoSchema { return c.is.Load() }

// RunDDL runs one schema change: fn records it through m and applies it to
// a copy of the current InfoSchema; RunDDL bumps the schema version, commits
// and publishes the copy. Schema changes are serialized.
func (c *Catalog) RunDDL(ctx context.Context, fn func(m *Meta, is *InfoSchema) error) error {
	unlock, err := c.LockDDL(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return c.runLocked(ctx, fn)
}

func (c *Catalog) runLocked(ctx context.Context, fn func(m *Meta, is *InfoSchema) error) error {
	txn, err := c.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return err
	}
	defer txn.Rollback()
	m := NewMeta(txn)
	base := c.InfoSchema()
	if c.cluster != nil {
		// Under the lock (LockDDL reloaded), the stored version is the
		// loaded one, unless the lock was lost and another node changed
		// the schema meanwhile: this change was decided on a stale
		// schema. (Two nodes committing at once conflict on the version.)
		stored, err := m.SchemaVersion()
		if err != nil {
			return err
		}
		if stored != base.Version {
			return fmt.Errorf("%w: version %d is stored, this node has %d loaded", ErrSchemaChanged, stored, base.Version)
		}
	}
	v, err := m.BumpSchemaVersion()
	if err != nil {
		return err
	}
	is := base.clone(v)
	if err := fn(m, is); err != nil {
		return err
	}
	if h, ok := ctx.Value(stepHookKey{}).(StepHook); ok && h != nil {
		if err := h(m, base, is); err != nil {
			return err
		}
	}
	if err := txn.Commit(ctx); err != nil {
		return err
	}
	c.swap(is, nil)
	if c.cluster != nil {
		return c.cluster.Published(ctx, v)
	}
	return nil
}

// LockDDL takes the schema-change lock for a change made of several steps
// (an index build); RunDDLLocked runs each step under it. On a cluster the
// lock is the nodes' (Cluster.LockDDL), and the newest stored schema is
// loaded once it is held. Under a ctx of WithLockHeld (the DDL owner's job,
// which holds the lock already) it only reloads.
func (c *Catalog) LockDDL(ctx context.Context) (unlock func(), err error) {
	if held, _ := ctx.Value(lockHeldKey{}).(bool); held {
		if c.cluster != nil {
			if _, err := c.Reload(ctx); err != nil {
				return nil, err
			}
		}
		return func() {}, nil
	}
	c.ddlMu.Lock()
	if c.cluster == nil {
		return c.ddlMu.Unlock, nil
	}
	release, err := c.cluster.LockDDL(ctx)
	if err != nil {
		c.ddlMu.Unlock()
		return nil, err
	}
	if _, err := c.Reload(ctx); err != nil {
		release()
		c.ddlMu.Unlock()
		return nil, err
	}
	return func() {
		release()
		c.ddlMu.Unlock()
	}, nil
}

// RunDDLLocked is RunDDL for a caller holding LockDDL.
func (c *Catalog) RunDDLLocked(ctx context.Context, fn func(m *Meta, is *InfoSchema) error) error {
	return c.runLocked(ctx, fn)
}

// AddDB adds a database to a schema being changed.
func (is *InfoSchema) AddDB(db *DBInfo) { is.addDB(db) }

// DropDB removes a database and its tables from a schema being changed.
func (is *InfoSchema) DropDB(name string) {
	l := strings.ToLower(name)
	for _, t := range is.tables[l] {
		delete(is.byID, t.ID)
	}
	delete(is.tables, l)
	delete(is.dbs, l)
	is.resetRefs()
}

// PutTable adds or replaces a table in a schema being changed.
func (is *InfoSchema) PutTable(db *DBInfo, t *TableInfo) {
	if old := is.byID[t.ID]; old != nil && !strings.EqualFold(old.Name, t.Name) {
		delete(is.tables[strings.ToLower(db.Name)], strings.ToLower(old.Name))
	}
	is.addTable(db, t)
}

// DropTable removes a table from a schema being changed.
func (is *InfoSchema) DropTable(db *DBInfo, t *TableInfo) {
	delete(is.tables[strings.ToLower(db.Name)], strings.ToLower(t.Name))
	delete(is.byID, t.ID)
	is.resetRefs()
}

// Stats returns a table's statistics, or nil if it was never analyzed.
func (c *Catalog) Stats(tableID int64) *TableStats {
	c.statsMu.RLock()
	defer c.statsMu.RUnlock()
	return c.stats[tableID]
}

// ReloadStats reads the statistics of every table of the current schema
// from the store and takes each that is newer than the one held (by
// Version, the ANALYZE's timestamp): another SQL node analyzed the table.
func (c *Catalog) ReloadStats(ctx context.Context) error {
	is := c.is.Load()
	if is == nil {
		return nil
	}
	txn, err := c.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return err
	}
	defer txn.Rollback()
	m := NewMeta(txn)
	loaded := map[int64]*TableStats{}
	for _, db := range is.DBs() {
		for _, t := range is.Tables(db.Name) {
			if err := ctx.Err(); err != nil {
				return err
			}
			st, err := m.Stats(t.ID)
			if err != nil {
				return err
			}
			if st != nil {
				loaded[t.ID] = st
			}
		}
	}
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	for id, st := range loaded {
		if cur := c.stats[id]; cur == nil || st.Version > cur.Version {
			c.stats[id] = st
			c.statsGen.Add(1)
		}
	}
	return nil
}

// SetStats stores a table's statistics.
func (c *Catalog) SetStats(ctx context.Context, tableID int64, st *TableStats) error {
	txn, err := c.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return err
	}
	defer txn.Rollback()
	if err := NewMeta(txn).PutStats(tableID, st); err != nil {
		return err
	}
	if err := txn.Commit(ctx); err != nil {
		return err
	}
	c.statsMu.Lock()
	c.stats[tableID] = st
	c.statsGen.Add(1)
	c.statsMu.Unlock()
	return nil
}

// StatsGeneration changes whenever the statistics of any table held here
// change.
func (c *Catalog) StatsGeneration() uint64 { return c.statsGen.Load() }
