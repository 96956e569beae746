package main

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/config"
)

// A SQL node whose PD does not answer retries, saying so, and gives up
// with an error that names PD.
func TestOpenClusterWithoutPD(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	defer func(d time.Duration) { pdConnectTimeout = d }(pdConnectTimeout)
	pdConnectTimeout = 2 * time.Second

	cfg := config.Default()
	cfg.Store, cfg.Path = config.StoreTiKV, addr
	var logs bytes.Buffer
	start := time.Now()
	st, err := openStorage(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err == nil {
		st.Close()
		t.Fatal("opened a cluster with no PD")
	}
	if !strings.Contains(err.Error(), "cannot reach PD at ["+addr+"]") {
		t.Errorf("error %q does not name PD at %s", err, addr)
	}
	if !strings.Contains(logs.String(), "cannot reach PD; retrying") {
		t.Errorf("no retry logged:\n%s", logs.String())
	}
	t.Logf("gave up after %v: %v", time.Since(start).Round(100*time.Millisecond), err)
}
