// Package metrics holds Basalt's Prometheus metrics, in a registry of its
// own (not the client library's global default), and the small functions
// the SQL layer calls to update them. Handler serves the registry on the
// status port's /metrics.
//
// The update functions are safe for concurrent use and allocate nothing:
// every labelled child is resolved once, at init, into arrays indexed by
// small enums (StmtType), so the hot path is an index and an atomic add.
//
// Metrics, all prefixed basalt_:
//
//	server_query_total{type}              counter    statements run, by StmtType
//	server_query_errors_total{type}       counter    statements that failed
//	server_query_duration_seconds{type}   histogram  statement latency, 50µs..10s
//	server_connections                    gauge      open client connections
//	session_transaction_total{result}     counter    transactions: commit, rollback
//
// and the Go runtime's and the process's standard metrics (go_*, process_*).
package metrics

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "basalt"

var registry = prometheus.NewRegistry()

// Registry is the registry /metrics serves. Packages with metrics of their
// own (the store, later) register their collectors here.
func Registry() *prometheus.Registry { return registry }

// Handler serves the registry in the Prometheus exposition formats.
func Handler() http.Handler {
	return promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry})
}

var (
	// connections reports the callback SetConnectionsFunc installs.
	connectionsFunc atomic.Pointer[func() int]

	connections = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace,
		Subsystem: "server",
		Name:      "connections",
		Help:      "Open client connections.",
	}, func() float64 {
		if f := connectionsFunc.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})

	txnTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Subsystem: "session",
		Name:      "transaction_total",
		Help:      "Transactions ended, by result: commit or rollback.",
	}, []string{"result"})
	txnCommitted  = txnTotal.WithLabelValues("commit")
	txnRolledBack = txnTotal.WithLabelValues("rollback")
)

func init() {
	registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		connections,
		txnTotal,
		queryTotal,
		queryErrors,
		queryDuration,
	)
}

// SetConnectionsFunc makes the connections gauge report f() when scraped;
// f is typically (*server.Server).ConnectionCount. It must be safe to call
// from any goroutine. Until it is set the gauge reads 0.
func SetConnectionsFunc(f func() int) {
	if f == nil {
		connectionsFunc.Store(nil)
		return
	}
	connectionsFunc.Store(&f)
}

// TxnCommitted counts a transaction that committed, explicitly or by
// autocommit.
func TxnCommitted() { txnCommitted.Inc() }

// TxnRolledBack counts a transaction that rolled back: by ROLLBACK, by a
// failed commit, or by its session closing.
func TxnRolledBack() { txnRolledBack.Inc() }
