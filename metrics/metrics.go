// Package metrics holds Basalt's Prometheus metrics, in a registry of its
// own (not the client library's global default), and the small functions
// the SQL layer calls to update them. Handler serves the registry on the
// status port's /metrics.
//
// The update functions are safe for concurrent use and allocate nothing:
// every labelled child is resolved once, at init, into arrays indexed by
// small enums (StmtType), so the hot path is an index and an atomic add.
//
// Metrics TiDB has carry TiDB's names and labels, so that its dashboards
// and alerts read them (stmt.go, command.go, txn.go):
//
//	tidb_server_handle_query_duration_seconds{sql_type}  histogram  statement latency, 50µs..10s
//	tidb_server_query_total{type,result}                 counter    protocol commands: Query, StmtExecute, ... OK / Error
//	tidb_server_execute_error_total{type}                counter    failed statements, by MySQL error code
//	tidb_server_connections                              gauge      open client connections
//	tidb_server_plan_cache_total{type="prepare"}         counter    prepared statements planned from the plan cache
//	tidb_server_plan_cache_miss_total{type="prepare"}    counter    ... planned again
//	tidb_session_transaction_duration_seconds{txn_mode,type,scope}  histogram  transactions: commit, abort
//
// Those only Basalt has are prefixed basalt_:
//
//	basalt_store_latest_cache_chunks                     gauge      chunks in the latest-version cache
//	basalt_store_latest_cache_bytes                      gauge      their keys and values
//	basalt_store_latest_cache_loads_total                counter    chunks loaded
//	basalt_store_latest_cache_evictions_total            counter    chunks evicted for room
//	basalt_store_latest_cache_refused_total              counter    chunks hot enough to load, refused by a full cache
//
// and the Go runtime's and the process's standard metrics (go_*, process_*).
package metrics

import (
	"net/http"
	"regexp"
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
		Namespace: "tidb",
		Subsystem: "server",
		Name:      "connections",
		Help:      "Number of connections.",
	}, func() float64 {
		if f := connectionsFunc.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
)

// LatestCacheStats is what the store's latest-version cache reports (see
// store/mvcc/latest.go).
type LatestCacheStats struct {
	Chunks    int
	Bytes     int64
	Loads     uint64
	Evictions uint64
	Refused   uint64
}

// latestCacheFunc reports the callback SetLatestCacheFunc installs.
var latestCacheFunc atomic.Pointer[func() LatestCacheStats]

func latestCacheStat(pick func(LatestCacheStats) float64) func() float64 {
	return func() float64 {
		if f := latestCacheFunc.Load(); f != nil {
			return pick((*f)())
		}
		return 0
	}
}

// SetLatestCacheFunc makes the store_latest_cache_* metrics report f()
// when scraped. It must be safe to call from any goroutine. Until it is
// set they read 0.
func SetLatestCacheFunc(f func() LatestCacheStats) {
	if f == nil {
		latestCacheFunc.Store(nil)
		return
	}
	latestCacheFunc.Store(&f)
}

func latestCacheMetrics() []prometheus.Collector {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: namespace, Subsystem: "store", Name: "latest_cache_" + name, Help: help}
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("chunks", "Chunks of keys in the latest-version cache.")),
			latestCacheStat(func(s LatestCacheStats) float64 { return float64(s.Chunks) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("bytes", "Bytes of keys and values in the latest-version cache.")),
			latestCacheStat(func(s LatestCacheStats) float64 { return float64(s.Bytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts(opts("loads_total", "Chunks loaded into the latest-version cache.")),
			latestCacheStat(func(s LatestCacheStats) float64 { return float64(s.Loads) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts(opts("evictions_total", "Chunks evicted from the latest-version cache to stay under its size.")),
			latestCacheStat(func(s LatestCacheStats) float64 { return float64(s.Evictions) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts(opts("refused_total", "Chunks hot enough to load that a full latest-version cache refused: no hotter than the chunk they would evict.")),
			latestCacheStat(func(s LatestCacheStats) float64 { return float64(s.Refused) })),
	}
}

func init() {
	registry.MustRegister(latestCacheMetrics()...)
	registry.MustRegister(
		// go_sched_latencies_seconds: how long goroutines waited, runnable,
		// for a processor (a connection whose command has arrived waits
		// there); go_sched_pauses_total_gc_seconds: the collector's
		// stop-the-world pauses. docs/observability.md.
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sched/(latencies|pauses/total/gc):seconds$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		connections,
		queryTotal,
		queryDuration,
		executeErrors,
		planCache,
		planCacheMiss,
		txnDuration,
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
