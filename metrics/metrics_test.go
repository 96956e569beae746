package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// value returns the value of the metric name with the label pair given
// (none for an unlabelled one): a counter's or gauge's value, a histogram's
// sample count.
func value(t *testing.T, name, label, labelValue string) float64 {
	t.Helper()
	mfs, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && !hasLabel(m, label, labelValue) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	t.Fatalf("no metric %s{%s=%q}", name, label, labelValue)
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name && lp.GetValue() == value {
			return true
		}
	}
	return false
}

func TestObserveQuery(t *testing.T) {
	before := func(typ string) [3]float64 {
		return [3]float64{
			value(t, "basalt_server_query_total", "type", typ),
			value(t, "basalt_server_query_errors_total", "type", typ),
			value(t, "basalt_server_query_duration_seconds", "type", typ),
		}
	}
	sel, upd, oth := before("select"), before("update"), before("other")
	ObserveQuery(StmtSelect, 120*time.Microsecond, nil)
	ObserveQuery(StmtSelect, 3*time.Millisecond, nil)
	ObserveQuery(StmtUpdate, time.Millisecond, errors.New("lock wait timeout"))
	ObserveQuery(StmtType(200), time.Millisecond, nil) // out of range: other
	for _, c := range []struct {
		typ  string
		was  [3]float64
		want [3]float64 // increments: total, errors, histogram count
	}{
		{"select", sel, [3]float64{2, 0, 2}},
		{"update", upd, [3]float64{1, 1, 1}},
		{"other", oth, [3]float64{1, 0, 1}},
	} {
		now := before(c.typ)
		for i := range now {
			if now[i]-c.was[i] != c.want[i] {
				t.Errorf("%s: metric %d grew by %v, want %v", c.typ, i, now[i]-c.was[i], c.want[i])
			}
		}
	}
}

func TestObserveQueryDoesNotAllocate(t *testing.T) {
	err := errors.New("failed")
	for _, e := range []error{nil, err} {
		if n := testing.AllocsPerRun(1000, func() {
			ObserveQuery(StmtInsert, 250*time.Microsecond, e)
		}); n != 0 {
			t.Errorf("ObserveQuery(err=%v) allocates %v times", e, n)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { TxnCommitted(); TxnRolledBack() }); n != 0 {
		t.Errorf("Txn counters allocate %v times", n)
	}
}

func TestTxnCounters(t *testing.T) {
	c0 := value(t, "basalt_session_transaction_total", "result", "commit")
	r0 := value(t, "basalt_session_transaction_total", "result", "rollback")
	TxnCommitted()
	TxnCommitted()
	TxnRolledBack()
	if d := value(t, "basalt_session_transaction_total", "result", "commit") - c0; d != 2 {
		t.Errorf("commits grew by %v, want 2", d)
	}
	if d := value(t, "basalt_session_transaction_total", "result", "rollback") - r0; d != 1 {
		t.Errorf("rollbacks grew by %v, want 1", d)
	}
}

func TestConnections(t *testing.T) {
	defer SetConnectionsFunc(nil)
	if v := value(t, "basalt_server_connections", "", ""); v != 0 {
		t.Errorf("unset: %v", v)
	}
	n := 7
	SetConnectionsFunc(func() int { return n })
	if v := value(t, "basalt_server_connections", "", ""); v != 7 {
		t.Errorf("got %v, want 7", v)
	}
	n = 3
	if v := value(t, "basalt_server_connections", "", ""); v != 3 {
		t.Errorf("got %v, want 3", v)
	}
}

func TestLatestCache(t *testing.T) {
	defer SetLatestCacheFunc(nil)
	if v := value(t, "basalt_store_latest_cache_chunks", "", ""); v != 0 {
		t.Errorf("unset: %v", v)
	}
	SetLatestCacheFunc(func() LatestCacheStats { return LatestCacheStats{Chunks: 3, Bytes: 4096, Loads: 5, Evictions: 2} })
	for name, want := range map[string]float64{
		"basalt_store_latest_cache_chunks":          3,
		"basalt_store_latest_cache_bytes":           4096,
		"basalt_store_latest_cache_loads_total":     5,
		"basalt_store_latest_cache_evictions_total": 2,
	} {
		if v := value(t, name, "", ""); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
}

func TestStmtTypeString(t *testing.T) {
	seen := map[string]bool{}
	for typ := range numStmtTypes {
		s := typ.String()
		if s == "" || seen[s] {
			t.Errorf("StmtType(%d) has name %q (empty or repeated)", typ, s)
		}
		seen[s] = true
	}
	if s := StmtType(numStmtTypes).String(); s != "other" {
		t.Errorf("out of range: %q", s)
	}
}

// The handler serves every type's series, zero or not, so that dashboards
// see them from the first scrape.
func TestHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for typ := range numStmtTypes {
		for _, want := range []string{
			`basalt_server_query_total{type="` + typ.String() + `"}`,
			`basalt_server_query_errors_total{type="` + typ.String() + `"}`,
			`basalt_server_query_duration_seconds_bucket{type="` + typ.String() + `",le="5e-05"}`,
			`basalt_server_query_duration_seconds_bucket{type="` + typ.String() + `",le="10"}`,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}
	for _, want := range []string{
		"basalt_server_connections ",
		`basalt_session_transaction_total{result="commit"}`,
		`basalt_session_transaction_total{result="rollback"}`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func BenchmarkObserveQuery(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ObserveQuery(StmtType(i%int(numStmtTypes)), time.Duration(i%1000)*time.Microsecond, nil)
	}
}

func BenchmarkObserveQueryParallel(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ObserveQuery(StmtSelect, 300*time.Microsecond, nil)
		}
	})
}
