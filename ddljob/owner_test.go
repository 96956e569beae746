package ddljob_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddljob"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/testkit"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// env is two nodes' owners over one etcd and one store; the catalog is
// shared (its lock serializes the nodes as the cluster's etcd mutex
// would).
type env struct {
	cli   *clientv3.Client
	store kv.Storage
	cat   *catalog.Catalog

	mu      sync.Mutex
	ran     []int64 // the jobs Run ran, in order
	running atomic.Int32
	overlap atomic.Bool
	run     func(ctx context.Context, j *catalog.Job) // what Run does besides recording
	recov   []int64
	exists  bool
}

func newEnv(t *testing.T) *env {
	e := &env{cli: testkit.StartEtcdClient(t)}
	st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.store = st
	if e.cat, err = catalog.Open(st); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) start(t *testing.T, id string) *ddljob.Owner {
	o := ddljob.Start(ddljob.Config{
		Client: e.cli, ID: id, TTL: 2 * time.Second, Store: e.store, Catalog: e.cat,
		Run: func(ctx context.Context, j *catalog.Job) {
			if e.running.Add(1) > 1 {
				e.overlap.Store(true)
			}
			defer e.running.Add(-1)
			e.mu.Lock()
			e.ran = append(e.ran, j.ID)
			run := e.run
			e.mu.Unlock()
			if run != nil {
				run(ctx, j)
			}
		},
		Recover: func(ctx context.Context, j *catalog.Job) error {
			e.mu.Lock()
			e.recov = append(e.recov, j.ID)
			e.mu.Unlock()
			return nil
		},
		Exists: func(*catalog.Job) bool { return e.exists },
	})
	t.Cleanup(o.Close)
	return o
}

// TestJobsInOrder: jobs submitted on two nodes at once all end, each
// once, one at a time, in the order of their ids.
func TestJobsInOrder(t *testing.T) {
	e := newEnv(t)
	e.run = func(ctx context.Context, j *catalog.Job) { time.Sleep(5 * time.Millisecond) }
	nodes := []*ddljob.Owner{e.start(t, "n1"), e.start(t, "n2")}
	var wg sync.WaitGroup
	const perNode = 6
	for i, o := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perNode {
				j := &catalog.Job{Type: "create table", Query: fmt.Sprintf("CREATE TABLE t%d_%d (a INT)", i, k)}
				done, err := o.Submit(context.Background(), j)
				if err != nil {
					t.Error(err)
					return
				}
				if done.State != catalog.JobSynced || done.EndTime.Before(done.StartTime) {
					t.Errorf("job %d ended %q, %v to %v", done.ID, done.State, done.StartTime, done.EndTime)
				}
			}
		}()
	}
	wg.Wait()
	if e.overlap.Load() {
		t.Error("two jobs ran at once")
	}
	if len(e.ran) != 2*perNode {
		t.Fatalf("ran %d jobs, want %d: %v", len(e.ran), 2*perNode, e.ran)
	}
	for i := 1; i < len(e.ran); i++ {
		if e.ran[i] <= e.ran[i-1] {
			t.Errorf("jobs ran in the order %v, not by id", e.ran)
			break
		}
	}
	hist, err := ddljob.History(e.store, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2*perNode {
		t.Errorf("history holds %d jobs, want %d", len(hist), 2*perNode)
	}
	if q, _ := ddljob.Queue(e.store); len(q) != 0 {
		t.Errorf("%d jobs left in the queue", len(q))
	}
}

// putJob writes a job record as a runner that died would have left it.
func putJob(t *testing.T, st kv.Storage, j *catalog.Job) {
	txn, err := st.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		t.Fatal(err)
	}
	m := catalog.NewMeta(txn)
	if j.ID, err = m.NewJobID(); err != nil {
		t.Fatal(err)
	}
	if err := m.PutJob(j); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func waitEnded(t *testing.T, st kv.Storage, id int64) *catalog.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		hist, err := ddljob.History(st, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range hist {
			if j.ID == id {
				return j
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %d did not end", id)
	return nil
}

// TestRecoverInterrupted: an owner that finds a job running that no one
// runs recovers it before anything else: an addition that had committed
// steps ends "rollback done" with 8214 and is not run again; one that had
// committed none runs again; a drop whose object the recovery removed
// ends "synced", one whose object is still there runs again.
func TestRecoverInterrupted(t *testing.T) {
	e := newEnv(t)
	added := &catalog.Job{Type: "add index", State: catalog.JobRunning, Runner: "dead", SchemaState: "write only"}
	fresh := &catalog.Job{Type: "add column", State: catalog.JobRunning, Runner: "dead"}
	dropped := &catalog.Job{Type: "drop column", State: catalog.JobRunning, Runner: "dead", SchemaState: "delete only"}
	for _, j := range []*catalog.Job{added, fresh, dropped} {
		putJob(t, e.store, j)
	}
	e.start(t, "n1")
	got := waitEnded(t, e.store, added.ID)
	if got.State != catalog.JobRollbackDone || got.Error == nil || got.Error.Code != ddljob.ErrCancelledDDLJob || !got.Recovered {
		t.Errorf("interrupted ADD INDEX ended %q, %+v, recovered %v; want rollback done, 8214", got.State, got.Error, got.Recovered)
	}
	if got = waitEnded(t, e.store, fresh.ID); got.State != catalog.JobSynced {
		t.Errorf("interrupted job that had done nothing ended %q, want synced (run again)", got.State)
	}
	if got = waitEnded(t, e.store, dropped.ID); got.State != catalog.JobSynced || got.Error != nil {
		t.Errorf("interrupted DROP COLUMN that the recovery finished ended %q, %+v; want synced", got.State, got.Error)
	}
	e.mu.Lock()
	ran, recov := e.ran, e.recov
	e.mu.Unlock()
	if fmt.Sprint(recov) != fmt.Sprint([]int64{added.ID, fresh.ID, dropped.ID}) {
		t.Errorf("recovered %v, want %v", recov, []int64{added.ID, fresh.ID, dropped.ID})
	}
	if fmt.Sprint(ran) != fmt.Sprint([]int64{fresh.ID}) {
		t.Errorf("ran %v, want only job %d again", ran, fresh.ID)
	}

	// A drop whose object is still there (it had not got that far) runs
	// again.
	e.exists = true
	still := &catalog.Job{Type: "drop table", State: catalog.JobRunning, Runner: "dead", SchemaState: "public"}
	putJob(t, e.store, still)
	if got = waitEnded(t, e.store, still.ID); got.State != catalog.JobSynced {
		t.Errorf("interrupted DROP TABLE ended %q, want synced", got.State)
	}
	e.mu.Lock()
	if len(e.ran) != 2 || e.ran[1] != still.ID {
		t.Errorf("ran %v, want job %d run again", e.ran, still.ID)
	}
	e.mu.Unlock()

	// Again once at most: a job that was recovered before and found
	// running again (its run killed its runner) ends.
	twice := &catalog.Job{Type: "add column", State: catalog.JobRunning, Runner: "dead", Recovered: true}
	putJob(t, e.store, twice)
	if got = waitEnded(t, e.store, twice.ID); got.State != catalog.JobRollbackDone || got.Error == nil || got.Error.Code != ddljob.ErrCancelledDDLJob {
		t.Errorf("job interrupted twice ended %q, %+v; want rollback done, 8214", got.State, got.Error)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.ran) != 2 {
		t.Errorf("ran %v: the job interrupted twice ran a third time", e.ran)
	}
}

// TestStepRecord: each schema step of a job rewrites its record in the
// step's transaction: its table and the schema state reached; a job that
// fails before any step is "cancelled", one that fails after is
// "rollback done".
func TestStepRecord(t *testing.T) {
	e := newEnv(t)
	o := e.start(t, "n1")
	var mid *catalog.Job // the record as the step's transaction left it
	e.run = func(ctx context.Context, j *catalog.Job) {
		err := e.cat.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
			if j.TableName == "" {
				return nil
			}
			id, err := m.NewIDs(1)
			if err != nil {
				return err
			}
			db := is.DB(catalog.DefaultDB)
			tb := &catalog.TableInfo{ID: id, DBID: db.ID, Name: j.TableName,
				Columns: []*catalog.ColumnInfo{{ID: 1, Name: "a"}}}
			is.PutTable(db, tb)
			return m.PutTable(tb)
		})
		if err != nil {
			j.Error = &catalog.JobError{Code: 1105, Msg: err.Error()}
			return
		}
		txn, _ := e.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
		mid, _ = catalog.NewMeta(txn).Job(j.ID)
		txn.Rollback()
		if j.Query == "fail" {
			j.Error = &catalog.JobError{Code: 1062, Msg: "Duplicate entry"}
		}
	}
	done, err := o.Submit(context.Background(), &catalog.Job{Type: "create table", DBName: catalog.DefaultDB, TableName: "t1", Query: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	tb := e.cat.InfoSchema().Table(catalog.DefaultDB, "t1")
	if tb == nil || mid == nil || mid.TableID != tb.ID || mid.SchemaState != "public" || mid.State != catalog.JobRunning {
		t.Fatalf("record after the step: %+v (table %+v)", mid, tb)
	}
	if done.State != catalog.JobSynced || done.TableID != tb.ID || done.SchemaID != tb.DBID {
		t.Errorf("ended %+v", done)
	}
	done, err = o.Submit(context.Background(), &catalog.Job{Type: "add index", DBName: catalog.DefaultDB, TableName: "t2", Query: "fail"})
	if err != nil {
		t.Fatal(err)
	}
	if done.State != catalog.JobRollbackDone || done.Error == nil || done.Error.Code != 1062 {
		t.Errorf("job failing after a step ended %q, %+v; want rollback done, 1062", done.State, done.Error)
	}
	// What a failed job left (had its own undo failed) is taken away
	// before it ends.
	e.mu.Lock()
	if len(e.recov) != 1 || e.recov[0] != done.ID {
		t.Errorf("recovered %v after the failed job %d", e.recov, done.ID)
	}
	e.mu.Unlock()
	e.mu.Lock()
	e.run = func(ctx context.Context, j *catalog.Job) {
		j.Error = &catalog.JobError{Code: 1050, Msg: "Table 't1' already exists"}
	}
	e.mu.Unlock()
	if done, err = o.Submit(context.Background(), &catalog.Job{Type: "create table", Query: "x"}); err != nil {
		t.Fatal(err)
	}
	if done.State != catalog.JobCancelled || done.SchemaState != "none" {
		t.Errorf("job failing before any step ended %q (%q); want cancelled", done.State, done.SchemaState)
	}
}

// TestFence: a runner whose job another owner took over (it was cut off
// and came back) commits no more steps of it.
func TestFence(t *testing.T) {
	e := newEnv(t)
	stepErr := make(chan error, 1)
	e.mu.Lock()
	e.run = func(ctx context.Context, j *catalog.Job) {
		if j.Recovered {
			return
		}
		// Another owner claims the job, as recoverJob does.
		txn, _ := e.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
		cur, _ := catalog.NewMeta(txn).Job(j.ID)
		cur.Runner = "other"
		if err := catalog.NewMeta(txn).PutJob(cur); err != nil {
			t.Error(err)
		}
		if err := txn.Commit(ctx); err != nil {
			t.Error(err)
		}
		stepErr <- e.cat.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error { return nil })
	}
	e.mu.Unlock()
	v := e.cat.InfoSchema().Version
	o := e.start(t, "n1")
	done, err := o.Submit(context.Background(), &catalog.Job{Type: "add column", Query: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-stepErr; !errors.Is(err, ddljob.ErrTakenOver) {
		t.Errorf("a step of a job taken over: %v, want ErrTakenOver", err)
	}
	if got := e.cat.InfoSchema().Version; got != v {
		t.Errorf("schema version %d after the fenced step, want %d", got, v)
	}
	// The owner found it running by "other", recovered it and ran it
	// again (it had committed no step).
	if !done.Recovered || done.State != catalog.JobSynced {
		t.Errorf("job ended %q, recovered %v", done.State, done.Recovered)
	}
}

// TestCancel: ADMIN CANCEL DDL JOBS ends a queued job at once, "cancelled",
// without running it, and stops a running one, which is taken back and
// ends "rollback done"; both clients get 8214. A finished job or an
// unknown one cannot be cancelled.
func TestCancel(t *testing.T) {
	e := newEnv(t)
	started := make(chan int64, 4)
	e.mu.Lock()
	e.run = func(ctx context.Context, j *catalog.Job) {
		// A step, then a long backfill that only cancellation ends.
		if err := e.cat.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error { return nil }); err != nil {
			j.Error = &catalog.JobError{Code: 1105, Msg: err.Error()}
			return
		}
		started <- j.ID
		<-ctx.Done()
		j.Error = &catalog.JobError{Code: 1317, Msg: "Query execution was interrupted"}
	}
	e.mu.Unlock()
	o := e.start(t, "n1")
	type result struct {
		j   *catalog.Job
		err error
	}
	submit := func(q string) chan result {
		c := make(chan result, 1)
		go func() {
			j, err := o.Submit(context.Background(), &catalog.Job{Type: "add index", DBName: catalog.DefaultDB, Query: q})
			c <- result{j, err}
		}()
		return c
	}
	first := submit("first")
	running := <-started
	second := submit("second")
	var queued int64
	for deadline := time.Now().Add(10 * time.Second); queued == 0; {
		q, err := ddljob.Queue(e.store)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range q {
			if j.Query == "second" {
				queued = j.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the second job was not queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := o.Cancel(context.Background(), queued); err != nil {
		t.Fatal(err)
	}
	r := <-second
	if r.err != nil || r.j.State != catalog.JobCancelled || r.j.Error == nil || r.j.Error.Code != ddljob.ErrCancelledDDLJob {
		t.Errorf("queued job cancelled: %+v, %v", r.j, r.err)
	}
	if err := o.Cancel(context.Background(), running); err != nil {
		t.Fatal(err)
	}
	r = <-first
	if r.err != nil || r.j.State != catalog.JobRollbackDone || r.j.Error == nil || r.j.Error.Code != ddljob.ErrCancelledDDLJob {
		t.Errorf("running job cancelled: %+v, %v", r.j, r.err)
	}
	e.mu.Lock()
	if fmt.Sprint(e.ran) != fmt.Sprint([]int64{running}) || fmt.Sprint(e.recov) != fmt.Sprint([]int64{running}) {
		t.Errorf("ran %v, recovered %v; want only job %d, once each", e.ran, e.recov, running)
	}
	e.mu.Unlock()
	if err := o.Cancel(context.Background(), running); !errors.Is(err, ddljob.ErrJobFinished) {
		t.Errorf("cancelling a finished job: %v", err)
	}
	if err := o.Cancel(context.Background(), 999); !errors.Is(err, ddljob.ErrJobNotFound) {
		t.Errorf("cancelling an unknown job: %v", err)
	}
}
