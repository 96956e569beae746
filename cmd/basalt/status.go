package main

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/basalt-db/basalt/dashboard"
	"github.com/basalt-db/basalt/metrics"
)

// statusJSON is the body of GET /status. Its first three keys are TiDB's,
// for tools that probe a TiDB status port.
type statusJSON struct {
	Connections   int     `json:"connections"`
	Version       string  `json:"version"`  // the MySQL version string, "8.4.0-Basalt-dev"
	GitHash       string  `json:"git_hash"` // "" if unknown
	BasaltVersion string  `json:"basalt_version"`
	UptimeSeconds float64 `json:"uptime_seconds"`
}

// statusHandler serves the status port:
//
//	/status          JSON: connections, version, git_hash, basalt_version, uptime_seconds
//	/metrics         Prometheus metrics (package metrics)
//	/dashboard       the dashboard page, and /dashboard/data its JSON (package dashboard); 404 if dash is nil
//	/debug/pprof/    Go's profiles, as on TiDB's status port
//
// connections is called on each /status request, from its goroutine.
func statusHandler(info buildInfo, version string, started time.Time, connections func() int, dash *dashboard.Dashboard) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(statusJSON{
			Connections:   connections(),
			Version:       version,
			GitHash:       info.GitHash,
			BasaltVersion: info.Version,
			UptimeSeconds: time.Since(started).Seconds(),
		})
	})
	mux.Handle("GET /metrics", metrics.Handler())
	if dash != nil {
		h := dash.Handler()
		mux.Handle("GET /dashboard", h)
		mux.Handle("GET /dashboard/data", h)
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
