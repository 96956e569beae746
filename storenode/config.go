package storenode

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/basalt-db/basalt/config"
)

// Config is a storage node's configuration with TiKV's names: the flags
// (--pd, --addr, --advertise-addr, --status-addr, --data-dir, --config)
// and the TOML file's sections and keys.
type Config struct {
	PD       PDConfig       `toml:"pd"`
	Server   ServerConfig   `toml:"server"`
	Storage  StorageConfig  `toml:"storage"`
	Raft     RaftConfig     `toml:"raftstore"`
	ReadPool ReadPoolConfig `toml:"readpool"`
	RocksDB  RocksDBConfig  `toml:"rocksdb"`
	Txn      PessimisticTxn `toml:"pessimistic-txn"`
	Copr     CoprConfig     `toml:"coprocessor"`
	GC       GCConfig       `toml:"gc"`
	Log      LogConfig      `toml:"log"`
}

// PDConfig is [pd].
type PDConfig struct {
	// Endpoints are PD's client URLs (--pd, comma-separated there).
	Endpoints []string `toml:"endpoints"`
}

// ServerConfig is [server].
type ServerConfig struct {
	Addr          string `toml:"addr"`           // --addr, default 127.0.0.1:20160
	AdvertiseAddr string `toml:"advertise-addr"` // --advertise-addr, default Addr
	StatusAddr    string `toml:"status-addr"`    // --status-addr, default 127.0.0.1:20180
	// GRPCConcurrency bounds the goroutines serving gRPC streams' requests
	// concurrently (TiKV's gRPC threads); GRPCRaftConnNum is the number of
	// connections to each peer store for Raft messages.
	GRPCConcurrency int `toml:"grpc-concurrency"`
	GRPCRaftConnNum int `toml:"grpc-raft-conn-num"`
}

// StorageConfig is [storage].
type StorageConfig struct {
	DataDir string `toml:"data-dir"` // --data-dir
	// SchedulerWorkerPoolSize bounds how many transaction commands
	// (prewrite, commit, pessimistic lock, rollback, resolve lock, check
	// txn status, ...) decide their writes at once, as TiKV's scheduler
	// workers do: a command takes a worker once it holds its keys'
	// latches, and gives it back when it hands its write to raft, not
	// when the write applies; commands beyond it queue. Waiting for
	// latches, for another transaction's lock or for replication holds
	// no worker, so a few workers keep many commits in flight.
	SchedulerWorkerPoolSize int        `toml:"scheduler-worker-pool-size"`
	BlockCache              BlockCache `toml:"block-cache"`
}

// BlockCache is [storage.block-cache].
type BlockCache struct {
	Capacity ByteSize `toml:"capacity"`
}

// RaftConfig is [raftstore].
type RaftConfig struct {
	// SyncLog fsyncs the Raft log before a write is acknowledged.
	SyncLog        bool     `toml:"sync-log"`
	StorePoolSize  int      `toml:"store-pool-size"`
	ApplyPoolSize  int      `toml:"apply-pool-size"`
	BaseTick       Duration `toml:"raft-base-tick-interval"`
	HeartbeatTicks int      `toml:"raft-heartbeat-ticks"`
	ElectionTicks  int      `toml:"raft-election-timeout-ticks"`
	// RaftLogGCCountLimit: a peer's log is compacted once it holds more
	// applied entries than this (TiKV's raft-log-gc-count-limit).
	RaftLogGCCountLimit uint64 `toml:"raft-log-gc-count-limit"`
	// RaftLogGCSizeLimit: a leader's log is compacted once its applied
	// entries hold this many bytes, though a slow follower needs them
	// (TiKV's raft-log-gc-size-limit). The entries live in memory, so the
	// default is far below TiKV's (3/4 of region-split-size, on disk).
	RaftLogGCSizeLimit ByteSize `toml:"raft-log-gc-size-limit"`
	// How often each region's size is checked for a split, and how often
	// regions and the store report to PD.
	SplitCheckInterval       Duration `toml:"split-region-check-tick-interval"`
	PDHeartbeatInterval      Duration `toml:"pd-heartbeat-tick-interval"`
	PDStoreHeartbeatInterval Duration `toml:"pd-store-heartbeat-tick-interval"`
	// MaxLeaderLease: how long a leader serves reads after a quorum last
	// answered it without asking again; zero (the default) means the
	// longest the election timeout allows, 90% of (election ticks - 2)
	// ticks, which is also the most it may be.
	MaxLeaderLease Duration `toml:"raft-store-max-leader-lease"`
	// A peer that has not heard from a leader for
	// AbnormalLeaderMissingDuration asks PD, every
	// PeerStaleStateCheckInterval, whether its region still has it.
	PeerStaleStateCheckInterval   Duration `toml:"peer-stale-state-check-interval"`
	AbnormalLeaderMissingDuration Duration `toml:"abnormal-leader-missing-duration"`
}

// ReadPoolConfig is [readpool]; only [readpool.unified] is read.
type ReadPoolConfig struct {
	Unified struct {
		// MaxThreadCount bounds how many reads (get, batch get, scan,
		// scan lock) run at once on the store, as TiKV's unified read
		// pool does; reads beyond it queue until one ends or their
		// request's deadline passes. A read takes its place once it may
		// read: after the region's read index and any commit in flight
		// on its keys.
		MaxThreadCount int `toml:"max-thread-count"`
	} `toml:"unified"`
}

// RocksDBConfig is [rocksdb]: Basalt's engine is Pebble, and these are the
// keys of TiKV's that map onto it.
type RocksDBConfig struct {
	MaxBackgroundJobs int `toml:"max-background-jobs"`
	DefaultCF         struct {
		BlockCacheSize ByteSize `toml:"block-cache-size"`
	} `toml:"defaultcf"`
}

// PessimisticTxn is [pessimistic-txn].
type PessimisticTxn struct {
	// Pipelined answers a pessimistic lock request as soon as raft has
	// accepted the write of its locks on the leader, before it is
	// replicated and applied (TiKV's pipelined pessimistic lock); later
	// commands on those keys still wait for it to apply. Should the
	// write be lost (the leader loses its leadership first), the
	// transaction's prewrite finds its lock missing and fails. Off, the
	// answer waits for the write to apply.
	Pipelined bool `toml:"pipelined"`
	// InMemory keeps a region leader's pessimistic locks in memory
	// instead of proposing them through Raft (TiKV's in-memory
	// pessimistic locks; see storenode/raftstore/memlocks.go): a lock
	// costs no replication, and is lost if the leader is; the
	// transaction's prewrite then fails.
	InMemory bool `toml:"in-memory"`
	// WaitForLockTimeout bounds a lock request's wait for another
	// transaction's lock (see Service.WaitForLockTimeout).
	WaitForLockTimeout Duration `toml:"wait-for-lock-timeout"`
}

// CoprConfig is [coprocessor]: when regions split.
type CoprConfig struct {
	RegionSplitSize ByteSize `toml:"region-split-size"`
	RegionMaxSize   ByteSize `toml:"region-max-size"`
	RegionSplitKeys uint64   `toml:"region-split-keys"`
	RegionMaxKeys   uint64   `toml:"region-max-keys"`
}

// GCConfig is [gc].
type GCConfig struct {
	// PollSafePointInterval is how often the store asks PD for the GC
	// safe point, and collects the regions it leads once it moved (TiKV
	// polls every 10 s, a constant there; Basalt's tests shorten it).
	PollSafePointInterval Duration `toml:"poll-safe-point-interval"`
}

// LogConfig is [log].
type LogConfig struct {
	Level string `toml:"level"`
	File  struct {
		Filename string `toml:"filename"`
	} `toml:"file"`
}

// DefaultConfig is TiKV's defaults, except the Raft tick: TiKV ticks every
// second; Basalt every 100 ms, so that a lost leader is replaced in about
// a second (TiKV's election takes ~10 s by default).
func DefaultConfig() Config {
	var c Config
	c.PD.Endpoints = []string{"127.0.0.1:2379"}
	c.Server.Addr = "127.0.0.1:20160"
	c.Server.StatusAddr = "127.0.0.1:20180"
	c.Server.GRPCConcurrency = 5
	c.Server.GRPCRaftConnNum = 1
	c.Storage.DataDir = "./"
	c.Storage.SchedulerWorkerPoolSize = 4
	c.Raft.SyncLog = true
	c.Raft.StorePoolSize = 2
	c.Raft.ApplyPoolSize = 2
	c.Raft.BaseTick = Duration{100 * time.Millisecond}
	c.Raft.HeartbeatTicks = 2
	c.Raft.ElectionTicks = 10
	c.Raft.PeerStaleStateCheckInterval = Duration{5 * time.Minute}
	c.Raft.AbnormalLeaderMissingDuration = Duration{10 * time.Minute}
	c.Raft.RaftLogGCCountLimit = 10000
	c.Raft.RaftLogGCSizeLimit = 1 << 20
	c.Raft.SplitCheckInterval = Duration{10 * time.Second}
	c.Raft.PDHeartbeatInterval = Duration{10 * time.Second}
	c.Raft.PDStoreHeartbeatInterval = Duration{10 * time.Second}
	c.ReadPool.Unified.MaxThreadCount = 4
	c.RocksDB.MaxBackgroundJobs = 2
	c.Txn.Pipelined = true
	c.Txn.InMemory = true
	c.Txn.WaitForLockTimeout = Duration{time.Second}
	c.Copr.RegionSplitSize = 96 << 20
	c.GC.PollSafePointInterval = Duration{10 * time.Second}
	c.Copr.RegionMaxSize = 144 << 20
	c.Copr.RegionSplitKeys = 960000
	c.Copr.RegionMaxKeys = 1440000
	c.Log.Level = "info"
	return c
}

// LoadConfig decodes the TOML file at path over cfg, then validates the
// result: the file, over what cfg held, must make a valid configuration.
// Keys it does not know are returned as warnings, as TiKV logs them (an
// unknown table once, not each of its keys); a value of the wrong type or
// out of range is an error naming its key.
func LoadConfig(path string, cfg *Config) (warnings []string, err error) {
	md, err := toml.DecodeFile(path, cfg)
	if err != nil {
		return nil, config.DecodeError(path, err)
	}
	unknown := map[string]bool{}
	for _, k := range md.Undecoded() { // a table before its keys
		if len(k) > 1 && unknown[k[:len(k)-1].String()] {
			unknown[k.String()] = true // its table is named already
			continue
		}
		unknown[k.String()] = true
		warnings = append(warnings, fmt.Sprintf("config file %s: unknown key %s, ignored", path, k))
	}
	if err := cfg.Validate(); err != nil {
		return warnings, fmt.Errorf("%s: %w", path, err)
	}
	return warnings, nil
}

// Validate checks every value, as TiKV does at start; the error lists
// each invalid one, a line each, led by its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	atLeast1 := func(key string, v int) {
		if v < 1 {
			bad(key, "%d: must be at least 1", v)
		}
	}
	positive := func(key string, d Duration) {
		if d.Duration <= 0 {
			bad(key, "%s: must be positive", d)
		}
	}

	if len(c.PD.Endpoints) == 0 {
		bad("pd.endpoints", "must list at least one PD endpoint")
	}
	for _, e := range c.PD.Endpoints {
		if err := checkAddr(strings.TrimSuffix(schemeless(e), "/")); err != nil {
			bad("pd.endpoints", "%q: %v", e, err)
		}
	}

	if err := checkAddr(c.Server.Addr); err != nil {
		bad("server.addr", "%q: %v", c.Server.Addr, err)
	}
	if a := c.Server.AdvertiseAddr; a != "" {
		if err := checkAddr(a); err != nil {
			bad("server.advertise-addr", "%q: %v", a, err)
		}
	}
	if a := c.AdvertiseAddr(); unspecified(a) {
		// Other stores and SQL nodes dial it: 0.0.0.0 reaches no one.
		bad("server.advertise-addr", "%q cannot be dialled by other nodes; set the address they should use", a)
	}
	if c.Server.StatusAddr != "" {
		if err := checkAddr(c.Server.StatusAddr); err != nil {
			bad("server.status-addr", "%q: %v", c.Server.StatusAddr, err)
		} else if c.Server.StatusAddr == c.Server.Addr {
			bad("server.status-addr", "%q is also server.addr", c.Server.StatusAddr)
		}
	}
	atLeast1("server.grpc-concurrency", c.Server.GRPCConcurrency)
	atLeast1("server.grpc-raft-conn-num", c.Server.GRPCRaftConnNum)

	if c.Storage.DataDir == "" {
		bad("storage.data-dir", "must not be empty")
	}
	atLeast1("storage.scheduler-worker-pool-size", c.Storage.SchedulerWorkerPoolSize)

	atLeast1("raftstore.store-pool-size", c.Raft.StorePoolSize)
	atLeast1("raftstore.apply-pool-size", c.Raft.ApplyPoolSize)
	positive("raftstore.raft-base-tick-interval", c.Raft.BaseTick)
	atLeast1("raftstore.raft-heartbeat-ticks", c.Raft.HeartbeatTicks)
	if c.Raft.ElectionTicks <= c.Raft.HeartbeatTicks {
		bad("raftstore.raft-election-timeout-ticks", "%d: must be greater than raftstore.raft-heartbeat-ticks (%d)",
			c.Raft.ElectionTicks, c.Raft.HeartbeatTicks)
	}
	if c.Raft.RaftLogGCCountLimit < 1 {
		bad("raftstore.raft-log-gc-count-limit", "0: must be at least 1")
	}
	if c.Raft.RaftLogGCSizeLimit < 1 {
		bad("raftstore.raft-log-gc-size-limit", "0: must be at least 1 byte")
	}
	positive("raftstore.split-region-check-tick-interval", c.Raft.SplitCheckInterval)
	positive("raftstore.peer-stale-state-check-interval", c.Raft.PeerStaleStateCheckInterval)
	positive("raftstore.abnormal-leader-missing-duration", c.Raft.AbnormalLeaderMissingDuration)
	if limit := c.Raft.BaseTick.Duration * time.Duration(c.Raft.ElectionTicks-2) * 9 / 10; c.Raft.MaxLeaderLease.Duration < 0 ||
		c.Raft.MaxLeaderLease.Duration > limit {
		bad("raftstore.raft-store-max-leader-lease", "%v: must be between 0 and %v (90%% of the election timeout less two ticks)",
			c.Raft.MaxLeaderLease.Duration, limit)
	}
	positive("raftstore.pd-heartbeat-tick-interval", c.Raft.PDHeartbeatInterval)
	positive("raftstore.pd-store-heartbeat-tick-interval", c.Raft.PDStoreHeartbeatInterval)

	atLeast1("readpool.unified.max-thread-count", c.ReadPool.Unified.MaxThreadCount)
	atLeast1("rocksdb.max-background-jobs", c.RocksDB.MaxBackgroundJobs)

	if c.Txn.WaitForLockTimeout.Duration < 0 {
		bad("pessimistic-txn.wait-for-lock-timeout", "%s: must not be negative", c.Txn.WaitForLockTimeout)
	}

	positive("gc.poll-safe-point-interval", c.GC.PollSafePointInterval)
	switch {
	case c.Copr.RegionSplitSize == 0:
		bad("coprocessor.region-split-size", "must be positive")
	case c.Copr.RegionSplitSize > c.Copr.RegionMaxSize:
		bad("coprocessor.region-split-size", "%s: must not exceed coprocessor.region-max-size (%s)",
			c.Copr.RegionSplitSize, c.Copr.RegionMaxSize)
	}
	if c.Copr.RegionSplitKeys > c.Copr.RegionMaxKeys {
		bad("coprocessor.region-split-keys", "%d: must not exceed coprocessor.region-max-keys (%d)",
			c.Copr.RegionSplitKeys, c.Copr.RegionMaxKeys)
	}

	if _, ok := logLevels[strings.ToLower(c.Log.Level)]; !ok {
		bad("log.level", "%q is not one of trace, debug, info, warn, warning, error, critical, fatal", c.Log.Level)
	}
	return errors.Join(errs...)
}

// checkAddr checks a host:port address, as TiKV's check_addr: a host
// and a port from 1 to 65535.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	if host == "" {
		return errors.New("no host")
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

// unspecified reports whether addr's host is 0.0.0.0 or ::.
func unspecified(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsUnspecified()
}

// schemeless is a PD endpoint without its "http://" or "https://".
func schemeless(endpoint string) string {
	if _, rest, ok := strings.Cut(endpoint, "://"); ok {
		return rest
	}
	return endpoint
}

// AdvertiseAddr is the address other nodes dial to reach this store:
// server.advertise-addr, or server.addr if that is empty.
func (c *Config) AdvertiseAddr() string {
	if c.Server.AdvertiseAddr != "" {
		return c.Server.AdvertiseAddr
	}
	return c.Server.Addr
}

// PDURLs are the PD endpoints as URLs: each given without a scheme (TiKV
// takes both "127.0.0.1:2379" and "http://127.0.0.1:2379") gets "http://".
func (c *Config) PDURLs() []string {
	urls := make([]string, len(c.PD.Endpoints))
	for i, e := range c.PD.Endpoints {
		if !strings.Contains(e, "://") {
			e = "http://" + e
		}
		urls[i] = e
	}
	return urls
}

// logLevels are TiKV's log levels, as slog's.
var logLevels = map[string]slog.Level{
	"trace": slog.LevelDebug, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "warning": slog.LevelWarn,
	"error": slog.LevelError, "critical": slog.LevelError, "fatal": slog.LevelError,
}

// SlogLevel is Level as a slog.Level (trace as debug, critical and fatal
// as error); info if Level is invalid (Validate reports that).
func (l LogConfig) SlogLevel() slog.Level {
	if lv, ok := logLevels[strings.ToLower(l.Level)]; ok {
		return lv
	}
	return slog.LevelInfo
}

// Duration is a time.Duration written as text in Go's notation ("100ms",
// "10s", "1m"). A bare number is refused: its unit would be a guess.
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: want a number and a unit, such as \"100ms\" or \"10s\"", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as time.Duration's String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ByteSize is a size in bytes, written as TiKV writes sizes: a string of a
// number and a unit ("96MB", "96MiB", "512KB", "1GB", "1024"), or an
// integer of bytes. The units are powers of 1024 with or without the "i"
// (TiKV's MB is a MiB); see config.ParseByteSize, which parses them.
type ByteSize uint64

// UnmarshalText implements encoding.TextUnmarshaler for the string form.
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := config.ParseByteSize(string(bytes.TrimSpace(text)))
	if err != nil {
		return err
	}
	*b = ByteSize(v)
	return nil
}

// UnmarshalTOML implements toml.Unmarshaler: an integer is bytes, a string
// is read by UnmarshalText; anything else is refused.
func (b *ByteSize) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return fmt.Errorf("invalid size %d: negative", v)
		}
		*b = ByteSize(v)
		return nil
	case string:
		return b.UnmarshalText([]byte(v))
	}
	return fmt.Errorf("invalid size %v: want a string such as \"96MiB\" or an integer of bytes", v)
}

// String writes the size in the largest binary unit that divides it
// ("96MiB", "1000B"), which UnmarshalText reads back.
func (b ByteSize) String() string { return config.ByteSize(b).String() }

// MarshalText writes the size as String does.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }
