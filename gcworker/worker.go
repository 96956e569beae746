// Package gcworker is the GC of a cluster's old versions as TiDB's GC
// worker runs it, from the SQL nodes: one of them, elected through PD's
// etcd, is the GC leader. Every tidb_gc_run_interval it computes the safe
// point, now − tidb_gc_life_time but never past the oldest transaction
// still running on any SQL node, resolves the locks at or below it, and
// moves PD's GC safe point there; the storage nodes poll PD's safe point
// and remove the versions below it from the regions they lead.
//
// Each SQL node (leader or not) reports the start timestamp of its oldest
// open transaction under a lease, at TiDB's key
//
//	/tidb/server/minstartts/<node>  start ts, or 0 when none is open
//
// and the leader holds the election key /basalt/gc/leader under the same
// lease: a node that dies or loses etcd drops out of both when the lease
// expires, and another node becomes leader.
//
// The invariant: the safe point the leader gives PD is below the start
// of every transaction that some node reported open when the leader read
// the reports. A transaction younger than the life time cannot be passed
// anyway; one that began and grew older than the life time between two
// reports of its node (less than a report interval) could be, which a
// life time of more than a few seconds rules out.
package gcworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/basalt-db/basalt/tso"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// The keys in etcd (see the package comment).
const (
	MinStartTSPrefix = "/tidb/server/minstartts/"
	LeaderKey        = "/basalt/gc/leader"
)

// Storage is what GC needs of the cluster's storage (store/tikv's
// Storage).
type Storage interface {
	// CurrentTS is a fresh timestamp from PD.
	CurrentTS() (uint64, error)
	// MinStartTS is the start of this node's oldest open transaction, 0
	// if none is open.
	MinStartTS() uint64
	// ResolveLocks resolves every lock at or below safePoint.
	ResolveLocks(ctx context.Context, safePoint uint64) error
	// GCSafePoint is PD's GC safe point.
	GCSafePoint(ctx context.Context) (uint64, error)
	// UpdateGCSafePoint moves PD's GC safe point forward.
	UpdateGCSafePoint(ctx context.Context, safePoint uint64) (uint64, error)
	// BoundBySafePoints saves safePoint as the GC worker's service safe
	// point and returns the smallest of all services'.
	BoundBySafePoints(ctx context.Context, safePoint uint64) (uint64, error)
}

// Settings are the GC variables in effect (tidb_gc_enable,
// tidb_gc_life_time, tidb_gc_run_interval).
type Settings struct {
	Enable      bool
	LifeTime    time.Duration
	RunInterval time.Duration
}

// DefaultSettings are TiDB's defaults.
var DefaultSettings = Settings{Enable: true, LifeTime: 10 * time.Minute, RunInterval: 10 * time.Minute}

// State is what the leader records after each run, for mysql.tidb.
type State struct {
	LeaderID, LeaderDesc string
	LastRun              time.Time
	SafePoint            uint64
	Settings             Settings
}

// Config configures a Worker.
type Config struct {
	Client *clientv3.Client // PD's etcd
	ID     string           // this node's name in etcd
	Desc   string           // this node described, for mysql.tidb
	// TTL is the lease of the node's report and leadership: how long
	// after a node is lost another one takes over.
	TTL      time.Duration
	Store    Storage
	Settings func() Settings
	// Record saves the leader's state after a run (mysql.tidb); nil
	// records nothing.
	Record func(context.Context, State) error
	Logger *slog.Logger
}

// Worker is one SQL node's part in GC: its report and, while it is the
// leader, the runs. All methods are safe for concurrent use.
type Worker struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	leader  bool
	lastRun time.Time
}

// Start starts the worker's loops; Close stops them.
func Start(cfg Config) *Worker {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TTL < 2*time.Second {
		cfg.TTL = 2 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Worker{cfg: cfg, ctx: ctx, cancel: cancel}
	w.wg.Add(1)
	go w.loop()
	return w
}

// Close stops the worker; its lease is revoked, so that another node
// takes the leadership at once.
func (w *Worker) Close() {
	w.cancel()
	w.wg.Wait()
}

// IsLeader reports whether this node is the GC leader now.
func (w *Worker) IsLeader() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leader
}

// loop keeps one etcd session (the lease) at a time, with the report and
// the campaign under it, and starts over when the session is lost.
func (w *Worker) loop() {
	defer w.wg.Done()
	for w.ctx.Err() == nil {
		sess, err := concurrency.NewSession(w.cfg.Client, concurrency.WithTTL(int(w.cfg.TTL/time.Second)),
			concurrency.WithContext(w.ctx))
		if err != nil {
			w.warn("cannot open an etcd session", err)
			w.sleep(time.Second)
			continue
		}
		ctx, cancel := context.WithCancel(w.ctx)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); w.reportLoop(ctx, sess) }()
		go func() { defer wg.Done(); w.campaign(ctx, sess) }()
		select {
		case <-w.ctx.Done():
		case <-sess.Done():
			w.cfg.Logger.Warn("gcworker: etcd session lost", "node", w.cfg.ID)
		}
		cancel()
		wg.Wait()
		w.setLeader(false)
		// Closing revokes the lease: the report and the leadership go at
		// once rather than at its expiry.
		_ = sess.Close()
	}
}

func (w *Worker) sleep(d time.Duration) {
	select {
	case <-w.ctx.Done():
	case <-time.After(d):
	}
}

func (w *Worker) setLeader(b bool) {
	w.mu.Lock()
	w.leader = b
	w.mu.Unlock()
}

// reportInterval is how often a node reports its oldest transaction.
const reportInterval = 500 * time.Millisecond

// reportLoop writes this node's oldest start ts under the session's lease
// when it changes.
func (w *Worker) reportLoop(ctx context.Context, sess *concurrency.Session) {
	key := MinStartTSPrefix + w.cfg.ID
	last := "" // nothing written yet under this lease
	t := time.NewTicker(reportInterval)
	defer t.Stop()
	for {
		v := strconv.FormatUint(w.cfg.Store.MinStartTS(), 10)
		if v != last {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := w.cfg.Client.Put(pctx, key, v, clientv3.WithLease(sess.Lease()))
			cancel()
			if err == nil {
				last = v
			} else {
				w.warn("cannot report the oldest transaction", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// campaign waits to become the leader, then runs GC until ctx ends.
func (w *Worker) campaign(ctx context.Context, sess *concurrency.Session) {
	e := concurrency.NewElection(sess, LeaderKey)
	if err := e.Campaign(ctx, w.cfg.ID); err != nil {
		if ctx.Err() == nil {
			w.warn("GC leader campaign failed", err)
		}
		return
	}
	w.setLeader(true)
	w.cfg.Logger.Info("gcworker: this node is the GC leader", "node", w.cfg.ID)
	w.mu.Lock()
	w.lastRun = time.Time{} // a new leader runs at once
	w.mu.Unlock()
	for {
		set := w.settings()
		w.mu.Lock()
		due := time.Until(w.lastRun.Add(set.RunInterval))
		w.mu.Unlock()
		if due <= 0 {
			if err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
				w.warn("GC run failed", err)
			}
			continue
		}
		// The settings may change: look again at least every second.
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(due, time.Second)):
		}
	}
}

func (w *Worker) settings() Settings {
	s := w.cfg.Settings()
	if s.LifeTime <= 0 {
		s.LifeTime = DefaultSettings.LifeTime
	}
	if s.RunInterval <= 0 {
		s.RunInterval = DefaultSettings.RunInterval
	}
	return s
}

// RunOnce runs GC once: it computes the safe point, resolves the locks
// below it and moves PD's safe point. It records the run (the last run
// time) even when the safe point cannot move.
func (w *Worker) RunOnce(ctx context.Context) error {
	set := w.settings()
	start := time.Now()
	w.mu.Lock()
	w.lastRun = start
	w.mu.Unlock()
	st := State{LeaderID: w.cfg.ID, LeaderDesc: w.cfg.Desc, LastRun: start, Settings: set}
	cur, err := w.cfg.Store.GCSafePoint(ctx)
	if err != nil {
		return fmt.Errorf("read PD's GC safe point: %w", err)
	}
	st.SafePoint = cur
	if set.Enable {
		sp, err := w.safePoint(ctx, set.LifeTime)
		if err != nil {
			return err
		}
		if sp > cur {
			if err := w.cfg.Store.ResolveLocks(ctx, sp); err != nil {
				return fmt.Errorf("resolve locks below %d: %w", sp, err)
			}
			if st.SafePoint, err = w.cfg.Store.UpdateGCSafePoint(ctx, sp); err != nil {
				return fmt.Errorf("update PD's GC safe point to %d: %w", sp, err)
			}
			w.cfg.Logger.Info("gcworker: GC safe point moved", "safe_point", st.SafePoint,
				"took", time.Since(start).Round(time.Millisecond))
		}
	}
	if w.cfg.Record != nil {
		if err := w.cfg.Record(ctx, st); err != nil {
			return fmt.Errorf("record the GC state: %w", err)
		}
	}
	return nil
}

// safePoint is now − lifeTime, kept below every node's oldest open
// transaction and the other services' safe points.
func (w *Worker) safePoint(ctx context.Context, lifeTime time.Duration) (uint64, error) {
	now, err := w.cfg.Store.CurrentTS()
	if err != nil {
		return 0, err
	}
	sp := tso.ComposeTS(tso.PhysicalMs(now)-lifeTime.Milliseconds(), 0)
	oldest, err := w.oldestStartTS(ctx)
	if err != nil {
		return 0, err
	}
	// A transaction's pessimistic locks carry its start ts: keep the safe
	// point below it, so that lock resolution leaves them alone.
	if oldest != 0 && oldest-1 < sp {
		sp = oldest - 1
	}
	return w.cfg.Store.BoundBySafePoints(ctx, sp)
}

// oldestStartTS is the oldest start ts that any node reports (this node's
// read directly), 0 if none.
func (w *Worker) oldestStartTS(ctx context.Context) (uint64, error) {
	oldest := w.cfg.Store.MinStartTS()
	resp, err := w.cfg.Client.Get(ctx, MinStartTSPrefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("read the SQL nodes' oldest transactions: %w", err)
	}
	for _, kv := range resp.Kvs {
		ts, err := strconv.ParseUint(string(kv.Value), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", kv.Key, err)
		}
		if ts != 0 && (oldest == 0 || ts < oldest) {
			oldest = ts
		}
	}
	return oldest, nil
}

func (w *Worker) warn(msg string, err error) {
	if errors.Is(err, context.Canceled) && w.ctx.Err() != nil {
		return
	}
	w.cfg.Logger.Warn("gcworker: "+msg, "node", w.cfg.ID, "err", err)
}
