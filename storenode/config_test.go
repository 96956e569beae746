package storenode_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/basalt-db/basalt/storenode"
)

func TestConfigDefaultIsValid(t *testing.T) {
	cfg := storenode.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Every key of testdata/config_full.toml takes effect.
func TestConfigLoadFull(t *testing.T) {
	cfg := storenode.DefaultConfig()
	warnings, err := storenode.LoadConfig("testdata/config_full.toml", &cfg)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("warnings %q, err %v", warnings, err)
	}
	want := storenode.DefaultConfig()
	want.PD.Endpoints = []string{"http://10.0.0.1:2379", "10.0.0.2:2379"}
	want.Server = storenode.ServerConfig{Addr: "0.0.0.0:20160", AdvertiseAddr: "10.0.0.5:20160",
		StatusAddr: "0.0.0.0:20180", GRPCConcurrency: 8, GRPCRaftConnNum: 2}
	want.Storage.DataDir = "/var/lib/tikv"
	want.Storage.SchedulerWorkerPoolSize = 6
	want.Storage.BlockCache.Capacity = 1 << 30
	want.Raft = storenode.RaftConfig{SyncLog: false, StorePoolSize: 3, ApplyPoolSize: 4,
		BaseTick: dur(time.Second), HeartbeatTicks: 3, ElectionTicks: 15, RaftLogGCCountLimit: 20000, RaftLogGCSizeLimit: 2 << 20,
		SplitCheckInterval: dur(5 * time.Second), PDHeartbeatInterval: dur(time.Minute),
		PDStoreHeartbeatInterval: dur(500 * time.Millisecond), MaxLeaderLease: dur(9 * time.Second),
		PeerStaleStateCheckInterval: dur(2 * time.Minute), AbnormalLeaderMissingDuration: dur(3 * time.Minute)}
	want.ReadPool.Unified.MaxThreadCount = 12
	want.RocksDB.MaxBackgroundJobs = 6
	want.RocksDB.DefaultCF.BlockCacheSize = 512 << 10
	want.Txn = storenode.PessimisticTxn{Pipelined: false, InMemory: false, WaitForLockTimeout: dur(3 * time.Second)}
	want.Copr = storenode.CoprConfig{RegionSplitSize: 64 << 20, RegionMaxSize: 96 << 20,
		RegionSplitKeys: 640000, RegionMaxKeys: 960000}
	want.GC.PollSafePointInterval = dur(30 * time.Second)
	want.Log.Level = "warning"
	want.Log.File.Filename = "/var/log/tikv.log"
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", cfg, want)
	}
	if got := cfg.PDURLs(); !slices.Equal(got, []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}) {
		t.Errorf("PDURLs() = %q", got)
	}
	if got := cfg.AdvertiseAddr(); got != "10.0.0.5:20160" {
		t.Errorf("AdvertiseAddr() = %q", got)
	}
}

// A key the store does not know is a warning naming it; the rest of the
// file still takes effect.
func TestConfigUnknownKey(t *testing.T) {
	path := writeConfig(t, "[server]\naddr = \"127.0.0.1:30160\"\nlabels = { zone = \"z1\", host = \"h1\" }\n[raftstore]\nno-such-key = 1\n")
	cfg := storenode.DefaultConfig()
	warnings, err := storenode.LoadConfig(path, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(warnings, "\n")
	for _, key := range []string{"server.labels", "raftstore.no-such-key"} {
		if !strings.Contains(joined, "unknown key "+key+",") {
			t.Errorf("warnings %q do not name %s", warnings, key)
		}
	}
	if len(warnings) != 2 {
		t.Errorf("warnings %q: want one for the table server.labels, not more for its keys", warnings)
	}
	if cfg.Server.Addr != "127.0.0.1:30160" {
		t.Errorf("server.addr = %q", cfg.Server.Addr)
	}
}

// Each invalid value is refused, and the error names its key.
func TestConfigInvalid(t *testing.T) {
	for _, tc := range []struct{ toml, want string }{
		// Values the decoder refuses.
		{"[raftstore]\nraft-base-tick-interval = \"10 parsecs\"", "raftstore.raft-base-tick-interval: invalid duration"},
		{"[raftstore]\nraft-base-tick-interval = 100", "raftstore.raft-base-tick-interval: invalid duration"},
		{"[coprocessor]\nregion-split-size = \"96XB\"", `coprocessor.region-split-size: invalid size "96XB"`},
		{"[coprocessor]\nregion-max-size = -1", "coprocessor.region-max-size: invalid size -1"},
		{"[coprocessor]\nregion-max-size = 1.5", "coprocessor.region-max-size: invalid size"},
		{"[raftstore]\nsync-log = \"yes\"", ":2: raftstore.sync-log: incompatible types"},
		{"[raftstore]\nstore-pool-size = \"2\"", "raftstore.store-pool-size"},
		{"[server]\naddr = ", ":2: server.addr: expected value"},

		// Values Validate refuses.
		{"[pd]\nendpoints = []", "pd.endpoints: must list at least one"},
		{"[pd]\nendpoints = [\"http://pd\"]", `pd.endpoints: "http://pd": want host:port`},
		{"[server]\naddr = \"\"", "server.addr"},
		{"[server]\naddr = \"127.0.0.1\"", `server.addr: "127.0.0.1": want host:port`},
		{"[server]\naddr = \"127.0.0.1:0\"", "server.addr"},
		{"[server]\naddr = \"127.0.0.1:65536\"", "server.addr"},
		{"[server]\naddr = \"0.0.0.0:20160\"", "server.advertise-addr: \"0.0.0.0:20160\" cannot be dialled"},
		{"[server]\nadvertise-addr = \"store1\"", "server.advertise-addr"},
		{"[server]\nstatus-addr = \"localhost\"", "server.status-addr"},
		{"[server]\nstatus-addr = \"127.0.0.1:20160\"", "server.status-addr: \"127.0.0.1:20160\" is also server.addr"},
		{"[server]\ngrpc-concurrency = 0", "server.grpc-concurrency: 0: must be at least 1"},
		{"[server]\ngrpc-raft-conn-num = 0", "server.grpc-raft-conn-num"},
		{"[storage]\ndata-dir = \"\"", "storage.data-dir"},
		{"[storage]\nscheduler-worker-pool-size = 0", "storage.scheduler-worker-pool-size"},
		{"[raftstore]\nstore-pool-size = 0", "raftstore.store-pool-size"},
		{"[raftstore]\napply-pool-size = -1", "raftstore.apply-pool-size"},
		{"[raftstore]\nraft-base-tick-interval = \"0s\"", "raftstore.raft-base-tick-interval: 0s: must be positive"},
		{"[raftstore]\nraft-heartbeat-ticks = 0", "raftstore.raft-heartbeat-ticks"},
		{"[raftstore]\nraft-heartbeat-ticks = 10", "raftstore.raft-election-timeout-ticks: 10: must be greater than raftstore.raft-heartbeat-ticks (10)"},
		{"[raftstore]\nraft-election-timeout-ticks = 1", "raftstore.raft-election-timeout-ticks"},
		{"[raftstore]\nraft-log-gc-count-limit = 0", "raftstore.raft-log-gc-count-limit"},
		{"[raftstore]\nraft-log-gc-size-limit = 0", "raftstore.raft-log-gc-size-limit"},
		{"[raftstore]\npd-heartbeat-tick-interval = \"0s\"", "raftstore.pd-heartbeat-tick-interval"},
		{"[raftstore]\npd-store-heartbeat-tick-interval = \"-1s\"", "raftstore.pd-store-heartbeat-tick-interval"},
		{"[raftstore]\nsplit-region-check-tick-interval = \"0s\"", "raftstore.split-region-check-tick-interval"},
		{"[raftstore]\nraft-store-max-leader-lease = \"1s\"", "raftstore.raft-store-max-leader-lease"},
		{"[raftstore]\nabnormal-leader-missing-duration = \"0s\"", "raftstore.abnormal-leader-missing-duration"},
		{"[readpool.unified]\nmax-thread-count = 0", "readpool.unified.max-thread-count"},
		{"[rocksdb]\nmax-background-jobs = 0", "rocksdb.max-background-jobs"},
		{"[pessimistic-txn]\nwait-for-lock-timeout = \"-1s\"", "pessimistic-txn.wait-for-lock-timeout"},
		{"[coprocessor]\nregion-split-size = 0", "coprocessor.region-split-size: must be positive"},
		{"[coprocessor]\nregion-split-size = \"200MB\"", "coprocessor.region-split-size: 200MiB: must not exceed coprocessor.region-max-size (144MiB)"},
		{"[coprocessor]\nregion-split-keys = 2000000", "coprocessor.region-split-keys"},
		{"[log]\nlevel = \"loud\"", `log.level: "loud" is not one of`},
	} {
		t.Run(strings.ReplaceAll(tc.toml, "\n", " "), func(t *testing.T) {
			path := writeConfig(t, tc.toml+"\n")
			cfg := storenode.DefaultConfig()
			_, err := storenode.LoadConfig(path, &cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}

// Validate reports every invalid value, not only the first.
func TestConfigValidateListsAll(t *testing.T) {
	cfg := storenode.DefaultConfig()
	cfg.Server.GRPCConcurrency = 0
	cfg.Log.Level = "loud"
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "server.grpc-concurrency") || !strings.Contains(err.Error(), "log.level") {
		t.Errorf("err = %v, want both keys", err)
	}
}

func TestConfigByteSize(t *testing.T) {
	for _, tc := range []struct {
		toml string
		want storenode.ByteSize
	}{
		{`"96MB"`, 96 << 20},
		{`"96MiB"`, 96 << 20},
		{`"96mb"`, 96 << 20},
		{`"512KB"`, 512 << 10},
		{`"1GB"`, 1 << 30},
		{`"1.5GiB"`, 3 << 29},
		{`"1024"`, 1024},
		{`"1024B"`, 1024},
		{`1024`, 1024},
		{`0`, 0},
	} {
		var v struct{ S storenode.ByteSize }
		if _, err := toml.Decode("S = "+tc.toml, &v); err != nil || v.S != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.toml, v.S, err, tc.want)
			continue
		}
		text, _ := v.S.MarshalText()
		var back storenode.ByteSize
		if err := back.UnmarshalText(text); err != nil || back != tc.want {
			t.Errorf("%s: MarshalText %q reads back as %d, %v", tc.toml, text, back, err)
		}
	}
}

func TestConfigDuration(t *testing.T) {
	for _, tc := range []struct {
		text string
		want time.Duration
	}{
		{"100ms", 100 * time.Millisecond},
		{"10s", 10 * time.Second},
		{"1m", time.Minute},
		{"1h30m", 90 * time.Minute},
	} {
		var d storenode.Duration
		if err := d.UnmarshalText([]byte(tc.text)); err != nil || d.Duration != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.text, d.Duration, err, tc.want)
		}
		text, _ := d.MarshalText()
		var back storenode.Duration
		if err := back.UnmarshalText(text); err != nil || back != d {
			t.Errorf("%s: MarshalText %q reads back as %v, %v", tc.text, text, back, err)
		}
	}
}

func TestConfigDerived(t *testing.T) {
	cfg := storenode.DefaultConfig()
	if got := cfg.AdvertiseAddr(); got != cfg.Server.Addr {
		t.Errorf("AdvertiseAddr() = %q, want server.addr %q", got, cfg.Server.Addr)
	}
	cfg.PD.Endpoints = []string{"127.0.0.1:2379", "http://127.0.0.1:2381", "https://pd:2379"}
	want := []string{"http://127.0.0.1:2379", "http://127.0.0.1:2381", "https://pd:2379"}
	if got := cfg.PDURLs(); !slices.Equal(got, want) {
		t.Errorf("PDURLs() = %q, want %q", got, want)
	}
	for level, want := range map[string]string{"trace": "DEBUG", "WARNING": "WARN", "critical": "ERROR", "fatal": "ERROR"} {
		if got := (storenode.LogConfig{Level: level}).SlogLevel().String(); got != want {
			t.Errorf("log level %s is slog's %s, want %s", level, got, want)
		}
	}
}

func dur(d time.Duration) storenode.Duration { return storenode.Duration{Duration: d} }

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
