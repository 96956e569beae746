package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// value returns the value of the metric name whose labels include the
// pairs given (name, value, name, value, ...; none for an unlabelled one):
// a counter's or gauge's value, a histogram's sample count.
func value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue next
				}
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
	t.Fatalf("no metric %s%q", name, labels)
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

const queryDurationName = "tidb_server_handle_query_duration_seconds"

func TestObserveQuery(t *testing.T) {
	sel, upd, oth := value(t, queryDurationName, "sql_type", "Select"), value(t, queryDurationName, "sql_type", "Update"),
		value(t, queryDurationName, "sql_type", "other")
	ObserveQuery(StmtSelect, 120*time.Microsecond)
	ObserveQuery(StmtSelect, 3*time.Millisecond)
	ObserveQuery(StmtUpdate, time.Millisecond)
	ObserveQuery(StmtType(200), time.Millisecond) // out of range: other
	for _, c := range []struct {
		typ       string
		was, want float64
	}{{"Select", sel, 2}, {"Update", upd, 1}, {"other", oth, 1}} {
		if d := value(t, queryDurationName, "sql_type", c.typ) - c.was; d != c.want {
			t.Errorf("%s: grew by %v, want %v", c.typ, d, c.want)
		}
	}
}

func TestExecuteError(t *testing.T) {
	ExecuteError(1062) // the series appear on first use
	ExecuteError(0)
	dup, unk := value(t, "tidb_server_execute_error_total", "type", "1062"), value(t, "tidb_server_execute_error_total", "type", "unknown")
	ExecuteError(1062)
	ExecuteError(1062)
	ExecuteError(0)
	if d := value(t, "tidb_server_execute_error_total", "type", "1062") - dup; d != 2 {
		t.Errorf("1062 grew by %v, want 2", d)
	}
	if d := value(t, "tidb_server_execute_error_total", "type", "unknown") - unk; d != 1 {
		t.Errorf("unknown grew by %v, want 1", d)
	}
}

func TestObserveCommand(t *testing.T) {
	const name = "tidb_server_query_total"
	qok, qerr := value(t, name, "type", "Query", "result", "OK"), value(t, name, "type", "Query", "result", "Error")
	eok := value(t, name, "type", "StmtExecute", "result", "OK")
	ObserveCommand(0x03, true)
	ObserveCommand(0x03, false)
	ObserveCommand(0x03, true)
	ObserveCommand(0x17, true)
	ObserveCommand(0x1f, true) // COM_RESET_CONNECTION: TiDB does not count it
	ObserveCommand(0xff, true)
	if d := value(t, name, "type", "Query", "result", "OK") - qok; d != 2 {
		t.Errorf("Query OK grew by %v, want 2", d)
	}
	if d := value(t, name, "type", "Query", "result", "Error") - qerr; d != 1 {
		t.Errorf("Query Error grew by %v, want 1", d)
	}
	if d := value(t, name, "type", "StmtExecute", "result", "OK") - eok; d != 1 {
		t.Errorf("StmtExecute OK grew by %v, want 1", d)
	}
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(1000, func() { ObserveQuery(StmtInsert, 250*time.Microsecond) }); n != 0 {
		t.Errorf("ObserveQuery allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { ObserveTxn(true, true, time.Millisecond); ObserveTxn(false, false, time.Millisecond) }); n != 0 {
		t.Errorf("ObserveTxn allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { ObserveCommand(0x03, true); PlanCacheHit(); PlanCacheMiss() }); n != 0 {
		t.Errorf("ObserveCommand and the plan cache counters allocate %v times", n)
	}
}

func TestObserveTxn(t *testing.T) {
	const name = "tidb_session_transaction_duration_seconds"
	pc := value(t, name, "txn_mode", "pessimistic", "type", "commit", "scope", "general")
	oa := value(t, name, "txn_mode", "optimistic", "type", "abort", "scope", "general")
	ObserveTxn(true, true, time.Millisecond)
	ObserveTxn(true, true, time.Second)
	ObserveTxn(false, false, time.Millisecond)
	if d := value(t, name, "txn_mode", "pessimistic", "type", "commit") - pc; d != 2 {
		t.Errorf("pessimistic commits grew by %v, want 2", d)
	}
	if d := value(t, name, "txn_mode", "optimistic", "type", "abort") - oa; d != 1 {
		t.Errorf("optimistic aborts grew by %v, want 1", d)
	}
}

func TestConnections(t *testing.T) {
	defer SetConnectionsFunc(nil)
	if v := value(t, "tidb_server_connections"); v != 0 {
		t.Errorf("unset: %v", v)
	}
	n := 7
	SetConnectionsFunc(func() int { return n })
	if v := value(t, "tidb_server_connections"); v != 7 {
		t.Errorf("got %v, want 7", v)
	}
	n = 3
	if v := value(t, "tidb_server_connections"); v != 3 {
		t.Errorf("got %v, want 3", v)
	}
}

func TestLatestCache(t *testing.T) {
	defer SetLatestCacheFunc(nil)
	if v := value(t, "basalt_store_latest_cache_chunks"); v != 0 {
		t.Errorf("unset: %v", v)
	}
	SetLatestCacheFunc(func() LatestCacheStats {
		return LatestCacheStats{Chunks: 3, Bytes: 4096, Loads: 5, Evictions: 2, Refused: 7}
	})
	for name, want := range map[string]float64{
		"basalt_store_latest_cache_chunks":          3,
		"basalt_store_latest_cache_bytes":           4096,
		"basalt_store_latest_cache_loads_total":     5,
		"basalt_store_latest_cache_evictions_total": 2,
		"basalt_store_latest_cache_refused_total":   7,
	} {
		if v := value(t, name); v != want {
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
			`tidb_server_handle_query_duration_seconds_bucket{sql_type="` + typ.String() + `",le="5e-05"}`,
			`tidb_server_handle_query_duration_seconds_bucket{sql_type="` + typ.String() + `",le="10"}`,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}
	for _, want := range []string{
		"tidb_server_connections ",
		`tidb_server_query_total{result="OK",type="Query"}`,
		`tidb_server_query_total{result="Error",type="StmtExecute"}`,
		`tidb_server_plan_cache_total{type="prepare"}`,
		`tidb_server_plan_cache_miss_total{type="prepare"}`,
		`tidb_session_transaction_duration_seconds_count{scope="general",txn_mode="pessimistic",type="commit"}`,
		`tidb_session_transaction_duration_seconds_count{scope="general",txn_mode="optimistic",type="abort"}`,
		"basalt_store_latest_cache_chunks ",
		"go_goroutines ",
		`go_sched_latencies_seconds_bucket{le="`,
		`go_sched_pauses_total_gc_seconds_bucket{le="`,
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
		ObserveQuery(StmtType(i%int(numStmtTypes)), time.Duration(i%1000)*time.Microsecond)
	}
}

func BenchmarkObserveQueryParallel(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ObserveQuery(StmtSelect, 300*time.Microsecond)
		}
	})
}
