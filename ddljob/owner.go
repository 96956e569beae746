// Package ddljob is a cluster's DDL job queue and DDL owner, as TiDB's:
// the SQL node that receives a schema-change statement queues it as a job
// in KV (catalog.Job) and waits for it to end; one SQL node, elected
// through PD's etcd, is the DDL owner and runs the jobs one at a time, in
// the order they were queued, through the node's own statement code
// (Config.Run). It is used in cluster mode only; an embedded store has
// one node, which runs its statements itself.
//
// Keys in etcd:
//
//	/tidb/ddl/fg/owner     the election (TiDB's key), under the owner's lease
//	/basalt/ddl/job_notify written when a job is queued or ends: the owner
//	                       and the waiting nodes watch it (and poll KV, so
//	                       that a lost notification costs a poll)
//
// The invariants:
//   - The owner runs a job while holding the cluster's schema-change
//     lock (catalog.LockDDL), for the whole job; the statement's own
//     LockDDL under the job's context takes nothing (catalog.WithLockHeld).
//     So a job found "running" by an owner that holds the lock was left by
//     a runner that lost the lock: it died, or its lease expired.
//   - Every schema step of a job rewrites the job's record in the step's
//     own transaction (catalog.WithStepHook): the record says what the
//     stored schema reached. The step also checks that the record still
//     names its runner, and an owner that takes a job over names itself
//     first: a runner that was only cut off (its lease expired, it came
//     back) commits no more steps of a job another owner took over.
//   - A job left running is recovered before any other runs: what its
//     steps left not public is taken away (Config.Recover, ddl's
//     RecoverSchema), and the job either runs again, once at most (it had
//     committed no step, or it is a drop whose object is still there) or
//     ends, as "synced" (a drop the recovery finished) or "rollback done"
//     with TiDB's 8214 (an addition or a change the recovery took back).
//     A job that failed is recovered the same way before it ends, in case
//     its own undo failed too: no job leaves a non-public object behind.
//
// All methods are safe for concurrent use.
package ddljob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// The keys in etcd (see the package comment).
const (
	OwnerKey  = "/tidb/ddl/fg/owner"
	NotifyKey = "/basalt/ddl/job_notify"
)

// pollInterval is how often the owner and the waiting nodes read the
// queue without a notification.
const pollInterval = 250 * time.Millisecond

// Config configures an Owner.
type Config struct {
	Client  *clientv3.Client // PD's etcd
	ID      string           // this node's name in etcd (schemasync's)
	TTL     time.Duration    // the owner's lease: how soon another node takes over
	Store   kv.Storage
	Catalog *catalog.Catalog
	// Run runs job j's statement and records its outcome in j (RowCount,
	// Info, Warnings, Error). ctx carries the held lock and the step
	// hook.
	Run func(ctx context.Context, j *catalog.Job)
	// Recover takes away what an interrupted job left (see the package
	// comment) under ctx, which carries the held lock.
	Recover func(ctx context.Context, j *catalog.Job) error
	// Exists reports whether the object a drop job j drops is still in the
	// schema.
	Exists func(j *catalog.Job) bool
	Logger *slog.Logger
}

// Owner is one SQL node's part in the DDL job queue: its campaign for
// ownership, the running of jobs while it is the owner, and Submit.
type Owner struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	owner bool
}

// Start starts the node's campaign; Close stops it.
func Start(cfg Config) *Owner {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TTL < 2*time.Second {
		cfg.TTL = 2 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Owner{cfg: cfg, ctx: ctx, cancel: cancel}
	o.wg.Add(1)
	go o.loop()
	return o
}

// Close stops the campaign; the lease is revoked, so that another node
// takes over at once. It waits for the job running here, if any, to end,
// for at most a lease: a job still running then is left to the next
// owner, which recovers it as the job of a runner that died.
func (o *Owner) Close() {
	o.cancel()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(o.cfg.TTL):
		o.cfg.Logger.Warn("ddljob: closing with a DDL job still running; the next DDL owner recovers it", "node", o.cfg.ID)
	}
}

// IsOwner reports whether this node is the DDL owner now.
func (o *Owner) IsOwner() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.owner
}

func (o *Owner) setOwner(b bool) {
	o.mu.Lock()
	o.owner = b
	o.mu.Unlock()
}

// loop keeps one etcd session at a time with the campaign under it (as
// gcworker's), and starts over when the session is lost.
func (o *Owner) loop() {
	defer o.wg.Done()
	for o.ctx.Err() == nil {
		sess, err := concurrency.NewSession(o.cfg.Client, concurrency.WithTTL(int(o.cfg.TTL/time.Second)),
			concurrency.WithContext(o.ctx))
		if err != nil {
			o.cfg.Logger.Warn("ddljob: cannot open an etcd session", "err", err)
			o.sleep(time.Second)
			continue
		}
		ctx, cancel := context.WithCancel(o.ctx)
		done := make(chan struct{})
		go func() { defer close(done); o.campaign(ctx, sess) }()
		select {
		case <-o.ctx.Done():
		case <-sess.Done():
			o.cfg.Logger.Warn("ddljob: etcd session lost", "node", o.cfg.ID)
		case <-done:
		}
		cancel()
		<-done
		o.setOwner(false)
		_ = sess.Close()
	}
}

func (o *Owner) sleep(d time.Duration) {
	select {
	case <-o.ctx.Done():
	case <-time.After(d):
	}
}

// campaign waits to become the owner, then runs the queue until ctx ends.
func (o *Owner) campaign(ctx context.Context, sess *concurrency.Session) {
	e := concurrency.NewElection(sess, OwnerKey)
	if err := e.Campaign(ctx, o.cfg.ID); err != nil {
		if ctx.Err() == nil {
			o.cfg.Logger.Warn("ddljob: DDL owner campaign failed", "err", err)
			o.sleep(time.Second)
		}
		return
	}
	o.setOwner(true)
	o.cfg.Logger.Info("ddljob: this node is the DDL owner", "node", o.cfg.ID)
	watch := o.cfg.Client.Watch(ctx, NotifyKey)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if err := o.runQueue(ctx); err != nil && ctx.Err() == nil {
			o.cfg.Logger.Warn("ddljob: running the DDL job queue", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case _, ok := <-watch:
			if !ok {
				watch = o.cfg.Client.Watch(ctx, NotifyKey)
			}
		}
	}
}

// runQueue runs the queued jobs, oldest first, until none is left or ctx
// ends (the node is no longer the owner).
func (o *Owner) runQueue(ctx context.Context) error {
	for ctx.Err() == nil {
		more, err := o.runOne(ctx)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// runOne runs the oldest queued job under the schema-change lock, or
// recovers it if its runner died; it returns false if the queue is
// empty.
func (o *Owner) runOne(ctx context.Context) (bool, error) {
	jobs, err := o.queue()
	if err != nil || len(jobs) == 0 {
		return false, err
	}
	unlock, err := o.cfg.Catalog.LockDDL(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	// Read again under the lock: a runner that held it until now is done.
	if jobs, err = o.queue(); err != nil || len(jobs) == 0 {
		return false, err
	}
	j := jobs[0]
	// The job runs to its end even if this node stops being the owner
	// meanwhile: it holds the lock, and a step of a runner that lost it
	// fails on the stored schema version.
	jctx := catalog.WithLockHeld(context.WithoutCancel(ctx))
	if j.State == catalog.JobRunning {
		return true, o.recoverJob(jctx, j)
	}
	j.State, j.Runner, j.StartTime = catalog.JobRunning, o.cfg.ID, time.Now()
	err = o.update(ctx, func(m *catalog.Meta) error {
		// Still queued (not cancelled meanwhile): the read makes a
		// concurrent Cancel conflict with this.
		if cur, err := m.Job(j.ID); err != nil || cur == nil || cur.State != catalog.JobQueueing {
			return errors.Join(err, errGone)
		}
		return m.PutJob(j)
	})
	if errors.Is(err, errGone) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	o.cfg.Logger.Info("ddljob: running DDL job", "job", j.ID, "query", j.Query)
	rctx, stop := context.WithCancel(jctx)
	watched := make(chan struct{})
	go func() { defer close(watched); o.watchCancel(rctx, j.ID, stop) }()
	o.cfg.Run(catalog.WithStepHook(rctx, o.stepHook(j)), j)
	stop()
	<-watched
	cur, err := o.job(j.ID)
	if err != nil {
		return false, err
	}
	if cur == nil || cur.Runner != j.Runner || cur.State != catalog.JobRunning {
		// Taken over meanwhile: the new owner ends it.
		o.cfg.Logger.Warn("ddljob: DDL job taken over by another owner", "job", j.ID)
		return true, nil
	}
	if cur.Cancelling && j.Error != nil {
		j.Cancelling = true
		j.Error = cancelledError()
	}
	if j.Error != nil {
		// A failed change takes itself back, but its own undo may have
		// failed too: nothing it left may outlive the job.
		if err := o.cfg.Recover(jctx, j); err != nil {
			// Left running: the next round recovers it as interrupted.
			return false, fmt.Errorf("ddljob: taking back what failed job %d left: %w", j.ID, err)
		}
	}
	switch {
	case j.Error == nil:
		j.State = catalog.JobSynced
	case j.SchemaState == "":
		j.State = catalog.JobCancelled // it changed nothing
	default:
		j.State = catalog.JobRollbackDone
	}
	if j.State != catalog.JobSynced || isDrop(j.Type) {
		// TiDB's: the object the job added or dropped is gone.
		j.SchemaState = "none"
	}
	return true, o.finish(jctx, j)
}

// recoverJob takes away what job j, which a runner that died left
// running, left in the schema, and ends it or queues it again.
func (o *Owner) recoverJob(ctx context.Context, j *catalog.Job) error {
	o.cfg.Logger.Warn("ddljob: recovering a DDL job whose runner left", "job", j.ID, "runner", j.Runner,
		"schema_state", j.SchemaState, "query", j.Query)
	// Claim it first: a runner that is not dead after all, only cut off,
	// commits no more steps of it (stepHook's fence).
	j.Runner = o.cfg.ID
	err := o.update(ctx, func(m *catalog.Meta) error {
		cur, err := m.Job(j.ID)
		if err != nil || cur == nil || cur.State != catalog.JobRunning {
			return errors.Join(err, errGone)
		}
		j.Cancelling = cur.Cancelling
		return m.PutJob(j)
	})
	if errors.Is(err, errGone) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := o.cfg.Recover(ctx, j); err != nil {
		return fmt.Errorf("ddljob: recovering job %d: %w", j.ID, err)
	}
	again := j.SchemaState == ""
	if isDrop(j.Type) {
		again = o.cfg.Exists(j)
	}
	// Once only: a job whose run kills its runner must not take every
	// owner down in turn.
	again = again && !j.Recovered && !j.Cancelling
	j.Recovered = true
	if again {
		j.State, j.Runner, j.StartTime = catalog.JobQueueing, "", time.Time{}
		return o.update(ctx, func(m *catalog.Meta) error { return m.PutJob(j) })
	}
	switch {
	case isDrop(j.Type) && !o.cfg.Exists(j):
		j.State = catalog.JobSynced
	case j.Cancelling:
		j.State, j.Error = catalog.JobRollbackDone, cancelledError()
	default:
		j.State = catalog.JobRollbackDone
		j.Error = &catalog.JobError{Code: ErrCancelledDDLJob, State: "HY000",
			Msg: "Cancelled DDL job: the SQL node running it left the cluster, and what it had changed was taken back"}
	}
	j.SchemaState = "none"
	return o.finish(ctx, j)
}

// errGone: the job left the queue before it could run (cancelled).
var errGone = errors.New("ddljob: the job left the queue")

// ErrCancelledDDLJob is TiDB's error code for a cancelled DDL job.
const ErrCancelledDDLJob = 8214

func cancelledError() *catalog.JobError {
	return &catalog.JobError{Code: ErrCancelledDDLJob, State: "HY000", Msg: "Cancelled DDL job"}
}

// watchCancel cancels a running job's context (stop) once ADMIN CANCEL
// DDL JOBS marked it, polling its record until ctx ends.
func (o *Owner) watchCancel(ctx context.Context, id int64, stop context.CancelFunc) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if cur, err := o.job(id); err == nil && cur != nil && cur.Cancelling {
			o.cfg.Logger.Info("ddljob: cancelling DDL job", "job", id)
			stop()
			return
		}
	}
}

// Errors of Cancel, as TiDB words them.
var (
	ErrJobNotFound = errors.New("DDL Job not found")
	ErrJobFinished = errors.New("job is finished, so can't be cancelled")
)

// Cancel cancels job id (ADMIN CANCEL DDL JOBS): a queued job ends
// "cancelled" at once; a running one is marked, and its runner stops it
// at its next step or sooner and takes back what it did (the job ends
// "rollback done", or "synced" if it had just finished). Its client gets
// TiDB's 8214.
func (o *Owner) Cancel(ctx context.Context, id int64) error {
	err := o.update(ctx, func(m *catalog.Meta) error {
		cur, err := m.Job(id)
		switch {
		case err != nil:
			return err
		case cur == nil:
			return ErrJobNotFound
		case cur.Done():
			return ErrJobFinished
		case cur.State == catalog.JobQueueing:
			cur.State, cur.SchemaState, cur.Error, cur.EndTime = catalog.JobCancelled, "none", cancelledError(), time.Now()
			return m.FinishJob(cur)
		}
		cur.Cancelling = true
		return m.PutJob(cur)
	})
	if err == nil {
		o.notify(ctx)
	}
	return err
}

func isDrop(typ string) bool {
	switch typ {
	case "drop table", "drop schema", "drop index", "drop column", "drop primary key", "truncate table":
		return true
	}
	return false
}

// finish moves j to the history and tells the waiting nodes.
func (o *Owner) finish(ctx context.Context, j *catalog.Job) error {
	j.EndTime = time.Now()
	if err := o.update(ctx, func(m *catalog.Meta) error { return m.FinishJob(j) }); err != nil {
		return err
	}
	o.notify(ctx)
	o.cfg.Logger.Info("ddljob: DDL job ended", "job", j.ID, "state", j.State)
	return nil
}

func (o *Owner) notify(ctx context.Context) {
	nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := o.cfg.Client.Put(nctx, NotifyKey, time.Now().Format(time.RFC3339Nano)); err != nil {
		o.cfg.Logger.Warn("ddljob: cannot notify (others poll)", "err", err)
	}
}

// update runs fn in a transaction of its own, again after a write
// conflict.
func (o *Owner) update(ctx context.Context, fn func(m *catalog.Meta) error) error {
	for attempt := 0; ; attempt++ {
		txn, err := o.cfg.Store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
		if err != nil {
			return err
		}
		if err = fn(catalog.NewMeta(txn)); err == nil {
			err = txn.Commit(ctx)
		} else {
			txn.Rollback()
		}
		if err == nil || attempt >= 100 || !errors.Is(err, kv.ErrWriteConflict) {
			return err
		}
		// Many sessions queueing at once conflict on the job id counter.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(1+rand.IntN(10*min(attempt+1, 10))) * time.Millisecond):
		}
	}
}

// queue reads the queued and running jobs, oldest first.
func (o *Owner) queue() ([]*catalog.Job, error) {
	return Queue(o.cfg.Store)
}

// Queue reads the queued and running jobs of store, oldest first.
func Queue(store kv.Storage) ([]*catalog.Job, error) {
	txn, err := store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return nil, err
	}
	defer txn.Rollback()
	return catalog.NewMeta(txn).Jobs()
}

// History reads the last n ended jobs of store, newest first.
func History(store kv.Storage, n int) ([]*catalog.Job, error) {
	txn, err := store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return nil, err
	}
	defer txn.Rollback()
	return catalog.NewMeta(txn).History(n)
}

// Submit queues job j and waits until it ended; it returns the ended job
// (its State, Error, Warnings, RowCount). If ctx ends first, the job goes
// on without its client, as TiDB's.
func (o *Owner) Submit(ctx context.Context, j *catalog.Job) (*catalog.Job, error) {
	j.State, j.CreateTime = catalog.JobQueueing, time.Now()
	err := o.update(ctx, func(m *catalog.Meta) error {
		id, err := m.NewJobID()
		if err != nil {
			return err
		}
		j.ID = id
		return m.PutJob(j)
	})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := o.cfg.Client.Watch(wctx, NotifyKey)
	o.notify(ctx)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		done, err := o.job(j.ID)
		if err != nil {
			return nil, err
		}
		if done != nil && done.Done() {
			return done, nil
		}
		if done == nil {
			return nil, fmt.Errorf("ddljob: job %d is gone", j.ID)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		case _, ok := <-watch:
			if !ok {
				watch = o.cfg.Client.Watch(wctx, NotifyKey)
			}
		}
	}
}

func (o *Owner) job(id int64) (*catalog.Job, error) {
	txn, err := o.cfg.Store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return nil, err
	}
	defer txn.Rollback()
	return catalog.NewMeta(txn).Job(id)
}

// OwnerID is the node that is the DDL owner now, "" if none is.
func (o *Owner) OwnerID(ctx context.Context) (string, error) {
	resp, err := o.cfg.Client.Get(ctx, OwnerKey+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}
