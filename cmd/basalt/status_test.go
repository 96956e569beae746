package main

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestStatusHandler(t *testing.T) {
	info := buildInfo{Version: "v0.1.0", GitHash: "8dd2d34"}
	conns := 3
	h := statusHandler(info, info.ServerVersion(), time.Now().Add(-90*time.Second), func() int { return conns }, nil)

	get := func(path string) (int, string, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		body, _ := io.ReadAll(rec.Body)
		return rec.Code, rec.Header().Get("Content-Type"), string(body)
	}

	code, ctype, body := get("/status")
	if code != 200 || ctype != "application/json" {
		t.Fatalf("/status: %d %s %s", code, ctype, body)
	}
	var st statusJSON
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status: %v: %s", err, body)
	}
	if st.Connections != 3 || st.Version != "8.4.0-Basalt-v0.1.0" || st.GitHash != "8dd2d34" ||
		st.BasaltVersion != "v0.1.0" || st.UptimeSeconds < 90 || st.UptimeSeconds > 120 {
		t.Errorf("/status = %+v", st)
	}
	for _, key := range []string{`"connections"`, `"version"`, `"git_hash"`, `"uptime_seconds"`} {
		if !strings.Contains(body, key) {
			t.Errorf("/status lacks %s: %s", key, body)
		}
	}
	conns = 5
	if _, _, body := get("/status"); !strings.Contains(body, `"connections":5`) {
		t.Errorf("/status does not follow the connection count: %s", body)
	}

	if code, _, body := get("/metrics"); code != 200 || !strings.Contains(body, "tidb_server_handle_query_duration_seconds") {
		t.Errorf("/metrics: %d %.200s", code, body)
	}
	if code, _, body := get("/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/: %d %.200s", code, body)
	}
	if code, _, _ := get("/nothing"); code != 404 {
		t.Errorf("/nothing: %d", code)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/status", nil))
	if rec.Code != 405 {
		t.Errorf("POST /status: %d", rec.Code)
	}
}

// TestProfileRates turns the mutex and block profiles on and off through
// the status port, as one does around a profile of a running server.
func TestProfileRates(t *testing.T) {
	h := statusHandler(buildInfo{}, "v", time.Now(), func() int { return 0 }, nil)
	do := func(method, path string) (int, profileRates) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		var pr profileRates
		if rec.Code == 200 {
			if err := json.Unmarshal(rec.Body.Bytes(), &pr); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, rec.Body)
			}
		}
		return rec.Code, pr
	}
	t.Cleanup(func() { do("POST", "/debug/pprof/rates?mutex=0&block=0") })
	if code, pr := do("GET", "/debug/pprof/rates"); code != 200 || pr.Mutex != 0 || pr.Block != 0 {
		t.Fatalf("at start: %d %+v", code, pr)
	}
	if code, pr := do("POST", "/debug/pprof/rates?mutex=5&block=10000"); code != 200 || pr != (profileRates{5, 10000}) {
		t.Fatalf("POST mutex=5 block=10000: %d %+v", code, pr)
	}
	if got := runtime.SetMutexProfileFraction(-1); got != 5 {
		t.Errorf("the runtime's mutex fraction is %d, want 5", got)
	}
	if code, pr := do("POST", "/debug/pprof/rates?block=0"); code != 200 || pr != (profileRates{5, 0}) {
		t.Errorf("POST block=0 keeps mutex: %d %+v", code, pr)
	}
	for _, bad := range []string{"mutex=-1", "block=x", "mutex=99999999999"} {
		if code, _ := do("POST", "/debug/pprof/rates?"+bad); code != 400 {
			t.Errorf("POST %s: %d, want 400", bad, code)
		}
	}
	if code, pr := do("GET", "/debug/pprof/rates?mutex=0"); code != 200 || pr.Mutex != 5 {
		t.Errorf("GET must not set: %d %+v", code, pr)
	}
}
