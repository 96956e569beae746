// Package config is the configuration of the basalt binary: a TOML file
// (see basalt.toml.example) overridden by command-line flags, with the names
// a TiDB or MySQL user already knows (port, status.status-port, log.level,
// performance.max-procs, prepared-plan-cache.enabled, ...).
//
// Precedence, lowest first: Default, then the file (Load), then the flags
// given on the command line (Flags.Apply). Validate checks the result; every
// error it returns names the offending key.
//
//	config.go     the Config struct, its defaults and Validate
//	load.go       reading a file: unknown keys and bad values, with line numbers
//	tidbkeys.go   TiDB's keys, accepted and ignored; keys idle with the store
//	size.go       ByteSize: "256MiB", "1GB" or a number of bytes
//	duration.go   Duration: "10m", "1h30m"
//	flags.go      the flags that override the file
package config

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration. Each field's toml tag is its key in
// the file; a field of a nested struct is keyed "section.key".
type Config struct {
	// Host is the address the MySQL port and the status port bind to.
	Host string `toml:"host"`
	// Port is the MySQL protocol port.
	Port int `toml:"port"`
	// Store is the storage the SQL layer runs on, as TiDB's --store:
	// "local" (the embedded store, in Path), "tikv" (a cluster, whose PD
	// members Path lists as host:port,...) or "mocktikv" (client-go's
	// in-process mock cluster, in memory: for tests).
	Store string `toml:"store"`
	// Path is the data directory of the embedded store (flag --data-dir),
	// or with store "tikv" the PD endpoints.
	Path string `toml:"path"`
	// MaxConnections bounds the connections served at once; more are
	// refused with ER_CON_COUNT_ERROR (1040). 0 means no bound.
	MaxConnections int `toml:"max-connections"`
	// MaxAllowedPacket is the largest packet a client may send
	// (max_allowed_packet).
	MaxAllowedPacket ByteSize `toml:"max-allowed-packet"`
	// InitialRootPassword is the password given to root when the data
	// directory is created. It is a flag only: passwords stay out of files.
	InitialRootPassword string `toml:"-"`
	// Lease is the schema lease, TiDB's `lease`: with store "tikv", a SQL
	// node that has not renewed its registration in PD's etcd or reloaded
	// the schema for this long stops serving, and the other SQL nodes
	// stop waiting for it after a schema change (package schemasync).
	Lease Duration `toml:"lease"`
	// SplitTable, TiDB's split-table: with store "tikv", CREATE TABLE and
	// TRUNCATE TABLE start a region at the table's first key, so that
	// every table has regions of its own, which PD can move and whose
	// leaders it can spread over the stores. No effect on the embedded
	// store. Off by default, unlike TiDB: on the 2-core playground it cost
	// sysbench's 4 x 100k a fifth to a half of its QPS (more, smaller
	// messages to three leaders instead of one; transactions across
	// tables no longer commit in one phase); docs/cluster-bench/README.md.
	SplitTable bool `toml:"split-table"`
	// ServerVersion, TiDB's server-version, replaces the version string
	// the handshake, VERSION() and @@version report (by default
	// "8.4.0-Basalt-<release>"): clients and ORMs branch on it.
	ServerVersion string `toml:"server-version"`

	Status            Status            `toml:"status"`
	Log               Log               `toml:"log"`
	Performance       Performance       `toml:"performance"`
	PreparedPlanCache PreparedPlanCache `toml:"prepared-plan-cache"`
	Storage           Storage           `toml:"storage"`
	RocksDB           RocksDB           `toml:"rocksdb"`
	Txn               Txn               `toml:"txn"`
	PessimisticTxn    PessimisticTxn    `toml:"pessimistic-txn"`
	TiKVClient        TiKVClient        `toml:"tikv-client"`
	Security          Security          `toml:"security"`

	// Warnings are what the server logs about the file at start: the
	// keys it sets that have no effect (TiDB's keys that Basalt ignores,
	// and Basalt's own that the configured store does not use).
	Warnings []string `toml:"-"`
}

// Security configures TLS for MySQL clients (TiDB's [security] keys).
type Security struct {
	// SSLCert and SSLKey are PEM files of the server's certificate (chain)
	// and private key (flags --ssl-cert, --ssl-key). Both or neither.
	SSLCert string `toml:"ssl-cert"`
	SSLKey  string `toml:"ssl-key"`
	// AutoTLS, when no certificate is given, creates a self-signed CA and a
	// server certificate in the data directory at first start (ca.pem,
	// server-cert.pem, server-key.pem), as MySQL 8 does, and serves it.
	// false without a certificate: no TLS.
	AutoTLS bool `toml:"auto-tls"`
	// RequireSecureTransport refuses clients that use neither TLS nor a Unix
	// socket (error 3159); the initial value of require_secure_transport.
	RequireSecureTransport bool `toml:"require-secure-transport"`
	// SecureFilePriv is secure_file_priv: the directory LOAD DATA INFILE
	// may read server files from; "" any (the default, as in MariaDB),
	// "NULL" none.
	SecureFilePriv string `toml:"secure-file-priv"`
}

// Status configures the HTTP status server (/status, /metrics).
type Status struct {
	// StatusPort is the HTTP port; 0 disables the status server.
	StatusPort int `toml:"status-port"`
}

// Log configures logging.
type Log struct {
	// Level is one of debug, info, warn, error.
	Level string `toml:"level"`
	// File is the file logs are appended to; empty means stderr.
	File string `toml:"file"`
	// SlowQueryFile is the slow query log (TiDB's key): statements slower
	// than tidb_slow_log_threshold, in TiDB's format. Empty: basalt-slow.log
	// in the data directory with the embedded store, in the working
	// directory otherwise (TiDB's default is a relative tidb-slow.log).
	SlowQueryFile string `toml:"slow-query-file"`
	// SlowQueryMaxSize is the size in megabytes past which the slow log is
	// rotated (TiDB's log.file.max-size); SlowQueryMaxBackups the rotated
	// files kept, 0 for all (log.file.max-backups).
	SlowQueryMaxSize    int `toml:"slow-query-max-size"`
	SlowQueryMaxBackups int `toml:"slow-query-max-backups"`
}

// SlowQueryPath is the slow log's file for a node whose data directory
// (embedded store) is dataDir, "" for none.
func (l Log) SlowQueryPath(dataDir string) string {
	if l.SlowQueryFile != "" || dataDir == "" {
		return cmp.Or(l.SlowQueryFile, "basalt-slow.log")
	}
	return filepath.Join(dataDir, "basalt-slow.log")
}

// Performance holds knobs of the process as a whole.
type Performance struct {
	// MaxProcs sets GOMAXPROCS; 0 leaves Go's default (the CPUs available).
	MaxProcs int `toml:"max-procs"`
	// GOGC is the Go garbage collector's GOGC: how far the heap grows past
	// what was live at the last collection before the next one, in percent.
	// The GOGC environment variable, when set, wins.
	GOGC int `toml:"gogc"`
	// GoMemoryLimit is a soft limit on the Go runtime's memory, at which
	// the collector runs as often as it must to stay under; 0 means none.
	// The storage engine's caches are outside it. The GOMEMLIMIT
	// environment variable, when set, wins.
	GoMemoryLimit ByteSize `toml:"go-memory-limit"`
}

// PreparedPlanCache configures the per-session cache of prepared
// statements' plans.
type PreparedPlanCache struct {
	Enabled bool `toml:"enabled"`
	// Capacity is the number of plans each session keeps.
	Capacity int `toml:"capacity"`
}

// Storage configures the embedded store.
type Storage struct {
	// BlockCache is the storage engine's block cache.
	BlockCache BlockCache `toml:"block-cache"`
	// SyncLog makes each commit wait for its WAL write to reach the disk.
	// Turned off, commits are faster and the last ones acknowledged before
	// a crash may be lost (TiKV's raftstore.sync-log).
	SyncLog bool `toml:"sync-log"`
	// GCLifeTime is how long old row versions are kept (tidb_gc_life_time).
	GCLifeTime Duration `toml:"gc-life-time"`
	// LatestVersionCacheSize bounds the memory that holds the newest
	// version of the rows of hot key ranges; 0 turns the cache off. It is
	// Go heap, inside performance.go-memory-limit.
	LatestVersionCacheSize ByteSize `toml:"latest-version-cache-size"`
	// WALMinSyncInterval is the least time between two syncs of the
	// embedded store's WAL while several commits are in flight: a synced
	// commit that comes sooner waits out the rest of it, and the commits
	// that arrive meanwhile share its sync (Pebble's WALMinSyncInterval).
	// A lone committer is never held up, and neither are the commits
	// after a sync that 8 or more arrived to (they share the next one
	// without waiting). 0 syncs as soon as the last sync returns.
	WALMinSyncInterval Duration `toml:"wal-min-sync-interval"`
}

// BlockCache is TiKV's [storage.block-cache].
type BlockCache struct {
	// Capacity is the memory of Pebble's block cache, which also holds
	// the memtables: Pebble reserves each memtable's arena in it, and data
	// blocks get the rest. Outside the Go heap. (Basalt's older name:
	// storage.block-cache-size.)
	Capacity ByteSize `toml:"capacity"`
}

// RocksDB is TiKV's [rocksdb] section, of which the embedded store takes
// the memtable settings of the default column family (Pebble's one
// memtable serves every column family).
type RocksDB struct {
	DefaultCF DefaultCF `toml:"defaultcf"`
}

// DefaultCF is [rocksdb.defaultcf].
type DefaultCF struct {
	// WriteBufferSize is the size of a memtable (Basalt's older name:
	// storage.memtable-size).
	WriteBufferSize ByteSize `toml:"write-buffer-size"`
	// MaxWriteBufferNumber is how many memtables may fill before writes
	// stop until a flush (Pebble's MemTableStopWritesThreshold, at least
	// 2). With the one arena Pebble keeps for reuse, the memtables hold at
	// most (MaxWriteBufferNumber + 1) x WriteBufferSize.
	MaxWriteBufferNumber int `toml:"max-write-buffer-number"`
}

// Transaction modes, the values of txn.default-mode.
const (
	TxnPessimistic = "pessimistic"
	TxnOptimistic  = "optimistic"
)

// Txn configures transactions.
type Txn struct {
	// LockWaitTimeout is how many seconds a statement waits for a row lock
	// before failing with ER_LOCK_WAIT_TIMEOUT (innodb_lock_wait_timeout).
	LockWaitTimeout int `toml:"lock-wait-timeout"`
	// DefaultMode is the mode of transactions that do not name one:
	// TxnPessimistic or TxnOptimistic.
	DefaultMode string `toml:"default-mode"`
}

// PessimisticTxn is TiDB's [pessimistic-txn] section.
type PessimisticTxn struct {
	// MaxRetryCount bounds how many times a statement of a pessimistic
	// transaction runs again after a write conflict (at least 1).
	MaxRetryCount int `toml:"max-retry-count"`
}

// TiKVClient is TiDB's [tikv-client] section: client-go's settings, for
// store "tikv".
type TiKVClient struct {
	// GrpcConnectionCount is how many connections go to each store.
	GrpcConnectionCount int `toml:"grpc-connection-count"`
	// MaxBatchSize bounds how many requests one batched RPC carries; 0
	// sends each on its own.
	MaxBatchSize int `toml:"max-batch-size"`
	// MaxBatchWaitTime, in nanoseconds as TiDB's, is how long a batch
	// may wait for more requests when a store is busy.
	MaxBatchWaitTime int64 `toml:"max-batch-wait-time"`
	// BatchWaitSize is how many requests a batch waits for, when it
	// waits (max-batch-wait-time on a busy store, or the batch policy).
	BatchWaitSize int `toml:"batch-wait-size"`
	// BatchPolicy is client-go's turbo batching: when a batch waits up to
	// its time for more requests, by how fast they arrive. "basic" (never),
	// "standard" (TiDB's default), "positive" (always) or "custom {...}"
	// (client-go's JSON options v, t, n, w, p, q).
	BatchPolicy string `toml:"batch-policy"`
	// RegionCacheTTL is how many seconds an unused region stays cached.
	RegionCacheTTL int `toml:"region-cache-ttl"`
	// CommitTimeout bounds a commit's wait.
	CommitTimeout Duration `toml:"commit-timeout"`
	// AsyncCommit bounds the transactions that commit asynchronously.
	AsyncCommit AsyncCommit `toml:"async-commit"`
}

// AsyncCommit is [tikv-client.async-commit].
type AsyncCommit struct {
	// KeysLimit: at most this many keys.
	KeysLimit int `toml:"keys-limit"`
	// TotalKeySizeLimit: at most this many bytes of keys.
	TotalKeySizeLimit ByteSize `toml:"total-key-size-limit"`
}

// The storages (Config.Store).
const (
	StoreLocal    = "local"
	StoreTiKV     = "tikv"
	StoreMockTiKV = "mocktikv"
)

// PDEndpoints splits a --path of PD members, host:port,... (an http://
// in front of each is allowed, as PD's own URLs have it), into host:port
// strings.
func PDEndpoints(path string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(path, ",") {
		p = strings.TrimPrefix(strings.TrimSpace(p), "http://")
		if p == "" {
			continue
		}
		host, port, err := net.SplitHostPort(p)
		if err != nil {
			return nil, err
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
			return nil, fmt.Errorf("%q is not host:port", p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("no endpoint given")
	}
	return out, nil
}

// Default returns the configuration used for every key the file and the
// flags leave unset.
func Default() *Config {
	return &Config{
		Host:             "127.0.0.1",
		Port:             4000,
		Store:            StoreLocal,
		Path:             "./basalt-data",
		MaxConnections:   0,
		MaxAllowedPacket: 64 * MiB,
		Lease:            Duration(45 * time.Second),
		Status:           Status{StatusPort: 10080},
		Performance:      Performance{GOGC: 400, GoMemoryLimit: 384 * MiB},
		Log:              Log{Level: "info", SlowQueryMaxSize: 300, SlowQueryMaxBackups: 10},
		PreparedPlanCache: PreparedPlanCache{
			Enabled:  true,
			Capacity: 100,
		},
		Storage: Storage{
			BlockCache:             BlockCache{Capacity: 256 * MiB},
			SyncLog:                true,
			GCLifeTime:             Duration(10 * time.Minute),
			LatestVersionCacheSize: 64 * MiB,
			WALMinSyncInterval:     Duration(DefWALMinSyncInterval),
		},
		RocksDB: RocksDB{DefaultCF: DefaultCF{WriteBufferSize: 16 * MiB, MaxWriteBufferNumber: 2}},
		Txn: Txn{
			LockWaitTimeout: 50,
			DefaultMode:     TxnPessimistic,
		},
		PessimisticTxn: PessimisticTxn{MaxRetryCount: 256},
		TiKVClient: TiKVClient{GrpcConnectionCount: 4, MaxBatchSize: 128, BatchWaitSize: 8,
			BatchPolicy: DefBatchPolicy, RegionCacheTTL: 600,
			CommitTimeout: Duration(41 * time.Second), AsyncCommit: AsyncCommit{KeysLimit: 256, TotalKeySizeLimit: 4096}},
		Security: Security{AutoTLS: true},
	}
}

// ValueError is a value Validate refuses. Key is its key in the file
// ("storage.block-cache.capacity").
type ValueError struct {
	Key    string
	Reason string
}

func (e *ValueError) Error() string { return e.Key + ": " + e.Reason }

func invalid(key, format string, args ...any) *ValueError {
	return &ValueError{Key: key, Reason: fmt.Sprintf(format, args...)}
}

// Limits of the values Validate accepts.
const (
	minMaxAllowedPacket  = 1 * KiB // MySQL's bounds of max_allowed_packet
	maxMaxAllowedPacket  = 1 * GiB
	minStorageSize       = 1 * MiB
	maxMemTableSize      = 4*GiB - 1 // the storage engine's limit
	maxWriteBufferNumber = 64
	maxLockWaitTimeout   = 1 << 30 // innodb_lock_wait_timeout's limit
)

// Validate checks every value, and returns all the errors found (joined),
// each a *ValueError naming its key.
func (c *Config) Validate() error {
	var errs []error
	add := func(e *ValueError) { errs = append(errs, e) }

	if strings.TrimSpace(c.Host) == "" {
		add(invalid("host", "must not be empty (use 0.0.0.0 to listen on every interface)"))
	}
	if c.Port < 1 || c.Port > 65535 {
		add(invalid("port", "%d is out of range 1..65535", c.Port))
	}
	if c.Status.StatusPort < 0 || c.Status.StatusPort > 65535 {
		add(invalid("status.status-port", "%d is out of range 0..65535 (0 disables the status server)", c.Status.StatusPort))
	} else if c.Status.StatusPort == c.Port {
		add(invalid("status.status-port", "%d is also the MySQL port", c.Status.StatusPort))
	}
	switch c.Store {
	case StoreLocal:
		if strings.TrimSpace(c.Path) == "" {
			add(invalid("path", "the data directory must not be empty"))
		}
	case StoreTiKV:
		if _, err := PDEndpoints(c.Path); err != nil {
			add(invalid("path", "with store %q, the PD endpoints as host:port,...: %v", StoreTiKV, err))
		}
	case StoreMockTiKV:
	default:
		add(invalid("store", "%q: want %s, %s or %s", c.Store, StoreLocal, StoreTiKV, StoreMockTiKV))
	}

	if strings.ContainsAny(c.ServerVersion, "\x00\r\n") {
		add(invalid("server-version", "%q holds a NUL or line break", c.ServerVersion))
	}
	if c.Lease < Duration(time.Second) {
		add(invalid("lease", "%v is below 1s", time.Duration(c.Lease)))
	}
	if c.MaxConnections < 0 {
		add(invalid("max-connections", "%d is negative (0 means no limit)", c.MaxConnections))
	}
	if c.PessimisticTxn.MaxRetryCount < 1 {
		add(invalid("pessimistic-txn.max-retry-count", "%d is below 1", c.PessimisticTxn.MaxRetryCount))
	}
	tc := c.TiKVClient
	for _, k := range []struct {
		key      string
		v, least int64
	}{
		{"tikv-client.grpc-connection-count", int64(tc.GrpcConnectionCount), 1},
		{"tikv-client.max-batch-size", int64(tc.MaxBatchSize), 0},
		{"tikv-client.max-batch-wait-time", tc.MaxBatchWaitTime, 0},
		{"tikv-client.batch-wait-size", int64(tc.BatchWaitSize), 1},
		{"tikv-client.region-cache-ttl", int64(tc.RegionCacheTTL), 1},
		{"tikv-client.commit-timeout", int64(tc.CommitTimeout), 1},
		{"tikv-client.async-commit.keys-limit", int64(tc.AsyncCommit.KeysLimit), 1},
		{"tikv-client.async-commit.total-key-size-limit", int64(tc.AsyncCommit.TotalKeySizeLimit), 1},
	} {
		if k.v < k.least {
			add(invalid(k.key, "%d is below %d", k.v, k.least))
		}
	}
	if err := checkBatchPolicy(tc.BatchPolicy); err != nil {
		add(invalid("tikv-client.batch-policy", "%q: %v", tc.BatchPolicy, err))
	}
	if c.MaxAllowedPacket < minMaxAllowedPacket || c.MaxAllowedPacket > maxMaxAllowedPacket {
		add(invalid("max-allowed-packet", "%s is out of range %s..%s", c.MaxAllowedPacket, ByteSize(minMaxAllowedPacket), ByteSize(maxMaxAllowedPacket)))
	}
	if c.Log.SlowQueryMaxSize < 0 {
		add(invalid("log.slow-query-max-size", "must not be negative"))
	}
	if c.Log.SlowQueryMaxBackups < 0 {
		add(invalid("log.slow-query-max-backups", "must not be negative"))
	}
	if _, err := ParseLogLevel(c.Log.Level); err != nil {
		add(invalid("log.level", "%v", err))
	}
	if c.Performance.MaxProcs < 0 {
		add(invalid("performance.max-procs", "%d is negative (0 means one per CPU)", c.Performance.MaxProcs))
	}
	if c.Performance.GOGC < 1 {
		add(invalid("performance.gogc", "%d: must be positive", c.Performance.GOGC))
	}
	if c.PreparedPlanCache.Capacity < 0 || (c.PreparedPlanCache.Enabled && c.PreparedPlanCache.Capacity == 0) {
		add(invalid("prepared-plan-cache.capacity", "%d: must be positive (set prepared-plan-cache.enabled = false to disable the cache)", c.PreparedPlanCache.Capacity))
	}
	if c.Storage.BlockCache.Capacity < minStorageSize {
		add(invalid("storage.block-cache.capacity", "%s is less than %s", c.Storage.BlockCache.Capacity, ByteSize(minStorageSize)))
	}
	if d := c.Storage.WALMinSyncInterval; d < 0 || time.Duration(d) > maxWALMinSyncInterval {
		add(invalid("storage.wal-min-sync-interval", "%s is out of range 0..%s", d, Duration(maxWALMinSyncInterval)))
	}
	if c.Storage.GCLifeTime <= 0 {
		add(invalid("storage.gc-life-time", "%s: must be positive", c.Storage.GCLifeTime))
	}
	if wb := c.RocksDB.DefaultCF.WriteBufferSize; wb < minStorageSize || wb > maxMemTableSize {
		add(invalid("rocksdb.defaultcf.write-buffer-size", "%s is out of range %s..%s", wb, ByteSize(minStorageSize), ByteSize(maxMemTableSize)))
	}
	if n := c.RocksDB.DefaultCF.MaxWriteBufferNumber; n < 2 || n > maxWriteBufferNumber {
		add(invalid("rocksdb.defaultcf.max-write-buffer-number", "%d is out of range 2..%d", n, maxWriteBufferNumber))
	}
	if c.Txn.LockWaitTimeout < 1 || c.Txn.LockWaitTimeout > maxLockWaitTimeout {
		add(invalid("txn.lock-wait-timeout", "%d is out of range 1..%d (seconds)", c.Txn.LockWaitTimeout, maxLockWaitTimeout))
	}
	if c.Txn.DefaultMode != TxnPessimistic && c.Txn.DefaultMode != TxnOptimistic {
		add(invalid("txn.default-mode", "unknown mode %q (want %q or %q)", c.Txn.DefaultMode, TxnPessimistic, TxnOptimistic))
	}
	if (c.Security.SSLCert == "") != (c.Security.SSLKey == "") {
		if c.Security.SSLCert == "" {
			add(invalid("security.ssl-key", "set without security.ssl-cert (give both or neither)"))
		} else {
			add(invalid("security.ssl-cert", "set without security.ssl-key (give both or neither)"))
		}
	}
	if c.Security.RequireSecureTransport && c.Security.SSLCert == "" && !c.Security.AutoTLS {
		add(invalid("security.require-secure-transport", "needs TLS: set security.ssl-cert and ssl-key, or auto-tls = true"))
	}
	return errors.Join(errs...)
}

// ParseLogLevel parses a log.level value: debug, info, warn (or warning)
// or error, in any case.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown level %q (want debug, info, warn or error)", s)
}

// SlogLevel is Level as a slog.Level; info if Level is invalid (Validate
// reports that).
func (l Log) SlogLevel() slog.Level {
	lv, err := ParseLogLevel(l.Level)
	if err != nil {
		return slog.LevelInfo
	}
	return lv
}

// LockWait is LockWaitTimeout as a time.Duration.
func (t Txn) LockWait() time.Duration {
	return time.Duration(t.LockWaitTimeout) * time.Second
}

// Pessimistic reports whether transactions are pessimistic by default.
func (t Txn) Pessimistic() bool { return t.DefaultMode == TxnPessimistic }

// DefBatchPolicy is [tikv-client] batch-policy's default.
const DefBatchPolicy = "standard"

// checkBatchPolicy says whether client-go knows policy: one of its
// presets, or "custom" and a JSON object of its options. client-go itself
// falls back to "standard" on anything else, with one log line.
func checkBatchPolicy(policy string) error {
	switch policy {
	case "basic", "standard", "positive":
		return nil
	}
	opts, ok := strings.CutPrefix(policy, "custom")
	if !ok {
		return errors.New(`not "basic", "standard", "positive" or "custom {...}"`)
	}
	var v map[string]float64
	if err := json.Unmarshal([]byte(strings.TrimSpace(opts)), &v); err != nil {
		return fmt.Errorf("custom options: %v", err)
	}
	for k := range v {
		switch k {
		case "v", "t", "n", "w", "p", "q":
		default:
			return fmt.Errorf("custom option %q is not one of v, t, n, w, p, q", k)
		}
	}
	return nil
}

// DefWALMinSyncInterval is storage.wal-min-sync-interval's default: on
// the 2-CPU machine of docs/perf-write.md a WAL sync took ~0.3 ms, and at
// 64 connections commits reached it 1.3 to a sync; waiting a quarter of a
// millisecond between syncs while commits queue let more share each
// (oltp_write_only 1.4-1.8x the QPS at 16 and 64 threads, one thread
// level; docs/perf-write.md, "Gathering commits between WAL syncs").
const DefWALMinSyncInterval = 250 * time.Microsecond

// maxWALMinSyncInterval bounds storage.wal-min-sync-interval: every
// synced commit may wait that long.
const maxWALMinSyncInterval = 10 * time.Millisecond
