package main

import (
	"encoding/json"
	"io"
	"net/http/httptest"
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
