// Package local is Basalt's embedded store: the Percolator MVCC of
// store/mvcc over one Pebble database (store/pebble) in a data directory,
// with a local timestamp oracle. All keys live in one place, so every
// commit is one-phase: a transaction's writes are checked and applied in
// one atomic, synced Pebble batch, and concurrent commits share WAL syncs
// (group commit). So it turns on what store/mvcc keeps as options for such
// a store: reads that skip the lock column family, and the latest-version
// cache. Its only locks are pessimistic ones, which die with their
// process, so the lock column family lives in memory (locks.go).
//
// Data directory layout:
//
//	BASALT     marker: names the directory as Basalt's, with its format version
//	LOCK       held (flock) by the process that has the directory open
//	tso        the timestamp oracle's high-water mark
//	kv/        the Pebble database
package local

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/basalt-db/basalt/store/pebble"
	"github.com/basalt-db/basalt/tso"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure Open. The zero value of each field means its default.
type Options struct {
	// NoSync turns off syncing the WAL on commit, like TiKV's
	// sync-log=false: commits are faster, and the last ones acknowledged
	// before a crash (of the process, the kernel or the power) may be lost;
	// what survives is still a consistent prefix of the commits.
	NoSync bool
	// BlockCacheSize is Pebble's block cache in bytes, memtables included
	// (default 256 MiB; see store/pebble's Options).
	BlockCacheSize int64
	// MemTableSize is Pebble's memtable size in bytes (default 64 MiB).
	MemTableSize uint64
	// MemTableStopWritesThreshold is how many full memtables stop writes
	// until a flush (default 2).
	MemTableStopWritesThreshold int
	// WALMinSyncInterval is the least time between two syncs of the WAL
	// (default 0, none): synced commits that come sooner share the next
	// sync (store/pebble's Options).
	WALMinSyncInterval time.Duration
	// FS is the filesystem that holds the database directory kv/ (default:
	// the operating system's); tests inject disk faults through it. The
	// marker, LOCK and tso files are always on the operating system's.
	FS vfs.FS
	// LatestCacheSize bounds the memory that keeps the newest version of
	// the keys of hot ranges (default 64 MiB; negative: no such cache).
	// See store/mvcc/latest.go.
	LatestCacheSize int64
	// GCLifeTime is how long old versions are kept (default 10 minutes).
	GCLifeTime time.Duration
	// GCInterval is how often GC runs (default 10 minutes).
	GCInterval time.Duration
	// CommitLockWait bounds how long a commit waits for another
	// transaction's lock on one of its keys (default 50 s).
	CommitLockWait time.Duration
	// Logger receives Pebble's and the store's messages (default: discard).
	Logger *log.Logger
}

func (o *Options) withDefaults() Options {
	r := *o
	if r.LatestCacheSize == 0 {
		r.LatestCacheSize = 64 << 20
	}
	if r.GCLifeTime == 0 {
		r.GCLifeTime = 10 * time.Minute
	}
	if r.GCInterval == 0 {
		r.GCInterval = 10 * time.Minute
	}
	if r.CommitLockWait == 0 {
		r.CommitLockWait = 50 * time.Second
	}
	if r.Logger == nil {
		r.Logger = log.New(discard{}, "", 0)
	}
	return r
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Store is the embedded kv.Storage.
type Store struct {
	dir    string
	opts   Options
	lock   *os.File
	db     *pebble.Engine
	eng    *engine
	mvcc   *mvcc.Store
	oracle *oracle

	open   openTxns // open transactions, for the GC safe point
	closed atomic.Bool
	stopGC chan struct{}
	gcDone chan struct{}
	// staleMu orders the registration of a transaction with a start ts of
	// its own (shared) against a GC pass's recording of its safe point
	// (exclusive): see safePoint.
	staleMu sync.RWMutex
	// lastSafePoint is the safe point of the latest GC pass.
	lastSafePoint atomic.Uint64

	// reclaim compacts the ranges DeleteRange deleted (mvcc.Reclaimer).
	reclaim *mvcc.Reclaimer
}

var _ kv.Storage = (*Store)(nil)

const (
	markerFile = "BASALT"
	lockFile   = "LOCK"
	kvDir      = "kv"
	// markerText is the marker's whole content; a different one is a
	// directory this version cannot read.
	markerText = "Basalt data directory, format 1\n"
)

// Open opens (creating it if needed) the data directory dir. It refuses,
// touching nothing, a directory that holds files but is not Basalt's, one
// that another process has open, and one whose database is corrupt.
func Open(dir string, opts Options) (s *Store, err error) {
	o := opts.withDefaults()
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	if err := checkMarker(dir); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	if _, err := os.Stat(filepath.Join(dir, oracleFile)); err == nil {
		// Timestamps were issued here, so a database was created here.
		if _, err := os.Stat(filepath.Join(dir, kvDir)); err != nil {
			return nil, fmt.Errorf("data directory %s: its database directory %s is missing", dir, kvDir)
		}
	}
	// The oracle file is read before Pebble opens (and may write), so that a
	// corrupt one refuses the directory untouched.
	orc, err := openOracle(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	db, err := pebble.Open(filepath.Join(dir, kvDir), pebble.Options{
		BlockCacheSize: o.BlockCacheSize,
		MemTableSize:   o.MemTableSize,
		Logger:         o.Logger,
		FS:             o.FS,

		MemTableStopWritesThreshold: o.MemTableStopWritesThreshold,
		WALMinSyncInterval:          o.WALMinSyncInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("data directory %s: cannot open its database: %w", dir, err)
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	// SSTs an import left unfinished by a crash (import.go).
	if err := db.FS().RemoveAll(db.FS().PathJoin(db.Dir(), importDir)); err != nil {
		return nil, err
	}
	eng := &engine{db: db, locks: newLockTable()}
	// Locks live in memory now; data directories of older versions may
	// still hold some on disk, each of a transaction of a process that is
	// gone (the embedded store commits in one phase, so the only locks it
	// writes are pessimistic ones, which die with their transaction).
	if err := db.ClearCF(mvcc.CFLock, true); err != nil {
		return nil, err
	}
	// Every record in the database was written at a timestamp the oracle
	// issued before this one, and every later write goes through ms.
	floor, err := orc.next()
	if err != nil {
		return nil, err
	}
	ms, err := mvcc.NewStore(eng, mvcc.RealClock{}, mvcc.Options{
		Sync:             !o.NoSync,
		OnePhaseOnly:     true,
		LatestCacheSize:  o.LatestCacheSize,
		WriteFilterFloor: floor,
	})
	if err != nil {
		return nil, err
	}
	s = &Store{
		dir: dir, opts: o, lock: lock, db: db, eng: eng, oracle: orc,
		mvcc:   ms,
		stopGC: make(chan struct{}),
		gcDone: make(chan struct{}),
	}
	go s.gcLoop()
	s.reclaim = mvcc.StartReclaimer(func(err error) { s.opts.Logger.Printf("compacting a deleted range: %v", err) })
	return s, nil
}

// prepareDir creates dir if needed and, if it is new or empty, writes the
// marker. A non-empty directory without the marker is left alone.
func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("data directory %s: %w", dir, err)
		}
	case err != nil:
		return fmt.Errorf("data directory %s: %w", dir, err)
	case len(entries) > 0:
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, markerFile), []byte(markerText), 0o644); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	return syncDir(dir)
}

func checkMarker(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, markerFile))
	if os.IsNotExist(err) {
		return fmt.Errorf("data directory %s is not a Basalt data directory (it has files but no %s marker); refusing to use it", dir, markerFile)
	}
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	if string(b) != markerText {
		return fmt.Errorf("data directory %s: unknown format %q in its %s marker", dir, strings.TrimSpace(string(b)), markerFile)
	}
	return nil
}

// lockDir takes an exclusive flock on dir/LOCK, or fails naming the
// directory if another process (or another Open in this one) holds it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another Basalt process", dir)
		}
		return nil, fmt.Errorf("data directory %s: locking: %w", dir, err)
	}
	return f, nil
}

// Begin implements kv.Storage. It takes no lock that all transactions
// share: the transaction registers in a shard of the open set (openTxns)
// with its hold, then, if it has no start ts of its own, takes one from
// the oracle, in that order (see openTxns for why the order matters).
func (s *Store) Begin(opts kv.TxnOptions) (kv.Txn, error) {
	if s.closed.Load() {
		return nil, kv.ErrStoreClosed
	}
	t := newTxn(s, opts.StartTS, opts.Mode)
	t.commitWait = opts.LockWait
	if ts := opts.StartTS; ts != 0 {
		t.hold = ts - 1
		s.staleMu.RLock()
		s.open.add(t)
		s.staleMu.RUnlock()
		return t, nil
	}
	t.hold = s.oracle.lastIssued()
	s.open.add(t)
	if beginStep != nil {
		beginStep()
	}
	ts, err := s.oracle.next()
	if err != nil {
		s.open.remove(t)
		return nil, err
	}
	t.startTS, t.snap.ts = ts, ts
	return t, nil
}

// beginStep, if set (by tests), runs between Begin's registration and its
// call to the oracle: it widens the window between them.
var beginStep func()

// finish forgets an ended transaction.
func (s *Store) finish(t *txn) { s.open.remove(t) }

// Snapshot implements kv.Storage.
func (s *Store) Snapshot(ts uint64) kv.Snapshot {
	return &snapshot{s: s, ts: ts}
}

// CurrentTS implements kv.Storage.
func (s *Store) CurrentTS() (uint64, error) {
	return s.oracle.next()
}

// Close implements kv.Storage: it stops GC and closes the database.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return kv.ErrStoreClosed
	}
	close(s.stopGC)
	<-s.gcDone
	s.reclaim.Stop()
	s.oracle.close()
	err := s.db.Close()
	return errors.Join(err, s.lock.Close())
}

// DeleteRange implements kv.RangeDeleter. The range's space comes back
// in the background: it is compacted (flush the memtable, then a manual
// compaction of the range to the last level) by mvcc.Reclaimer.
func (s *Store) DeleteRange(_ context.Context, start, end []byte) error {
	if err := s.mvcc.DeleteRange(start, end); err != nil {
		return err
	}
	start, end = append([]byte(nil), start...), append([]byte(nil), end...)
	s.reclaim.Queue(func(ctx context.Context) error { return s.mvcc.CompactRange(ctx, start, end) })
	return nil
}

// Metrics returns Pebble's metrics, for the status port and benchmarks.
func (s *Store) Metrics() *pebble.Metrics { return s.db.Metrics() }

// LatestCacheStats describes the latest-version cache (zero when it is
// off).
func (s *Store) LatestCacheStats() mvcc.LatestCacheStats {
	st, _ := s.mvcc.LatestCacheStats()
	return st
}

// GCSafePoint returns the timestamp below which GC may remove versions
// now: GCLifeTime ago, and below every open transaction's start.
func (s *Store) GCSafePoint() (uint64, error) { return s.safePoint(false) }

// safePoint is GCSafePoint: GCLifeTime before the oracle's now, and at
// or below every open transaction's hold (openTxns). With record it
// becomes the last GC safe point, under staleMu held exclusively, which a
// transaction with a start ts of its own registers under: one begun below
// it after that is refused by a caller of LastGCSafePoint, and one begun
// before holds it back. (One that takes its start ts from the oracle gets
// one above now.)
func (s *Store) safePoint(record bool) (uint64, error) {
	now, err := s.oracle.next()
	if err != nil {
		return 0, err
	}
	sp := tso.ComposeTS(tso.PhysicalMs(now)-s.opts.GCLifeTime.Milliseconds(), 0)
	if record {
		s.staleMu.Lock()
		defer s.staleMu.Unlock()
	}
	sp = s.open.minHold(sp)
	if record && sp > s.lastSafePoint.Load() {
		s.lastSafePoint.Store(sp)
	}
	return sp, nil
}

// RunGC runs one GC pass at the current safe point.
func (s *Store) RunGC() (mvcc.GCStats, error) {
	sp, err := s.safePoint(true)
	if err != nil {
		return mvcc.GCStats{}, err
	}
	return s.mvcc.GC(sp)
}

// LastGCSafePoint is the safe point of the latest GC pass: versions below
// it may be gone, and a read there (tidb_snapshot) is refused.
func (s *Store) LastGCSafePoint() uint64 { return s.lastSafePoint.Load() }

func (s *Store) gcLoop() {
	defer close(s.gcDone)
	t := time.NewTicker(s.opts.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopGC:
			return
		case <-t.C:
			st, err := s.RunGC()
			if err != nil {
				s.opts.Logger.Printf("gc: %v", err)
				continue
			}
			s.opts.Logger.Printf("gc: examined %d keys, removed %d versions", st.Keys, st.DeletedWrites)
		}
	}
}

// lockTTL is the TTL written into pessimistic locks. Nobody in this process
// expires them (their owners are alive until they finish, and locks left by
// a crash are cleared at open); it matters only to tools that read them.
const lockTTL = 20000
