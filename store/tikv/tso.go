package tikv

import (
	"context"
	"sync"
	"time"

	pd "github.com/tikv/pd/client"
	"github.com/tikv/pd/client/pkg/caller"
)

// tsoWait bounds how long a statement waits for a timestamp from PD: past
// it, the statement fails with kv.ErrPDTimeout (TiDB's 9001 "PD server
// timeout"). client-go's own budget (TsoMaxBackoff, 15 s) counts only its
// sleeps between attempts, not the attempts, each of which waits for
// pd/client to give up on a TSO stream it cannot open: without a bound a
// statement waits a minute or more while PD is down. 15 s of wall time
// leaves a change of PD leader room to finish.
const tsoWait = 15 * time.Second

// boundedTSO is the PD client client-go's oracle gets timestamps from. A
// commit's context may carry a tsoWatch (watchTSO): then a wait for a
// timestamp that has not succeeded within tsoWait of the first attempt
// cancels the commit, with kv.ErrPDTimeout as the cause. Other calls pass
// through.
type boundedTSO struct{ pd.Client }

// WithCallerComponent keeps the wrapper: client-go's oracle and codec
// call it on the client they are given.
func (c boundedTSO) WithCallerComponent(component caller.Component) pd.Client {
	return boundedTSO{c.Client.WithCallerComponent(component)}
}

func (c boundedTSO) GetTS(ctx context.Context) (int64, int64, error) {
	w, _ := ctx.Value(tsoWatchKey{}).(*tsoWatch)
	if w == nil {
		return c.Client.GetTS(ctx)
	}
	w.arm()
	physical, logical, err := c.Client.GetTS(ctx)
	if err == nil && !w.succeeded() {
		// The watch gave up while this one was on its way: the commit
		// must not go on with it.
		return 0, 0, errTSOWait
	}
	return physical, logical, err
}

type tsoWatchKey struct{}

// tsoWatch cancels one commit when its timestamps keep failing. The
// invariant that makes the cancellation safe: it happens only while a
// GetTS is outstanding or failing and none has succeeded since, so
// client-go is waiting for a timestamp and has sent no commit that the
// cancellation could leave undetermined; a GetTS that succeeds after it
// reports failure instead.
type tsoWatch struct {
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	timer *time.Timer // armed: a wait for a timestamp has not succeeded yet
	gen   int         // which timer is the armed one
	fired bool
}

// watchTSO returns ctx with a tsoWatch, and the function that ends it.
func watchTSO(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &tsoWatch{cancel: cancel}
	return context.WithValue(ctx, tsoWatchKey{}, w), func() {
		w.succeeded()
		cancel(nil)
	}
}

// arm starts the clock at the first of a run of attempts.
func (w *tsoWatch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil || w.fired {
		return
	}
	w.gen++
	gen := w.gen
	w.timer = time.AfterFunc(tsoWait, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.timer != nil && w.gen == gen {
			w.fired = true
			w.cancel(errTSOWait)
		}
	})
}

// succeeded disarms the clock after a timestamp arrived; false if it
// had already fired.
func (w *tsoWatch) succeeded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	return !w.fired
}
