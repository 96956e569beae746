package main

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"sync/atomic"
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
//	/debug/pprof/rates  JSON: the mutex and block profiles' rates; POST ?mutex=N&block=N sets them
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
	mux.HandleFunc("GET /debug/pprof/rates", serveProfileRates)
	mux.HandleFunc("POST /debug/pprof/rates", serveProfileRates)
	return mux
}

// profileRates is the body of /debug/pprof/rates: the sampling rates of
// Go's mutex and block profiles (/debug/pprof/mutex, /debug/pprof/block),
// which are off (0) until a POST sets them. Mutex is
// runtime.SetMutexProfileFraction's: on average one contention event in
// Mutex is sampled. Block is runtime.SetBlockProfileRate's: one blocking
// event per Block nanoseconds spent blocked is sampled (1: every one).
// Both cost the hot path something while on; turn them off (0) after.
type profileRates struct {
	Mutex int   `json:"mutex"`
	Block int64 `json:"block"`
}

// blockProfileRate is the block profile's rate as last set here: the
// runtime offers no way to read it back.
var blockProfileRate atomic.Int64

// serveProfileRates answers /debug/pprof/rates. A POST sets the rates it
// is given (query or form values mutex and block; a value left out is
// kept; a negative or malformed one is refused with 400), then every
// request answers the rates in force:
//
//	curl -X POST 'http://127.0.0.1:10080/debug/pprof/rates?mutex=5&block=10000'
//	curl 'http://127.0.0.1:10080/debug/pprof/mutex?seconds=20' > mutex.prof
func serveProfileRates(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		var set []func()
		for _, name := range []string{"mutex", "block"} {
			v := r.FormValue(name)
			if v == "" {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				http.Error(w, name+": want a number >= 0", http.StatusBadRequest)
				return
			}
			if name == "mutex" {
				set = append(set, func() { runtime.SetMutexProfileFraction(int(n)) })
			} else {
				set = append(set, func() { runtime.SetBlockProfileRate(int(n)); blockProfileRate.Store(n) })
			}
		}
		for _, f := range set {
			f()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(profileRates{Mutex: runtime.SetMutexProfileFraction(-1), Block: blockProfileRate.Load()})
}
