package dashboard

import (
	"math"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The ring: once a second the sampler reads the registry's cumulative
// counters (a Gather, as a Prometheus scrape would) and keeps the
// difference from the previous reading as one Sample. The ring holds the
// last ringSize of them; memory is bounded by ringSize times the number
// of statement types seen.

// ringSize is how many per-second samples the page can chart: five minutes.
const ringSize = 300

// The metrics the ring reads (package metrics).
const (
	queryDurationName = "tidb_server_handle_query_duration_seconds"
	connectionsName   = "tidb_server_connections"
	txnDurationName   = "tidb_session_transaction_duration_seconds"
	executeErrorName  = "tidb_server_execute_error_total"
)

// conflictCodes are the MySQL errors that count as conflicts: deadlock
// (which Basalt also returns for a write conflict), lock wait timeout,
// and TiDB's write conflict.
var conflictCodes = map[string]bool{"1213": true, "1205": true, "9007": true}

// Sample is one second of the server's life.
type Sample struct {
	Time        int64              `json:"t"`           // Unix seconds at its end
	QPS         map[string]float64 `json:"qps"`         // statements per second by sql_type; types with none left out
	P95         map[string]float64 `json:"p95_ms"`      // the 95th percentile latency by sql_type, ms (a bucket's upper bound)
	Connections float64            `json:"connections"` // open at its end
	Commits     float64            `json:"commits"`     // transactions committed per second
	Aborts      float64            `json:"aborts"`      // rolled back or failed per second
	Conflicts   float64            `json:"conflicts"`   // statements failed with a conflict per second
	Errors      float64            `json:"errors"`      // statements failed per second
}

// reading is the cumulative state of the counters at one moment.
type reading struct {
	at          time.Time
	buckets     map[string][]uint64 // by sql_type: cumulative counts per bucket, +Inf last
	bounds      []float64           // the buckets' upper bounds, s (+Inf last)
	connections float64
	commits     float64
	aborts      float64
	conflicts   float64
	errors      float64
}

// read gathers g into a reading.
func read(g prometheus.Gatherer, at time.Time) (reading, error) {
	mfs, err := g.Gather()
	r := reading{at: at, buckets: map[string][]uint64{}}
	for _, mf := range mfs {
		switch mf.GetName() {
		case queryDurationName:
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				typ := label(m, "sql_type")
				if h == nil || typ == "" {
					continue
				}
				counts := make([]uint64, 0, len(h.GetBucket())+1)
				bounds := make([]float64, 0, len(h.GetBucket())+1)
				for _, b := range h.GetBucket() {
					counts = append(counts, b.GetCumulativeCount())
					bounds = append(bounds, b.GetUpperBound())
				}
				counts = append(counts, h.GetSampleCount())
				bounds = append(bounds, math.Inf(1))
				r.buckets[typ], r.bounds = counts, bounds
			}
		case connectionsName:
			for _, m := range mf.GetMetric() {
				r.connections += m.GetGauge().GetValue()
			}
		case txnDurationName:
			for _, m := range mf.GetMetric() {
				n := float64(m.GetHistogram().GetSampleCount())
				if label(m, "type") == "commit" {
					r.commits += n
				} else {
					r.aborts += n
				}
			}
		case executeErrorName:
			for _, m := range mf.GetMetric() {
				v := m.GetCounter().GetValue()
				r.errors += v
				if conflictCodes[label(m, "type")] {
					r.conflicts += v
				}
			}
		}
	}
	return r, err
}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// diff is the Sample between two readings, prev before cur.
func diff(prev, cur reading) Sample {
	secs := cur.at.Sub(prev.at).Seconds()
	if secs <= 0 {
		secs = 1
	}
	rate := func(a, b float64) float64 { return max(b-a, 0) / secs }
	s := Sample{Time: cur.at.Unix(), QPS: map[string]float64{}, P95: map[string]float64{},
		Connections: cur.connections,
		Commits:     rate(prev.commits, cur.commits), Aborts: rate(prev.aborts, cur.aborts),
		Conflicts: rate(prev.conflicts, cur.conflicts), Errors: rate(prev.errors, cur.errors)}
	for typ, counts := range cur.buckets {
		was := prev.buckets[typ]
		delta := make([]uint64, len(counts))
		for i, c := range counts {
			if i < len(was) && was[i] <= c {
				c -= was[i]
			}
			delta[i] = c
		}
		n := delta[len(delta)-1]
		if n == 0 {
			continue
		}
		s.QPS[typ] = float64(n) / secs
		s.P95[typ] = quantile(delta, cur.bounds, 0.95) * 1000
	}
	return s
}

// quantile is the upper bound of the bucket that holds the q-quantile of
// the cumulative counts (the last is the total); for the +Inf bucket, the
// largest finite bound.
func quantile(cum []uint64, bounds []float64, q float64) float64 {
	total := cum[len(cum)-1]
	rank := uint64(math.Ceil(q * float64(total)))
	i := sort.Search(len(cum), func(i int) bool { return cum[i] >= rank })
	if i >= len(bounds) {
		i = len(bounds) - 1
	}
	if math.IsInf(bounds[i], 1) && i > 0 {
		return bounds[i-1]
	}
	return bounds[i]
}
