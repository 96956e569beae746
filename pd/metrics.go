package pd

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PD's metrics, on the client URL's /metrics next to etcd's (both on the
// Prometheus default registry, which etcd's handler serves), with PD-like
// names.
var (
	tsoRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pd_tso_requests_total", Help: "TSO requests (batches of timestamps) served.",
	})
	tsoTimestamps = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pd_tso_timestamps_total", Help: "Timestamps handed out.",
	})
	tsoDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "pd_tso_handle_duration_seconds", Help: "Time to serve one TSO request.",
		Buckets: prometheus.ExponentialBuckets(0.000005, 2, 16), // 5 µs .. 160 ms
	})
	operatorEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pd_operators_total", Help: "Operators, by scheduler (or admin) and event (created, finished, timeout, canceled, replaced).",
	}, []string{"kind", "event"})
	leaderTerms = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pd_leader_changes_total", Help: "Terms this member started as leader.",
	})
)

func init() {
	prometheus.MustRegister(tsoRequests, tsoTimestamps, tsoDuration, operatorEvents, leaderTerms)
}

// clusterCollector reports the directory's sizes while this member
// leads.
type clusterCollector struct{ s *Server }

var (
	regionsDesc = prometheus.NewDesc("pd_cluster_regions", "Regions in the directory.", nil, nil)
	storesDesc  = prometheus.NewDesc("pd_cluster_stores", "Stores, by state.", []string{"state"}, nil)
)

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- regionsDesc
	ch <- storesDesc
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.s.IsLeader() {
		return
	}
	cl := c.s.cl
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	ch <- prometheus.MustNewConstMetric(regionsDesc, prometheus.GaugeValue, float64(len(cl.regions.sorted)))
	states := map[string]int{"Up": 0, "Disconnected": 0, "Down": 0, "Offline": 0, "Tombstone": 0}
	h := &httpAPI{s: c.s}
	for _, info := range cl.stores {
		states[h.stateName(info.meta, info.lastHeartbeat)]++
	}
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(storesDesc, prometheus.GaugeValue, float64(n), st)
	}
}

func observeTSO(start time.Time, count uint32) {
	tsoRequests.Inc()
	tsoTimestamps.Add(float64(count))
	tsoDuration.Observe(time.Since(start).Seconds())
}
