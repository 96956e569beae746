package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TxnBuckets are the upper bounds, in seconds, of the transaction
// duration histogram: an autocommit point write takes about 100µs here,
// an interactive transaction seconds.
var TxnBuckets = []float64{
	100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
	1, 2.5, 5, 10, 30, 60,
}

// txnDuration is TiDB's tidb_session_transaction_duration_seconds, with
// its labels: txn_mode (pessimistic, optimistic), type (commit, abort)
// and scope (general; Basalt's own statements do not count).
var txnDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: "tidb",
	Subsystem: "session",
	Name:      "transaction_duration_seconds",
	Help:      "Bucketed histogram of a transaction execution duration, including retry.",
	Buckets:   TxnBuckets,
}, []string{"txn_mode", "type", "scope"})

// txnDurationBy[pessimistic][committed].
var txnDurationBy [2][2]prometheus.Observer

func init() {
	for p, mode := range []string{"optimistic", "pessimistic"} {
		for c, typ := range []string{"abort", "commit"} {
			txnDurationBy[p][c] = txnDuration.WithLabelValues(mode, typ, "general")
		}
	}
}

// ObserveTxn records a transaction that ended after elapsed: committed,
// or aborted (ROLLBACK, a failed commit, its session closing).
// pessimistic is its mode. It does not allocate.
func ObserveTxn(pessimistic, committed bool, elapsed time.Duration) {
	txnDurationBy[b2i(pessimistic)][b2i(committed)].Observe(elapsed.Seconds())
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
