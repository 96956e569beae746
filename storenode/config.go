package storenode

import (
	"time"
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
	DataDir                 string     `toml:"data-dir"` // --data-dir
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
	// How often each region's size is checked for a split, and how often
	// regions and the store report to PD.
	SplitCheckInterval       Duration `toml:"split-region-check-tick-interval"`
	PDHeartbeatInterval      Duration `toml:"pd-heartbeat-tick-interval"`
	PDStoreHeartbeatInterval Duration `toml:"pd-store-heartbeat-tick-interval"`
}

// ReadPoolConfig is [readpool]; only [readpool.unified] is read.
type ReadPoolConfig struct {
	Unified struct {
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
	Pipelined          bool     `toml:"pipelined"`
	WaitForLockTimeout Duration `toml:"wait-for-lock-timeout"`
}

// CoprConfig is [coprocessor]: when regions split.
type CoprConfig struct {
	RegionSplitSize ByteSize `toml:"region-split-size"`
	RegionMaxSize   ByteSize `toml:"region-max-size"`
	RegionSplitKeys uint64   `toml:"region-split-keys"`
	RegionMaxKeys   uint64   `toml:"region-max-keys"`
}

// LogConfig is [log].
type LogConfig struct {
	Level string `toml:"level"`
	File  struct {
		Filename string `toml:"filename"`
	} `toml:"file"`
}

// Duration is a time.Duration written as text ("100ms", "10s").
type Duration struct{ time.Duration }

// ByteSize is a size written as TiKV writes them ("96MB", "512KiB", 1024).
type ByteSize uint64

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
	c.Raft.RaftLogGCCountLimit = 10000
	c.Raft.SplitCheckInterval = Duration{10 * time.Second}
	c.Raft.PDHeartbeatInterval = Duration{10 * time.Second}
	c.Raft.PDStoreHeartbeatInterval = Duration{10 * time.Second}
	c.ReadPool.Unified.MaxThreadCount = 4
	c.RocksDB.MaxBackgroundJobs = 2
	c.Txn.Pipelined = true
	c.Txn.WaitForLockTimeout = Duration{time.Second}
	c.Copr.RegionSplitSize = 96 << 20
	c.Copr.RegionMaxSize = 144 << 20
	c.Copr.RegionSplitKeys = 960000
	c.Copr.RegionMaxKeys = 1440000
	c.Log.Level = "info"
	return c
}
