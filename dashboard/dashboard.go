// Package dashboard serves the status port's /dashboard: one
// self-contained HTML page (embedded, no external assets; plain
// JavaScript draws its charts as inline SVG) and /dashboard/data, the
// JSON the page polls. The page shows statements per second and their
// p95 latency by statement type over the last minutes, connections,
// transactions and conflicts, the statement summary's top statements, the
// slow log's latest entries, the store's figures and, on a cluster, the
// stores, regions and leaders PD reports.
//
// The per-second history is the sampler's (ring.go): Run reads the
// metrics registry once a second into a ring of ringSize samples. The
// rest is read when the data is asked for. A Dashboard is safe for
// concurrent use.
package dashboard

import (
	"context"
	_ "embed"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/basalt-db/basalt/slowlog"
	"github.com/basalt-db/basalt/stmtsummary"
)

//go:embed dashboard.html
var page []byte

// Stat is one of the store's figures, already formatted.
type Stat struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Sources is what the dashboard reads. Every field but Gatherer may be
// nil: the page then leaves that part out.
type Sources struct {
	// Gatherer is the metrics registry (package metrics).
	Gatherer prometheus.Gatherer
	// Summary is the statement summary; SlowLog the slow query log.
	Summary *stmtsummary.Summary
	SlowLog *slowlog.Logger
	// Store reports the store's figures (Pebble's compactions and block
	// cache, the latest-version cache).
	Store func() []Stat
	// PD are the cluster's PD members (host:port of their client URL),
	// asked for their stores; none with the embedded store.
	PD []string
}

// Dashboard is the page and its data.
type Dashboard struct {
	src Sources

	mu      sync.Mutex
	last    reading
	hasLast bool
	ring    [ringSize]Sample
	n       int // samples taken; the newest is ring[(n-1)%ringSize]
}

// New returns a dashboard over src. Call Run to start sampling.
func New(src Sources) *Dashboard { return &Dashboard{src: src} }

// Run samples every second until ctx is done.
func (d *Dashboard) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	d.Sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d.Sample(now)
		}
	}
}

// Sample reads the registry at now and adds the difference from the last
// reading to the ring (the first reading adds nothing).
func (d *Dashboard) Sample(now time.Time) {
	r, _ := read(d.src.Gatherer, now) // a partial reading is still worth charting
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hasLast {
		d.ring[d.n%ringSize] = diff(d.last, r)
		d.n++
	}
	d.last, d.hasLast = r, true
}

// samples returns the ring's samples, oldest first.
func (d *Dashboard) samples() []Sample {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := min(d.n, ringSize)
	out := make([]Sample, 0, k)
	for i := d.n - k; i < d.n; i++ {
		out = append(out, d.ring[i%ringSize])
	}
	return out
}

// Handler serves GET /dashboard (the page) and GET /dashboard/data (its
// JSON).
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(page)
	})
	mux.HandleFunc("GET /dashboard/data", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(d.Data(ctx, time.Now()))
	})
	return mux
}

// Data is the body of /dashboard/data.
type Data struct {
	Now        int64        `json:"now"`
	Samples    []Sample     `json:"samples"`
	Types      []string     `json:"types"` // the sql_types in Samples, busiest first
	Statements []Statement  `json:"statements"`
	Slow       []SlowQuery  `json:"slow"`
	SlowErr    string       `json:"slow_error,omitempty"`
	SlowFile   string       `json:"slow_file,omitempty"`
	Store      []Stat       `json:"store"`
	Cluster    *ClusterInfo `json:"cluster,omitempty"`
}

// Statement is a row of the statement summary's current window.
type Statement struct {
	Schema     string  `json:"schema"`
	Digest     string  `json:"digest"`
	DigestText string  `json:"digest_text"`
	StmtType   string  `json:"stmt_type"`
	ExecCount  uint64  `json:"exec_count"`
	Errors     uint64  `json:"errors"`
	SumMs      float64 `json:"sum_ms"`
	AvgMs      float64 `json:"avg_ms"`
	P95Ms      float64 `json:"p95_ms"`
	MaxMs      float64 `json:"max_ms"`
	AvgRows    float64 `json:"avg_rows"`
}

// SlowQuery is an entry of the slow log.
type SlowQuery struct {
	Time    string  `json:"time"`
	QueryMs float64 `json:"query_ms"`
	User    string  `json:"user"`
	DB      string  `json:"db"`
	Rows    int64   `json:"rows"`
	Succ    bool    `json:"succ"`
	Query   string  `json:"query"`
}

// topStatements and latestSlow are how many rows the page shows.
const (
	topStatements = 10
	latestSlow    = 10
)

// Data assembles what the page shows at now.
func (d *Dashboard) Data(ctx context.Context, now time.Time) Data {
	out := Data{Now: now.Unix(), Samples: d.samples(), Statements: []Statement{}, Slow: []SlowQuery{}, Store: []Stat{}}
	busy := map[string]float64{}
	for _, s := range out.Samples {
		for typ, q := range s.QPS {
			busy[typ] += q
		}
	}
	for typ := range busy {
		out.Types = append(out.Types, typ)
	}
	sort.Slice(out.Types, func(i, j int) bool {
		a, b := out.Types[i], out.Types[j]
		return busy[a] > busy[b] || busy[a] == busy[b] && a < b
	})
	if d.src.Summary != nil {
		out.Statements = top(d.src.Summary.Current(now), topStatements)
	}
	if d.src.SlowLog != nil {
		out.SlowFile = d.src.SlowLog.Path()
		entries, err := tail(d.src.SlowLog.Path(), latestSlow)
		if err != nil {
			out.SlowErr = err.Error()
		}
		for i := len(entries) - 1; i >= 0; i-- { // newest first
			e := entries[i]
			out.Slow = append(out.Slow, SlowQuery{Time: e.Time.Format(time.RFC3339Nano), QueryMs: ms(e.QueryTime),
				User: e.User, DB: e.DB, Rows: e.ResultRows, Succ: e.Succ, Query: e.Query})
		}
	}
	if d.src.Store != nil {
		out.Store = d.src.Store()
	}
	if len(d.src.PD) > 0 {
		out.Cluster = cluster(ctx, d.src.PD)
	}
	return out
}

// top returns the n statements that took the most time in all.
func top(stats []stmtsummary.Stats, n int) []Statement {
	sort.Slice(stats, func(i, j int) bool { return stats[i].SumLatency > stats[j].SumLatency })
	out := []Statement{}
	for i := range stats[:min(n, len(stats))] {
		s := &stats[i]
		out = append(out, Statement{Schema: s.Schema, Digest: s.Digest, DigestText: s.DigestText, StmtType: s.StmtType,
			ExecCount: s.ExecCount, Errors: s.SumErrors, SumMs: ms(s.SumLatency), AvgMs: ms(s.AvgLatency()),
			P95Ms: ms(s.P95Latency()), MaxMs: ms(s.MaxLatency),
			AvgRows: float64(s.SumResultRows) / float64(max(s.ExecCount, 1))})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
