package dashboard

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/basalt-db/basalt/slowlog"
)

// testRegistry has the metrics the ring reads, under their names.
func testRegistry() (*prometheus.Registry, *prometheus.HistogramVec, *prometheus.HistogramVec, *prometheus.CounterVec) {
	reg := prometheus.NewRegistry()
	q := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: queryDurationName,
		Buckets: []float64{0.001, 0.01, 0.1}}, []string{"sql_type"})
	txn := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: txnDurationName}, []string{"txn_mode", "type", "scope"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: executeErrorName}, []string{"type"})
	reg.MustRegister(q, txn, errs)
	return reg, q, txn, errs
}

func TestSampleRates(t *testing.T) {
	reg, q, txn, errs := testRegistry()
	d := New(Sources{Gatherer: reg})
	t0 := time.Unix(1000, 0)
	q.WithLabelValues("Select").Observe(0.0005) // before the first reading: not in a sample
	d.Sample(t0)
	// Two seconds: 100 selects, 90 under 1 ms and 10 under 10 ms (p95:
	// 10 ms); 10 updates of 50 ms; 6 commits, 2 aborts; 3 deadlocks and
	// a duplicate key.
	for i := range 100 {
		v := 0.0005
		if i >= 90 {
			v = 0.005
		}
		q.WithLabelValues("Select").Observe(v)
	}
	for range 10 {
		q.WithLabelValues("Update").Observe(0.05)
	}
	for range 6 {
		txn.WithLabelValues("optimistic", "commit", "general").Observe(0.001)
	}
	txn.WithLabelValues("pessimistic", "abort", "general").Observe(0.001)
	txn.WithLabelValues("optimistic", "abort", "general").Observe(0.001)
	errs.WithLabelValues("1213").Add(3)
	errs.WithLabelValues("1062").Inc()
	d.Sample(t0.Add(2 * time.Second))
	d.Sample(t0.Add(3 * time.Second)) // an idle second

	got := d.samples()
	if len(got) != 2 {
		t.Fatalf("%d samples, want 2", len(got))
	}
	s := got[0]
	for name, c := range map[string][2]float64{
		"Select qps": {s.QPS["Select"], 50}, "Update qps": {s.QPS["Update"], 5},
		"Select p95": {s.P95["Select"], 10}, "Update p95": {s.P95["Update"], 100},
		"commits": {s.Commits, 3}, "aborts": {s.Aborts, 1}, "conflicts": {s.Conflicts, 1.5}, "errors": {s.Errors, 2},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if idle := got[1]; len(idle.QPS) != 0 || idle.Commits != 0 || idle.Time != 1003 {
		t.Errorf("idle second: %+v", idle)
	}
	data := d.Data(context.Background(), t0.Add(3*time.Second))
	if strings.Join(data.Types, ",") != "Select,Update" {
		t.Errorf("types %q, want the busiest first", data.Types)
	}
}

func TestRingKeepsTheLast(t *testing.T) {
	reg, _, _, _ := testRegistry()
	d := New(Sources{Gatherer: reg})
	for i := range ringSize + 10 {
		d.Sample(time.Unix(int64(i), 0))
	}
	got := d.samples()
	if len(got) != ringSize || got[0].Time != 10 || got[len(got)-1].Time != ringSize+9 {
		t.Errorf("%d samples, %d..%d", len(got), got[0].Time, got[len(got)-1].Time)
	}
}

func TestSlowTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.log")
	if e, err := tail(path, 5); e != nil || err != nil {
		t.Fatalf("no file: %v %v", e, err)
	}
	l := slowlog.Open(path, 100, 1)
	defer l.Close()
	// More than tailBytes of entries: tail starts at an entry's start.
	pad := strings.Repeat("x", 1000)
	n := tailBytes/1000 + 50
	for i := range n {
		e := slowlog.Entry{Time: time.Unix(int64(i), 0), QueryTime: time.Second, User: "u", Host: "h", Succ: true,
			Query: "select '" + pad + "', " + strings.Repeat("1", 1) + ";"}
		e.ResultRows = int64(i)
		if err := l.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	if fi, _ := os.Stat(path); fi.Size() <= tailBytes {
		t.Fatalf("log of %d bytes, want more than %d", fi.Size(), tailBytes)
	}
	got, err := tail(path, 5)
	if err != nil || len(got) != 5 {
		t.Fatalf("%d entries, %v", len(got), err)
	}
	for i, e := range got {
		if want := int64(n - 5 + i); e.ResultRows != want || !strings.HasPrefix(e.Query, "select '") {
			t.Errorf("entry %d: rows %d (want %d), query %.20q", i, e.ResultRows, want, e.Query)
		}
	}
}

func TestHandler(t *testing.T) {
	reg, _, _, _ := testRegistry()
	h := New(Sources{Gatherer: reg, Store: func() []Stat { return []Stat{{"compactions", "7"}} }}).Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard", nil))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") || !strings.Contains(body, `fetch("/dashboard/data"`) {
		t.Errorf("/dashboard: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	// Self-contained: nothing loaded from elsewhere.
	for _, ext := range []string{`src=`, `href=`, `@import`, `url(`} {
		if strings.Contains(body, ext) {
			t.Errorf("/dashboard loads an asset: %s", ext)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/data", nil))
	var d Data
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || len(d.Store) != 1 || d.Store[0].Value != "7" || d.Cluster != nil {
		t.Errorf("/dashboard/data: %v %s", err, rec.Body.String())
	}
}
