package storenode

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The store's own metrics on its status port's /metrics, beside the Go
// runtime's and the process's (the Prometheus default registry), with
// TiKV-like names:
//
//	tikv_storage_prewrite_total{type}          counter  prewrites answered without an error, by how
//	                                                    their transaction commits: 2pc (neither async
//	                                                    commit nor 1PC asked), async_commit (answered
//	                                                    with a min_commit_ts), 1pc (committed at once:
//	                                                    one_pc_commit_ts), fallback (async commit or 1PC
//	                                                    asked, ordinary locks written: a KvCommit follows)
//	tikv_storage_max_ts_not_synced_total       counter  async-commit and 1PC prewrites refused until the
//	                                                    region's new leader has synced max_ts with PD
//
// Each node serves its own Service's counts (PrewriteStats), read when
// scraped; so several nodes in one process (tests) do not share them.

var (
	prewriteDesc = prometheus.NewDesc("tikv_storage_prewrite_total",
		"Prewrites answered without an error, by commit protocol: 2pc, async_commit, 1pc, fallback (1PC or async commit asked, ordinary locks written).",
		[]string{"type"}, nil)
	notSyncedDesc = prometheus.NewDesc("tikv_storage_max_ts_not_synced_total",
		"Async-commit and 1PC prewrites refused with max_timestamp_not_synced.", nil, nil)
)

// serviceCollector reports a Service's counters.
type serviceCollector struct{ svc *Service }

func (c serviceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- prewriteDesc
	ch <- notSyncedDesc
}

func (c serviceCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.svc.PrewriteStats()
	for _, x := range []struct {
		typ string
		n   uint64
	}{{"2pc", st.TwoPC}, {"async_commit", st.AsyncCommit}, {"1pc", st.OnePC}, {"fallback", st.Fallback}} {
		ch <- prometheus.MustNewConstMetric(prewriteDesc, prometheus.CounterValue, float64(x.n), x.typ)
	}
	ch <- prometheus.MustNewConstMetric(notSyncedDesc, prometheus.CounterValue, float64(st.NotSynced))
}

// metricsGatherer is what a node's /metrics serves: the default registry
// (Go runtime, process) and svc's counters.
func metricsGatherer(svc *Service) prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(serviceCollector{svc})
	return prometheus.Gatherers{prometheus.DefaultGatherer, reg}
}
