package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

// The example documents every key with its default: loading it must give
// exactly Default, and it must mention every key.
func TestExampleIsDefault(t *testing.T) {
	cfg, err := Load("basalt.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("example = %+v\nwant Default() = %+v", cfg, Default())
	}
	_, src, err := readFile("basalt.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range knownKeys {
		if !src.md.IsDefined(strings.Split(k, ".")...) {
			t.Errorf("basalt.toml.example does not document %s", k)
		}
	}
}

func TestLoadFull(t *testing.T) {
	cfg, err := Load("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Host:             "0.0.0.0",
		Port:             4001,
		Store:            StoreMockTiKV,
		Path:             "/var/lib/basalt",
		MaxConnections:   1000,
		MaxAllowedPacket: GiB,
		Lease:            Duration(10 * time.Second),
		SplitTable:       true,
		ServerVersion:    "8.0.11-Basalt-custom",
		Status:           Status{StatusPort: 10081},
		Log:              Log{Level: "debug", File: "/var/log/basalt.log", SlowQueryFile: "/var/log/basalt-slow.log", SlowQueryMaxSize: 64, SlowQueryMaxBackups: 3},
		Performance:      Performance{MaxProcs: 8, GOGC: 150, GoMemoryLimit: 2 * GiB},
		PreparedPlanCache: PreparedPlanCache{
			Enabled:  false,
			Capacity: 0,
		},
		Storage: Storage{
			BlockCache:             BlockCache{Capacity: 1536 * MiB},
			SyncLog:                false,
			GCLifeTime:             Duration(90 * time.Minute),
			LatestVersionCacheSize: 0,
			WALMinSyncInterval:     Duration(time.Millisecond),
		},
		RocksDB:        RocksDB{DefaultCF: DefaultCF{WriteBufferSize: 128 * MiB, MaxWriteBufferNumber: 4}},
		Txn:            Txn{LockWaitTimeout: 5, DefaultMode: TxnOptimistic},
		PessimisticTxn: PessimisticTxn{MaxRetryCount: 10},
		TiKVClient: TiKVClient{GrpcConnectionCount: 2, MaxBatchSize: 0, MaxBatchWaitTime: 2000000,
			BatchWaitSize: 4, BatchPolicy: `custom {"v": 1, "t": 0.0002, "n": 5, "w": 0.2, "p": 1.5, "q": 0.5}`, RegionCacheTTL: 60,
			CommitTimeout: Duration(10 * time.Second), AsyncCommit: AsyncCommit{KeysLimit: 64, TotalKeySizeLimit: 8 * KiB}},
		Security: Security{SSLCert: "/etc/basalt/server-cert.pem", SSLKey: "/etc/basalt/server-key.pem",
			AutoTLS: false, RequireSecureTransport: true, SecureFilePriv: "/var/lib/basalt-files"},
		// mocktikv uses neither the embedded store nor the schema lease.
		Warnings: []string{
			`config key lease has no effect with store "mocktikv"; ignored`,
			`config key split-table has no effect with store "mocktikv"; ignored`,
			`config key storage.block-cache.capacity has no effect with store "mocktikv"; ignored`,
			`config key storage.sync-log has no effect with store "mocktikv"; ignored`,
			`config key storage.gc-life-time has no effect with store "mocktikv"; ignored`,
			`config key storage.latest-version-cache-size has no effect with store "mocktikv"; ignored`,
			`config key storage.wal-min-sync-interval has no effect with store "mocktikv"; ignored`,
			`config key rocksdb.defaultcf.write-buffer-size has no effect with store "mocktikv"; ignored`,
			`config key rocksdb.defaultcf.max-write-buffer-number has no effect with store "mocktikv"; ignored`,
		},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}
	// The file must exercise every key: every field but the flag-only
	// ones differs from its default.
	var check func(path string, got, def reflect.Value)
	check = func(path string, got, def reflect.Value) {
		for i := 0; i < got.NumField(); i++ {
			f := got.Type().Field(i)
			tag := f.Tag.Get("toml")
			if tag == "-" {
				continue
			}
			if f.Type.Kind() == reflect.Struct {
				check(path+tag+".", got.Field(i), def.Field(i))
				continue
			}
			if got.Field(i).Interface() == def.Field(i).Interface() {
				t.Errorf("testdata/full.toml leaves %s%s at its default", path, tag)
			}
		}
	}
	check("", reflect.ValueOf(*cfg), reflect.ValueOf(*Default()))
	if cfg.Txn.Pessimistic() || cfg.Txn.LockWait() != 5*time.Second {
		t.Errorf("Txn helpers: pessimistic=%v lockwait=%v", cfg.Txn.Pessimistic(), cfg.Txn.LockWait())
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		want []string // substrings of the error, each after "c.toml"
		not  []string // substrings the error must not hold
	}{{
		name: "unknown key with suggestion",
		file: "port = 4000\nstatus-port = 1\n",
		want: []string{`:2: unknown key "status-port" (did you mean "status.status-port"?)`},
	}, {
		name: "unknown key in a section",
		file: "[log]\nlevel = \"info\"\nfilee = \"x\"\n",
		want: []string{`:3: unknown key "log.filee" (did you mean "log.file"?)`},
	}, {
		name: "unknown table named once",
		file: "port = 4000\n\n[tikv]\na = 1\nb = 2\n",
		want: []string{`:3: unknown key "tikv"`},
		not:  []string{"tikv.a", "tikv.b"},
	}, {
		name: "unknown dotted key",
		file: "storage.sync-logs = true\n",
		want: []string{`:1: unknown key "storage.sync-logs" (did you mean "storage.sync-log"?)`},
	}, {
		name: "port out of range",
		file: "# comment\nport = 70000\n",
		want: []string{`:2: port: 70000 is out of range 1..65535`},
	}, {
		name: "port of the wrong type",
		file: "port = \"4000\"\n",
		want: []string{`:1: port: incompatible types`},
	}, {
		name: "status port equal to port",
		file: "port = 5000\n[status]\nstatus-port = 5000\n",
		want: []string{`:3: status.status-port: 5000 is also the MySQL port`},
	}, {
		name: "status port out of range",
		file: "[status]\nstatus-port = -1\n",
		want: []string{`:2: status.status-port: -1 is out of range 0..65535`},
	}, {
		name: "TLS certificate without its key",
		file: "[security]\nssl-cert = \"/c.pem\"\n",
		want: []string{`:2: security.ssl-cert: set without security.ssl-key`},
	}, {
		name: "secure transport required without TLS",
		file: "[security]\nauto-tls = false\nrequire-secure-transport = true\n",
		want: []string{`:3: security.require-secure-transport: needs TLS`},
	}, {
		name: "bad size unit",
		file: "[storage.block-cache]\ncapacity = \"1XB\"\n",
		want: []string{`:2: storage.block-cache.capacity: invalid size "1XB": unknown unit "XB"`},
	}, {
		name: "bad size unit, older name",
		file: "[storage]\nblock-cache-size = \"1XB\"\n",
		want: []string{`:2: storage.block-cache-size: invalid size "1XB": unknown unit "XB"`},
	}, {
		name: "negative size",
		file: "[rocksdb.defaultcf]\nwrite-buffer-size = -1\n",
		want: []string{`:2: rocksdb.defaultcf.write-buffer-size: invalid size -1: negative`},
	}, {
		name: "negative size, older name",
		file: "[storage]\nmemtable-size = -1\n",
		want: []string{`:2: storage.memtable-size: invalid size -1: negative`},
	}, {
		name: "a key under both its names",
		file: "[storage]\nblock-cache-size = \"1GiB\"\n[storage.block-cache]\ncapacity = \"1GiB\"\n",
		want: []string{`:2: storage.block-cache-size and storage.block-cache.capacity are the same setting (storage.block-cache-size is its older name): keep one`},
	}, {
		name: "size of the wrong type",
		file: "max-allowed-packet = 1.5\n",
		want: []string{`:1: max-allowed-packet: invalid size: want a string`},
	}, {
		name: "size too small",
		file: "[storage.block-cache]\ncapacity = \"1KiB\"\n",
		want: []string{`:2: storage.block-cache.capacity: 1KiB is less than 1MiB`},
	}, {
		name: "size too small, older name",
		file: "[storage]\nblock-cache-size = \"1KiB\"\n",
		want: []string{`:2: storage.block-cache-size: 1KiB is less than 1MiB`},
	}, {
		name: "memtable too large",
		file: "[rocksdb.defaultcf]\nwrite-buffer-size = \"4GiB\"\n",
		want: []string{`:2: rocksdb.defaultcf.write-buffer-size: 4GiB is out of range 1MiB..4294967295B`},
	}, {
		name: "memtable too large, older name",
		file: "[storage]\nmemtable-size = \"4GiB\"\n",
		want: []string{`:2: storage.memtable-size: 4GiB is out of range 1MiB..4294967295B`},
	}, {
		name: "one memtable",
		file: "[rocksdb.defaultcf]\nmax-write-buffer-number = 1\n",
		want: []string{`:2: rocksdb.defaultcf.max-write-buffer-number: 1 is out of range 2..64`},
	}, {
		name: "packet too large",
		file: "max-allowed-packet = \"2GB\"\n",
		want: []string{`:1: max-allowed-packet: 2GiB is out of range 1KiB..1GiB`},
	}, {
		name: "duration without unit",
		file: "[storage]\ngc-life-time = 600\n",
		want: []string{`:2: storage.gc-life-time: invalid duration: want a string with a unit`},
	}, {
		name: "bad duration",
		file: "[storage]\ngc-life-time = \"10 minutes\"\n",
		want: []string{`:2: storage.gc-life-time: invalid duration "10 minutes"`},
	}, {
		name: "zero duration",
		file: "[storage]\ngc-life-time = \"0s\"\n",
		want: []string{`:2: storage.gc-life-time: 0s: must be positive`},
	}, {
		name: "WAL sync interval too long",
		file: "[storage]\nwal-min-sync-interval = \"1s\"\n",
		want: []string{`:2: storage.wal-min-sync-interval: 1s is out of range 0..10ms`},
	}, {
		name: "unknown txn mode",
		file: "[txn]\ndefault-mode = \"relaxed\"\n",
		want: []string{`:2: txn.default-mode: unknown mode "relaxed" (want "pessimistic" or "optimistic")`},
	}, {
		name: "lock wait timeout zero",
		file: "[txn]\nlock-wait-timeout = 0\n",
		want: []string{`:2: txn.lock-wait-timeout: 0 is out of range 1..1073741824 (seconds)`},
	}, {
		name: "bad log level",
		file: "[log]\nlevel = \"loud\"\n",
		want: []string{`:2: log.level: unknown level "loud"`},
	}, {
		name: "plan cache enabled without capacity",
		file: "[prepared-plan-cache]\ncapacity = 0\n",
		want: []string{`:2: prepared-plan-cache.capacity: 0: must be positive`},
	}, {
		name: "negative max procs and connections",
		file: "max-connections = -1\n[performance]\nmax-procs = -2\n",
		want: []string{`:1: max-connections: -1 is negative`, `:3: performance.max-procs: -2 is negative`},
	}, {
		name: "empty host and path",
		file: "host = \"\"\npath = \"\"\n",
		want: []string{`:1: host: must not be empty`, `:2: path: the data directory must not be empty`},
	}, {
		name: "tikv-client values out of range",
		file: "[pessimistic-txn]\nmax-retry-count = -1\n[tikv-client]\ngrpc-connection-count = 0\n",
		want: []string{`:2: pessimistic-txn.max-retry-count: -1 is below 1`, `:4: tikv-client.grpc-connection-count: 0 is below 1`},
	}, {
		name: "unknown batch policy",
		file: "[tikv-client]\nbatch-policy = \"eager\"\n",
		want: []string{`:2: tikv-client.batch-policy: "eager": not "basic", "standard", "positive" or "custom {...}"`},
	}, {
		name: "custom batch policy with an unknown option",
		file: "[tikv-client]\nbatch-policy = 'custom {\"v\": 1, \"x\": 2}'\nbatch-wait-size = 0\n",
		want: []string{`:3: tikv-client.batch-wait-size: 0 is below 1`, `:2: tikv-client.batch-policy: "custom {\"v\": 1, \"x\": 2}": custom option "x" is not one of v, t, n, w, p, q`},
	}, {
		name: "unknown store",
		file: "store = \"unistore\"\n",
		want: []string{`:1: store: "unistore": want local, tikv or mocktikv`},
	}, {
		name: "tikv store with a data directory for a path",
		file: "store = \"tikv\"\npath = \"./basalt-data\"\n",
		want: []string{`:2: path: with store "tikv", the PD endpoints as host:port,...`},
	}, {
		name: "tikv store with a bad endpoint among good ones",
		file: "store = \"tikv\"\npath = \"127.0.0.1:2379,http://127.0.0.1:2381,pd3\"\n",
		want: []string{`:2: path: with store "tikv", the PD endpoints as host:port,...: address pd3: missing port in address`},
	}, {
		name: "TiDB key of the wrong type",
		file: "[performance]\ntcp-keep-alive = \"yes\"\n",
		want: []string{`:2: performance.tcp-keep-alive: yes is not a boolean`},
	}, {
		name: "TiDB duration key that is no duration",
		file: "[performance]\nstats-lease = \"3 seconds\"\n",
		want: []string{`:2: performance.stats-lease: invalid duration "3 seconds"`},
	}, {
		name: "unknown key in a TiDB section",
		file: "[tikv-client]\nmax-batch-wait-tim = 5\n",
		want: []string{`:2: unknown key "tikv-client.max-batch-wait-tim" (did you mean "tikv-client.max-batch-wait-time"?)`},
	}, {
		name: "syntax error",
		file: "port = 4000\nhost = \n",
		want: []string{`:2:`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.toml")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), path+w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, path+w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error\n%v\ncontains %q", err, n)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	if err == nil || !strings.Contains(err.Error(), "nope.toml") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseLogLevel(t *testing.T) {
	for _, s := range []string{"debug", "INFO", "warn", "warning", "error"} {
		if _, err := ParseLogLevel(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := ParseLogLevel("fatal"); err == nil {
		t.Error("fatal accepted")
	}
}

// A TiDB configuration file as TiDB's benchmark reports give it loads:
// TiDB's keys Basalt has no use for, and Basalt's own that the store does
// not use, are each named by a warning; the keys that matter take effect.
func TestLoadTiDBReportFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tidb.toml")
	os.WriteFile(file, []byte(`log.level = "error"
[performance]
max-procs = 20
tcp-keep-alive = true
txn-total-size-limit = 104857600
stats-lease = "3s"
pseudo-estimate-ratio = 0.8
[prepared-plan-cache]
enabled = true
capacity = 100
memory-guard-ratio = 0.1
[pessimistic-txn]
max-retry-count = 256
deadlock-history-capacity = 10
[tikv-client]
max-batch-wait-time = 2000000
grpc-connection-count = 4
enable-chunk-rpc = true
[tikv-client.copr-cache]
capacity-mb = 1000.0
[tikv-client.async-commit]
safe-window = "2s"
`), 0o644)
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Performance.MaxProcs != 20 || cfg.Log.Level != "error" || cfg.TiKVClient.MaxBatchWaitTime != 2000000 {
		t.Errorf("keys Basalt knows: %+v", cfg)
	}
	want := []string{
		"config key performance.tcp-keep-alive is TiDB's and has no effect in Basalt; ignored",
		"config key performance.txn-total-size-limit is TiDB's and has no effect in Basalt; ignored",
		"config key performance.stats-lease is TiDB's and has no effect in Basalt; ignored",
		"config key performance.pseudo-estimate-ratio is TiDB's and has no effect in Basalt; ignored",
		"config key prepared-plan-cache.memory-guard-ratio is TiDB's and has no effect in Basalt; ignored",
		"config key pessimistic-txn.deadlock-history-capacity is TiDB's and has no effect in Basalt; ignored",
		"config key tikv-client.enable-chunk-rpc is TiDB's and has no effect in Basalt; ignored",
		"config key tikv-client.copr-cache.capacity-mb is TiDB's and has no effect in Basalt; ignored",
		"config key tikv-client.async-commit.safe-window is TiDB's and has no effect in Basalt; ignored",
		// Set to other than its default with the embedded store (the
		// default grpc-connection-count, 4, is not worth a line).
		`config key tikv-client.max-batch-wait-time has no effect with store "local"; ignored`,
	}
	if !reflect.DeepEqual(cfg.Warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(cfg.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

// A file may set the storage engine's sizes by Basalt's older names; they
// take effect as TiKV's names do, and warnings name the key as written.
func TestLoadRenamedKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "old.toml")
	os.WriteFile(file, []byte("[storage]\nblock-cache-size = \"512MiB\"\nmemtable-size = 33554432\n"), 0o644)
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Storage.BlockCache.Capacity != 512*MiB || cfg.RocksDB.DefaultCF.WriteBufferSize != 32*MiB || len(cfg.Warnings) != 0 {
		t.Errorf("block cache %s, write buffer %s, warnings %q", cfg.Storage.BlockCache.Capacity, cfg.RocksDB.DefaultCF.WriteBufferSize, cfg.Warnings)
	}
	os.WriteFile(file, []byte("store = \"tikv\"\npath = \"127.0.0.1:2379\"\n[storage]\nblock-cache-size = \"512MiB\"\n"), 0o644)
	if cfg, err = Load(file); err != nil {
		t.Fatal(err)
	}
	want := []string{`config key storage.block-cache-size has no effect with store "tikv"; ignored`}
	if !reflect.DeepEqual(cfg.Warnings, want) {
		t.Errorf("warnings %q, want %q", cfg.Warnings, want)
	}
}
