package storenode

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tikv/client-go/v2/txnkv/transaction"
)

// TestMetricsPrewrites scrapes a storage node's /metrics (Start: Pebble,
// raftstore, one region led here, a one-member PD) after client-go
// commits a transaction in one phase, one in two and one with async
// commit: each is counted under its type of tikv_storage_prewrite_total.
func TestMetricsPrewrites(t *testing.T) {
	cli, cfg, _ := startNodeWithClient(t, nil)

	commit := func(key string, opt func(*transaction.KVTxn)) {
		t.Helper()
		ctx := context.Background()
		var err error
		// The region's first leader may still be coming up.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var txn *transaction.KVTxn
			if txn, err = cli.Begin(); err != nil {
				continue
			}
			opt(txn)
			if err = txn.Set([]byte(key), []byte("v")); err == nil {
				if err = txn.Commit(ctx); err == nil {
					return
				}
			}
			txn.Rollback()
		}
		t.Fatalf("committing %s: %v", key, err)
	}
	scrape := func() map[string]string {
		t.Helper()
		resp, err := http.Get("http://" + cfg.Server.StatusAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		text, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for line := range strings.Lines(string(text)) {
			name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
			if ok && strings.HasPrefix(name, "tikv_storage_") {
				m[name] = value
			}
		}
		if !strings.Contains(string(text), "\ngo_goroutines ") {
			t.Errorf("/metrics lost the Go runtime's metrics")
		}
		return m
	}

	commit("a1", func(txn *transaction.KVTxn) { txn.SetEnable1PC(true) })
	got := scrape()
	if _, ok := got["tikv_storage_max_ts_not_synced_total"]; !ok {
		// The leader's first 1PC prewrite may be refused until it has
		// synced max ts: any count will do.
		t.Errorf("no tikv_storage_max_ts_not_synced_total in %v", got)
	}
	for name, want := range map[string]string{
		`tikv_storage_prewrite_total{type="1pc"}`:          "1",
		`tikv_storage_prewrite_total{type="2pc"}`:          "0",
		`tikv_storage_prewrite_total{type="async_commit"}`: "0",
		`tikv_storage_prewrite_total{type="fallback"}`:     "0",
	} {
		if got[name] != want {
			t.Errorf("after a 1PC commit: %s = %q, want %q", name, got[name], want)
		}
	}
	commit("a2", func(*transaction.KVTxn) {})
	commit("a3", func(txn *transaction.KVTxn) { txn.SetEnableAsyncCommit(true) })
	got = scrape()
	for name, want := range map[string]string{
		`tikv_storage_prewrite_total{type="1pc"}`:          "1",
		`tikv_storage_prewrite_total{type="2pc"}`:          "1",
		`tikv_storage_prewrite_total{type="async_commit"}`: "1",
		`tikv_storage_prewrite_total{type="fallback"}`:     "0",
	} {
		if got[name] != want {
			t.Errorf("after 1PC, 2PC and async commits: %s = %q, want %q", name, got[name], want)
		}
	}
}
