package session

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/basalt-db/basalt/clustersync"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/gcworker"
	"github.com/basalt-db/basalt/tso"
	"github.com/basalt-db/basalt/types"
)

// What a SQL node shares with the cluster's other SQL nodes beyond the
// schema: its global variables (clustersync.Vars), the changes of
// accounts and privileges (a notification through etcd, upon which every
// node reloads the grant tables from KV), the statistics ANALYZE stores
// (likewise), and its part in GC
// (gcworker), with mysql.tidb where the GC leader records its state, as
// TiDB's does. An embedded store has none of it: it is the only node, and
// runs its own GC (store/local).

// gcTable is TiDB's mysql.tidb: named values of the cluster's internal
// state, the GC leader's among them.
const gcTable = "CREATE TABLE IF NOT EXISTS mysql.tidb (\n" +
	"  VARIABLE_NAME VARCHAR(64) NOT NULL PRIMARY KEY,\n" +
	"  VARIABLE_VALUE VARCHAR(1024) DEFAULT NULL,\n" +
	"  COMMENT VARCHAR(1024)\n) COMMENT='TiDB internal state: GC'"

// startCluster, on a cluster, creates mysql.tidb, starts sharing the
// global variables and starts the node's GC worker.
func (d *Driver) startCluster(ctx context.Context) error {
	if d.sync == nil {
		return nil
	}
	if d.catalog.InfoSchema().Table(aclDB, "tidb") == nil {
		s := d.internalSession()
		_, err := s.execInternal(ctx, gcTable)
		s.Close()
		if err != nil && !isCode(err, errno.ErTableExists) {
			return fmt.Errorf("creating mysql.tidb: %w", err)
		}
	}
	vars, err := clustersync.StartVars(d.sync.Client(), d.applyClusterGlobal, nil)
	if err != nil {
		return err
	}
	d.vars = vars
	d.aclWatch = clustersync.Watch(d.sync.Client(), clustersync.PrivilegeKey, d.reloadACL, nil)
	d.statsWatch = clustersync.Watch(d.sync.Client(), clustersync.StatsKey, d.reloadStats, nil)
	d.bindWatch = clustersync.Watch(d.sync.Client(), clustersync.BindInfoKey, d.reloadBindings, nil)
	if d.cfg.Topology.IP != "" {
		d.topology = clustersync.StartTopology(d.sync.Client(), d.cfg.Topology, d.sync.Lease(), nil)
	}
	d.startJobs()
	if st, ok := d.store.(gcworker.Storage); ok {
		st = gcStorage{st, d}
		host, _ := os.Hostname()
		d.gc = gcworker.Start(gcworker.Config{
			Client:   d.sync.Client(),
			ID:       d.sync.ID(),
			Desc:     fmt.Sprintf("host:%s, pid:%d, start at %s", host, os.Getpid(), time.Now().Format(gcTimeFormat)),
			TTL:      d.sync.Lease(),
			Store:    st,
			Settings: d.gcSettings,
			Record:   d.recordGC,
			Logger:   slog.Default(),
		})
	}
	return nil
}

// gcStorage is the store as GC sees it, with this node's autocommit reads
// counted among its transactions.
type gcStorage struct {
	gcworker.Storage
	d *Driver
}

func (g gcStorage) MinStartTS() uint64 {
	ts := g.Storage.MinStartTS()
	if r := g.d.oldestRead(); r != 0 && (ts == 0 || r < ts) {
		ts = r
	}
	return ts
}

// readingAt records an autocommit statement reading at ts, outside a
// transaction, until done is called: GC keeps what it reads. It records
// nothing on an embedded store, whose GC reads none of it.
func (d *Driver) readingAt(ts uint64) (done func()) {
	if d.gc == nil {
		return func() {}
	}
	d.readsMu.Lock()
	if d.reads == nil {
		d.reads = map[uint64]int{}
	}
	d.reads[ts]++
	d.readsMu.Unlock()
	return func() {
		d.readsMu.Lock()
		if d.reads[ts]--; d.reads[ts] <= 0 {
			delete(d.reads, ts)
		}
		d.readsMu.Unlock()
	}
}

// oldestRead is the timestamp of the oldest autocommit read running, 0
// if none.
func (d *Driver) oldestRead() uint64 {
	d.readsMu.Lock()
	defer d.readsMu.Unlock()
	var min uint64
	for ts := range d.reads {
		if min == 0 || ts < min {
			min = ts
		}
	}
	return min
}

// stopCluster stops what startCluster started.
func (d *Driver) stopCluster() {
	if d.jobs != nil {
		d.jobs.Close()
	}
	if d.gc != nil {
		d.gc.Close()
	}
	if d.vars != nil {
		d.vars.Close()
	}
	if d.aclWatch != nil {
		d.aclWatch.Close()
	}
	if d.statsWatch != nil {
		d.statsWatch.Close()
	}
	if d.topology != nil {
		d.topology.Close()
	}
	if d.bindWatch != nil {
		d.bindWatch.Close()
	}
}

// afterACLChange is called once this node changed the accounts or
// privileges and reloaded them: on a cluster it tells the other nodes.
func (d *Driver) afterACLChange(ctx context.Context) error {
	if d.sync == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := clustersync.Notify(ctx, d.sync.Client(), clustersync.PrivilegeKey); err != nil {
		return errno.New(errno.ErUnknown, "%v", err)
	}
	return nil
}

// reloadACL reloads the grant tables after another node changed them (or
// this one: its own notification comes back too), as FLUSH PRIVILEGES
// does.
func (d *Driver) reloadACL() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.flushACL(ctx); err != nil {
		slog.Default().Warn("cannot reload the grant tables after another SQL node changed them", "err", err)
	}
}

// afterAnalyze is called once ANALYZE stored new statistics: on a
// cluster it tells the other nodes.
func (d *Driver) afterAnalyze(ctx context.Context) error {
	if d.sync == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := clustersync.Notify(ctx, d.sync.Client(), clustersync.StatsKey); err != nil {
		return errno.New(errno.ErUnknown, "%v", err)
	}
	return nil
}

// reloadStats takes the statistics another node's ANALYZE stored (its
// own notification comes back too, and changes nothing).
func (d *Driver) reloadStats() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.catalog.ReloadStats(ctx); err != nil {
		slog.Default().Warn("cannot reload the statistics after another SQL node analyzed a table", "err", err)
	}
}

// afterSetGlobal is called once SET GLOBAL has stored a value in this
// node's globals: on a cluster it saves it for the other nodes.
func (d *Driver) afterSetGlobal(name string, v types.Datum) error {
	if d.vars == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.vars.Set(ctx, name, string(types.ToText(v))); err != nil {
		return errno.New(errno.ErUnknown, "%v", err)
	}
	return nil
}

// applyClusterGlobal stores a global variable another node set (or this
// one, its own value coming back), in the datum kind SET GLOBAL stores.
func (d *Driver) applyClusterGlobal(name, text string) {
	def, ok := sysVars[name]
	if !ok {
		return // a variable of a newer node
	}
	v := types.NewString(text)
	switch def.typ {
	case varBool:
		v = types.NewBool(text == "1" || strings.EqualFold(text, "ON"))
	case varInt:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return
		}
		v = types.NewInt(n)
	case varUint:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return
		}
		v = types.NewUint(n)
	case varFloat:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return
		}
		v = types.NewFloat(f)
	}
	d.mu.Lock()
	d.globals[name] = v
	d.mu.Unlock()
	d.globalsChanged.Add(1)
	d.setGlobalLimit(name, v)
}

// global is a global variable's value.
func (d *Driver) global(name string) types.Datum {
	d.mu.Lock()
	v, ok := d.globals[name]
	d.mu.Unlock()
	if !ok {
		v = sysVars[name].def
	}
	return v
}

// gcSettings reads the GC variables; a value that is not a duration
// leaves the default (TiDB refuses it at SET).
func (d *Driver) gcSettings() gcworker.Settings {
	s := gcworker.DefaultSettings
	if v := d.global("tidb_gc_enable"); !v.IsNull() {
		s.Enable = v.Int() != 0
	}
	if t, err := time.ParseDuration(string(types.ToText(d.global("tidb_gc_life_time")))); err == nil && t > 0 {
		s.LifeTime = t
	}
	if t, err := time.ParseDuration(string(types.ToText(d.global("tidb_gc_run_interval")))); err == nil && t > 0 {
		s.RunInterval = t
	}
	return s
}

// gcTimeFormat is how mysql.tidb writes times (TiDB's GCTimeFormat).
const gcTimeFormat = "20060102-15:04:05.000 -0700"

// recordGC writes the GC leader's state into mysql.tidb, in TiDB's rows.
func (d *Driver) recordGC(ctx context.Context, st gcworker.State) error {
	sp := time.UnixMilli(tso.PhysicalMs(st.SafePoint))
	rows := [][3]string{
		{"tikv_gc_leader_uuid", st.LeaderID, "Current GC worker leader UUID. (DO NOT EDIT)"},
		{"tikv_gc_leader_desc", st.LeaderDesc, "Host name and pid of current GC leader. (DO NOT EDIT)"},
		{"tikv_gc_leader_lease", st.LastRun.Add(st.Settings.RunInterval).Format(gcTimeFormat), "Current GC worker leader lease. (DO NOT EDIT)"},
		{"tikv_gc_enable", strconv.FormatBool(st.Settings.Enable), "Current GC enable status"},
		{"tikv_gc_run_interval", st.Settings.RunInterval.String(), "GC run interval, at least 10m, in Go format."},
		{"tikv_gc_life_time", st.Settings.LifeTime.String(), "All versions within life time will not be collected by GC, at least 10m, in Go format."},
		{"tikv_gc_last_run_time", st.LastRun.Format(gcTimeFormat), "The time when last GC starts. (DO NOT EDIT)"},
		{"tikv_gc_safe_point", sp.Format(gcTimeFormat), "All versions after safe point can be accessed. (DO NOT EDIT)"},
	}
	var b strings.Builder
	b.WriteString("REPLACE INTO mysql.tidb (VARIABLE_NAME, VARIABLE_VALUE, COMMENT) VALUES ")
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%s, %s, %s)", quoteString(r[0]), quoteString(r[1]), quoteString(r[2]))
	}
	s := d.internalSession()
	defer s.Close()
	_, err := s.execInternal(ctx, b.String())
	return err
}
