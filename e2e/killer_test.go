package e2e

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// A crash run: workload clients write until their connections break, and
// the test kills the server with SIGKILL at a random moment once they have
// made progress. crashRun holds what the clients and the killer share.
type crashRun struct {
	// killing is set just before SIGKILL: from then on a broken connection
	// is expected, before it a failure.
	killing atomic.Bool
	// stop asks the clients to finish (a run that ends without a kill).
	stop atomic.Bool
	// retryAlso, if set, names more errors after which a transfer is
	// retried: those a fault test expects while a part of the cluster is
	// down. Set it before the run starts.
	retryAlso func(error) bool
	// reconnect, if set, has a client whose connection breaks take a new
	// one from its pool and carry on, rather than end: the SQL node it
	// was on died, and HAProxy sends the new connection to another. Set
	// it before the run starts.
	reconnect bool
	// acks counts acknowledged operations; the first one closes progress.
	acks     atomic.Int64
	progress chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
}

func newCrashRun() *crashRun { return &crashRun{progress: make(chan struct{})} }

// ack records an acknowledged operation.
func (r *crashRun) ack() {
	r.acks.Add(1)
	r.once.Do(func() { close(r.progress) })
}

// over reports whether a client should stop.
func (r *crashRun) over() bool { return r.stop.Load() || r.killing.Load() }

// goClient runs fn on a goroutine the run waits for.
func (r *crashRun) goClient(fn func()) { r.wg.Go(fn) }

// progressTimeout bounds how long a (re)started server may take to
// acknowledge its first operation.
const progressTimeout = 60 * time.Second

// killAfterProgress waits until the clients have had an operation
// acknowledged, lets them run for a random time up to maxDelay, kills srv
// with SIGKILL, and waits for the clients to notice. It fails the test if
// there is no progress (the server accepts no load).
func (r *crashRun) killAfterProgress(t *testing.T, srv *testkit.Server, rng *rand.Rand, maxDelay time.Duration) {
	t.Helper()
	select {
	case <-r.progress:
		time.Sleep(time.Duration(rng.Int64N(int64(maxDelay) + 1)))
	case <-time.After(progressTimeout):
		t.Errorf("no operation was acknowledged within %v of starting the clients", progressTimeout)
	}
	r.killing.Store(true)
	srv.Kill()
	r.wg.Wait()
}

// finish stops the clients after d, without a kill, and waits for them.
func (r *crashRun) finish(d time.Duration) {
	select {
	case <-r.progress:
	case <-time.After(progressTimeout):
	}
	time.Sleep(d)
	r.stop.Store(true)
	r.wg.Wait()
}

// background is the context of workload clients: statements are bounded
// by opTimeout each, not by the run.
var background = context.Background()
