package pebble

import (
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure Open. The zero value of each field means its default.
type Options struct {
	// BlockCacheSize is the block cache in bytes (default 256 MiB). It
	// bounds the memtables too: Pebble reserves each memtable's arena in
	// the cache, so that data blocks get what the memtables leave. With
	// cgo (the default build) the cache and the memtables are allocated
	// outside the Go heap, and so outside Go's soft memory limit.
	BlockCacheSize int64
	// MemTableSize is the memtable size in bytes (default 64 MiB): Pebble
	// starts with a 256 KiB memtable and doubles each next one up to it.
	MemTableSize uint64
	// MemTableStopWritesThreshold stops writes while this many memtables
	// (the mutable one and those waiting for their flush) hold
	// MemTableStopWritesThreshold x MemTableSize bytes (default 2, the
	// least Pebble takes). TiKV's rocksdb.defaultcf.max-write-buffer-number.
	// Pebble also keeps one flushed memtable's arena for the next.
	MemTableStopWritesThreshold int
	// Logger receives Pebble's messages, each prefixed "pebble: " (and
	// errors "pebble: error: "); default: discard.
	Logger *log.Logger
	// MaxCompactions bounds the compactions Pebble runs at once (default
	// Pebble's: 1, rising to 2 under compaction debt). A storage node sets
	// it from TiKV's rocksdb.max-background-jobs.
	MaxCompactions int
	// FS is the filesystem that holds the database's files (default
	// vfs.Default, the operating system's). Tests pass one that injects
	// disk faults (github.com/cockroachdb/pebble/v2/vfs/errorfs).
	FS vfs.FS
	// LegacyComparer creates a new database with Pebble's default
	// comparer, as Basalt did before Comparer: binaries of then can open
	// it, and its point reads get no help from bloom filters. Tests use
	// it for databases of the old format. An existing database always
	// opens with the comparer it was created with.
	LegacyComparer bool
	// WALMinSyncInterval is the least time between two syncs of the WAL
	// while at least walGatherAt synced writes are in flight and fewer
	// than walGroupEnough arrived since the sync before (default 0: a
	// sync starts as soon as the one before it returns). A synced write
	// that comes sooner waits out the rest of it, and the writes that
	// arrive meanwhile share its sync (Pebble's WALMinSyncInterval). With
	// fewer in flight there is nobody to gather, and a lone writer, one
	// connection committing in a loop, would only wait: it is not
	// delayed. With walGroupEnough arriving per sync, the next sync is
	// shared widely without waiting, and waiting would only add latency.
	WALMinSyncInterval time.Duration
}

// walGatherAt is how many synced writes must be in flight when a WAL
// sync ends for the next to wait out Options.WALMinSyncInterval: the
// ones just synced, not yet returned, and one more that came meanwhile.
const walGatherAt = 3

// walGroupEnough is how many synced writes arriving between the ends of
// two WAL syncs make the next sync start without waiting out
// Options.WALMinSyncInterval.
const walGroupEnough = 8

func (o *Options) withDefaults() Options {
	r := *o
	if r.BlockCacheSize == 0 {
		r.BlockCacheSize = 256 << 20
	}
	if r.MemTableSize == 0 {
		r.MemTableSize = 64 << 20
	}
	if r.MemTableStopWritesThreshold == 0 {
		r.MemTableStopWritesThreshold = 2
	}
	if r.Logger == nil {
		r.Logger = log.New(discard{}, "", 0)
	}
	if r.FS == nil {
		r.FS = vfs.Default
	}
	return r
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// mallocArenas is how many malloc arenas a process that opens an Engine
// keeps, unless MALLOC_ARENA_MAX says otherwise. With cgo, Pebble's block
// cache and memtables are C allocations (calloc), and glibc gives each
// thread that finds the arenas busy one of its own, up to 8 per CPU: a
// block freed in one arena serves no allocation in another, and none is
// returned to the system. Under sysbench the block cache's 70-96 MiB of
// blocks kept about 210 MiB resident across 9 arenas. The cache
// allocates only on a miss, so two arenas meet no contention worth the
// memory.
const mallocArenas = 2

var limitArenasOnce sync.Once

// Open opens the database in dir, creating it if dir does not exist. A
// database that exists must open as it is, or not at all: Open refuses one
// whose files are missing or corrupt, turning a panic inside Pebble (which
// some corruptions provoke) into an error.
//
// A new database gets Comparer, and prefix bloom filters; one that exists
// opens with the comparer it was created with (Pebble refuses any other),
// which its newest OPTIONS file names: one created before Comparer keeps
// Pebble's default comparer, whole-key filters and no prefix seeks.
func Open(dir string, opts Options) (e *Engine, err error) {
	o := opts.withDefaults()
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, fmt.Errorf("database is corrupt: %v", r)
		}
	}()
	limitArenasOnce.Do(func() {
		if os.Getenv("MALLOC_ARENA_MAX") == "" {
			limitMallocArenas(mallocArenas)
		}
	})
	cache := pebble.NewCache(o.BlockCacheSize)
	defer cache.Unref()
	po := &pebble.Options{
		Cache:        cache,
		MemTableSize: o.MemTableSize,
		// Pebble refuses fewer than 2.
		MemTableStopWritesThreshold: max(o.MemTableStopWritesThreshold, 2),
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      logger{o.Logger},
		FS:                          o.FS,
	}
	syncing, arrived := new(atomic.Int64), new(atomic.Int64)
	if d := o.WALMinSyncInterval; d > 0 {
		// Pebble calls this at the end of each sync of the WAL.
		var seen atomic.Int64 // arrived at the end of the sync before
		po.WALMinSyncInterval = func() time.Duration {
			n := arrived.Load()
			group := n - seen.Swap(n)
			if syncing.Load() < walGatherAt || group >= walGroupEnough {
				return 0
			}
			return d
		}
	}
	if n := o.MaxCompactions; n > 0 {
		po.CompactionConcurrencyRange = func() (int, int) { return 1, n }
	}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		// 16 KiB data blocks under a one-level index: a point read then
		// loads two blocks from the cache instead of three, which measured
		// about 20% faster at the median on a 1M-key store.
		po.Levels[i].BlockSize = 16 << 10
		po.Levels[i].IndexBlockSize = 256 << 10
		// Pebble's fastest compression, MinLZ (Snappy on arm64, where
		// MinLZ has no assembly), not its default Snappy: every byte
		// loaded is compressed by the flush and again by each compaction,
		// and Snappy was 15% of the CPU of a bulk INSERT load
		// (BenchmarkBulkInsert); CockroachDB's "fastest" setting.
		po.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.FastestCompression }
	}
	po.Comparer = Comparer
	if o.LegacyComparer {
		po.Comparer = pebble.DefaultComparer
	}
	if _, err := o.FS.Stat(dir); err == nil {
		// Pebble would create its lock file before noticing missing files,
		// so look for them first.
		if names, _ := o.FS.List(dir); !hasManifest(names) {
			return nil, fmt.Errorf("database files are missing from %s", dir)
		}
		po.ErrorIfNotExists = true
		if po.Comparer, err = comparerOf(dir, o.FS); err != nil {
			return nil, err
		}
	}
	var db *pebble.DB
	if po.Comparer == nil {
		// No OPTIONS file says: Pebble compares each one with the
		// manifest's comparer, and refuses the wrong one.
		po.Comparer = pebble.DefaultComparer
		if db, err = pebble.Open(dir, po); err != nil && strings.Contains(err.Error(), "comparer name") {
			po.Comparer = Comparer
			db, err = pebble.Open(dir, po)
		}
	} else {
		db, err = pebble.Open(dir, po)
	}
	if err != nil {
		return nil, err
	}
	wo := po.Clone()
	wo.EnsureDefaults()
	return &Engine{db: db, dir: dir, fs: o.FS, opts: wo, prefixSeeks: po.Comparer == Comparer, syncing: syncing, arrived: arrived}, nil
}

// comparerOf returns the comparer of the database in dir, as its newest
// OPTIONS file names it: Comparer, or Pebble's default for a database
// created before Comparer existed; nil if there is no OPTIONS file (Pebble
// writes one on every open, so only a crash during the first open leaves
// none). Pebble checks the name again against the manifest's on open.
func comparerOf(dir string, fs vfs.FS) (*pebble.Comparer, error) {
	desc, err := pebble.Peek(dir, fs)
	if err != nil {
		return nil, err
	}
	if desc.OptionsFilename == "" {
		return nil, nil
	}
	f, err := fs.Open(desc.OptionsFilename)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(string(data)) {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "comparer=")
		if !ok {
			continue
		}
		switch name {
		case Comparer.Name:
			return Comparer, nil
		case pebble.DefaultComparer.Name:
			return pebble.DefaultComparer, nil
		}
		return nil, fmt.Errorf("%s: unknown comparer %q", desc.OptionsFilename, name)
	}
	return nil, fmt.Errorf("%s names no comparer", desc.OptionsFilename)
}

func hasManifest(names []string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") {
			return true
		}
	}
	return false
}

// logger passes Pebble's messages to a log.Logger. Pebble calls Fatalf
// when it cannot go on (a failed commit, for one); that panics, in the
// goroutine that called Pebble.
type logger struct{ l *log.Logger }

func (p logger) Infof(format string, args ...any) { p.l.Printf("pebble: "+format, args...) }
func (p logger) Errorf(format string, args ...any) {
	p.l.Printf("pebble: error: "+format, args...)
}
func (p logger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: fatal: "+format, args...))
}
