package main

import (
	"bytes"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/config"
)

func TestStoreOptions(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	cfg := config.Default()
	o := storeOptions(cfg, logger)
	if o.NoSync || o.BlockCacheSize != 256<<20 || o.MemTableSize != 16<<20 || o.MemTableStopWritesThreshold != 2 || o.LatestCacheSize != 64<<20 ||
		o.GCLifeTime != 10*time.Minute || o.CommitLockWait != 50*time.Second || o.Logger == nil ||
		o.WALMinSyncInterval != 250*time.Microsecond {
		t.Errorf("defaults: %+v", o)
	}

	cfg, err := config.Load("../../config/testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	o = storeOptions(cfg, logger)
	if !o.NoSync || o.BlockCacheSize != 1536<<20 || o.MemTableSize != 128<<20 || o.MemTableStopWritesThreshold != 4 || o.LatestCacheSize != -1 ||
		o.GCLifeTime != 90*time.Minute || o.CommitLockWait != 5*time.Second || o.WALMinSyncInterval != time.Millisecond {
		t.Errorf("full.toml: %+v", o)
	}
}

func TestServerConfig(t *testing.T) {
	cfg := config.Default()
	cfg.MaxConnections = 500
	cfg.MaxAllowedPacket = 16 * config.MiB
	info := buildInfo{Version: "v1.2.3"}
	sc := serverConfig(cfg, info, slog.New(slog.DiscardHandler))
	if sc.ServerVersion != "8.4.0-Basalt-v1.2.3" || sc.MaxConnections != 500 ||
		sc.MaxAllowedPacket != 16<<20 || sc.Logger == nil {
		t.Errorf("%+v", sc)
	}
	// server-version replaces the whole string, as TiDB's.
	cfg.ServerVersion = "8.0.11-Basalt-custom"
	if sc := serverConfig(cfg, info, slog.New(slog.DiscardHandler)); sc.ServerVersion != "8.0.11-Basalt-custom" {
		t.Errorf("server-version: %q", sc.ServerVersion)
	}
}

func TestStoreLogLevels(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l := storeOptions(config.Default(), logger).Logger
	l.Printf("pebble: Found %d WALs", 1)
	l.Printf("pebble: error: disk %s", "full")
	l.Printf("gc: examined %d keys", 10)
	out := buf.String()
	if strings.Contains(out, "WALs") {
		t.Errorf("Pebble's chatter logged at info:\n%s", out)
	}
	for _, want := range []string{
		`level=ERROR msg="pebble: error: disk full" component=store`,
		`level=INFO msg="gc: examined 10 keys" component=store`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

func TestTuneGC(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}()
	p := config.Default().Performance
	tuneGC(p, func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("GC percent %d, want the default 400", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 384<<20 {
		t.Errorf("memory limit %d, want the default 384 MiB", got)
	}

	// The environment wins.
	debug.SetMemoryLimit(math.MaxInt64)
	env := map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}
	tuneGC(p, func(k string) string { return env[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d with GOGC set, want it left at 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d with GOMEMLIMIT set, want it left alone", got)
	}
}

// The storage node collects as the SQL node does (store.go).
func TestStoreGC(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}()
	tuneGC(storeGC, func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("the store's GC percent %d, want 400", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 384<<20 {
		t.Errorf("the store's memory limit %d, want 384 MiB", got)
	}
}
