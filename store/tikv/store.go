// Package tikv is kv.Storage over the real tikv/client-go: Basalt's SQL
// layer on a cluster of TiKV-protocol storage nodes (Basalt's own `basalt
// store`, or TiKV), or on client-go's in-process mock cluster in tests.
//
// client-go does the distributed work: the region cache, batched RPCs,
// two-phase commit (async commit and 1PC where enabled), pessimistic
// locks, lock resolution, and timestamps from PD. A transaction reads its
// snapshot through client-go and buffers its writes in Basalt's own
// kv.MemBuffer (savepoints, the union iterators the SQL layer already
// uses); the writes move into client-go's transaction only at commit.
package tikv

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/pingcap/log"
	tikvconfig "github.com/tikv/client-go/v2/config"
	tikvkv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/oracle"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv/transaction"
	"github.com/tikv/client-go/v2/util"
	pd "github.com/tikv/pd/client"
	"github.com/tikv/pd/client/opt"
	"github.com/tikv/pd/client/pkg/caller"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Storage is kv.Storage over a client-go KVStore.
type Storage struct {
	store  *tikv.KVStore
	close  func() error
	closed atomic.Bool
	open   openTxns // for MinStartTS
	// reads carries get.go's and scan.go's direct reads to the stores
	// (readconn.go); nil on client-go's mock cluster and with batching
	// off, where they go through client-go's RPC client.
	reads *readClient
	// vars are client-go's variables every snapshot and transaction
	// gets: the backoff weight (SetBackoffWeight).
	vars atomic.Pointer[tikvkv.Variables]
	// pd is the PD client the oracle's timestamps come from (nil on the
	// mock cluster): SetTSOBatchWait tunes it.
	pd pd.Client
}

// SetTSOBatchWait sets TiDB's tidb_tso_client_batch_max_wait_time: how
// long pd/client's TSO dispatcher may wait, after the first timestamp
// request of a batch, for more to send in the same RPC (it stops waiting
// once the batch reaches the size it has been seeing). 0, the default,
// sends what has queued at once. pd/client takes 0 to 10 ms.
func (s *Storage) SetTSOBatchWait(d time.Duration) error {
	if s.pd == nil {
		return nil
	}
	return s.pd.UpdateOption(opt.MaxTSOBatchWaitInterval, d)
}

// SetBackoffWeight sets TiDB's tidb_backoff_weight for the snapshots and
// transactions begun after it: client-go's backoff budgets are multiplied
// by it (a read retries a region no store serves for 20 s of sleeps times
// the weight, a prewrite for 40 s times it). 0 or less means client-go's
// default, 2.
func (s *Storage) SetBackoffWeight(w int) {
	if w <= 0 {
		w = tikvkv.DefBackOffWeight
	}
	v := tikvkv.NewVariables(&notKilled)
	v.BackOffWeight = w
	s.vars.Store(v)
}

// notKilled is the kill flag of the variables: statements are cancelled
// by their context.
var notKilled uint32

// variables is what SetBackoffWeight set, client-go's default until then.
func (s *Storage) variables() *tikvkv.Variables {
	if v := s.vars.Load(); v != nil {
		return v
	}
	return tikvkv.DefaultVars
}

// Open connects to the cluster whose PD members are at pdAddrs
// (host:port), as TiDB's --path does.
//
// It builds the store as txnkv.NewClient does, with one difference: the
// oracle's PD client is boundedTSO, so that a commit does not wait for
// timestamps longer than tsoWait.
func Open(pdAddrs []string) (*Storage, error) {
	pdClient, err := newPDClient(pdAddrs)
	if err != nil {
		return nil, fmt.Errorf("connect to PD at %v: %w", pdAddrs, err)
	}
	codecCli := tikv.NewCodecPDClient(tikv.ModeTxn, boundedTSO{util.NewInterceptedPDClient(pdClient)})
	cfg := tikvconfig.GetGlobalConfig()
	tlsConfig, err := cfg.Security.ToTLSConfig()
	if err != nil {
		pdClient.Close()
		return nil, err
	}
	spkv, err := tikv.NewEtcdSafePointKV(pdAddrs, tlsConfig)
	if err != nil {
		pdClient.Close()
		return nil, fmt.Errorf("connect to PD's etcd at %v: %w", pdAddrs, err)
	}
	rpcClient := tikv.NewRPCClient(tikv.WithSecurity(cfg.Security), tikv.WithCodec(codecCli.GetCodec()))
	uuid := fmt.Sprintf("tikv-%v", codecCli.GetClusterID(context.TODO()))
	store, err := tikv.NewKVStore(uuid, codecCli, spkv, rpcClient)
	if err != nil {
		rpcClient.Close()
		spkv.Close()
		pdClient.Close()
		return nil, fmt.Errorf("connect to the cluster at %v: %w", pdAddrs, err)
	}
	if cfg.TxnLocalLatches.Enabled {
		store.EnableTxnLocalLatches(cfg.TxnLocalLatches.Capacity)
	}
	s := &Storage{store: store, close: store.Close, pd: pdClient}
	if cfg.TiKVClient.MaxBatchSize > 0 {
		// As client-go's: with batching off ([tikv-client]
		// max-batch-size = 0) every request is a unary call.
		s.reads = newReadClient()
		s.close = func() error {
			s.reads.close()
			return store.Close()
		}
	}
	return s, nil
}

// newPDClient is client-go's tikv.NewPDClient with fixed flow-control
// windows, client-go's own for its stores' connections
// ([tikv-client] grpc-initial-window-size and
// grpc-initial-conn-window-size). With gRPC-Go's default, dynamic,
// windows the client pings PD to size them after the first frame that
// follows each ping's ack: on the TSO stream, where each transaction's
// start and commit timestamps are one small response each, a PING and its
// ack for most responses (docs/cluster-bench/README.md).
func newPDClient(pdAddrs []string) (pd.Client, error) {
	cfg := tikvconfig.GetGlobalConfig()
	return pd.NewClient(caller.Component("client-go"), pdAddrs,
		pd.SecurityOption{CAPath: cfg.Security.ClusterSSLCA, CertPath: cfg.Security.ClusterSSLCert, KeyPath: cfg.Security.ClusterSSLKey},
		opt.WithGRPCDialOptions(
			grpc.WithKeepaliveParams(keepalive.ClientParameters{
				Time:    time.Duration(cfg.TiKVClient.GrpcKeepAliveTime) * time.Second,
				Timeout: cfg.TiKVClient.GetGrpcKeepAliveTimeout(),
			}),
			grpc.WithInitialWindowSize(cfg.TiKVClient.GrpcInitialWindowSize),
			grpc.WithInitialConnWindowSize(cfg.TiKVClient.GrpcInitialConnWindowSize),
		),
		opt.WithCustomTimeoutOption(time.Duration(cfg.PDClient.PDServerTimeout)*time.Second),
		opt.WithForwardingOption(cfg.EnableForwarding),
	)
}

// OpenMock returns a storage on client-go's in-process mock cluster (one
// store, one region; mocktikv), for tests of the SQL layer on client-go.
func OpenMock() (*Storage, error) { return OpenMockWrapped(nil) }

// OpenMockWrapped is OpenMock with client-go's client of the mock cluster
// passed through wrap, if not nil: a benchmark can see the requests the
// SQL layer sends and tell the mock's own work from the SQL node's.
func OpenMockWrapped(wrap func(tikv.Client) tikv.Client) (*Storage, error) {
	return OpenMockCluster(wrap, nil)
}

// OpenMockCluster is OpenMockWrapped that also sets *cluster, if cluster
// is not nil, to the mock cluster, for a test to split its region.
func OpenMockCluster(wrap func(tikv.Client) tikv.Client, cluster **testutils.MockCluster) (*Storage, error) {
	mock, mc, pdClient, err := testutils.NewMockTiKV("", nil)
	if err != nil {
		return nil, err
	}
	var client tikv.Client = mock
	if wrap != nil {
		client = wrap(client)
	}
	testutils.BootstrapWithSingleStore(mc)
	if cluster != nil {
		*cluster = mc
	}
	store, err := tikv.NewTestTiKVStore(client, pdClient, nil, nil, 0)
	if err != nil {
		return nil, err
	}
	return &Storage{store: store, close: store.Close}, nil
}

// Begin starts a transaction at a fresh timestamp from PD, or at
// opts.StartTS.
func (s *Storage) Begin(opts kv.TxnOptions) (kv.Txn, error) {
	if s.closed.Load() {
		return nil, kv.ErrStoreClosed
	}
	startTS := opts.StartTS
	if startTS == 0 {
		ts, err := s.timestamp()
		if err != nil {
			return nil, err
		}
		startTS = ts
	}
	kt, err := s.store.Begin(tikv.WithStartTS(startTS))
	if err != nil {
		return nil, mapErr(err)
	}
	kt.SetVars(s.variables())
	kt.SetPessimistic(opts.Mode == kv.Pessimistic)
	kt.SetEnableAsyncCommit(opts.Commit.AsyncCommit)
	kt.SetEnable1PC(opts.Commit.OnePC)
	kt.SetCausalConsistency(opts.Commit.CausalConsistency)
	t := newTxn(s, kt, opts.Mode)
	if opts.Mode == kv.Optimistic && opts.LockWait != 0 {
		// client-go's own answer to a lock met at prewrite is to back off
		// and resolve it for up to 80 s, whatever the session's
		// innodb_lock_wait_timeout: the prewrite gives the lock back
		// instead, and Commit waits for it (waitForLock).
		kt.SetPrewriteEncounterLockPolicy(transaction.NoResolvePolicy)
		t.commitWait = opts.LockWait
	}
	return t, nil
}

// Snapshot reads the data committed at or before ts.
func (s *Storage) Snapshot(ts uint64) kv.Snapshot {
	snap := s.store.GetSnapshot(ts)
	snap.SetVars(s.variables())
	return &snapshot{snap: snap, ts: ts, store: s}
}

// LatestSnapshot reads the newest committed version of a key, with no
// timestamp from PD: client-go reads at math.MaxUint64, as TiDB's
// autocommit point get does. For one key that is as good as a read at a
// fresh timestamp: it sees every commit acknowledged before it began. A
// lock of a transaction that has not committed is passed over (TiKV and
// client-go's mock skip the lock of a primary key outright; on a
// secondary, or on Basalt's storage node, client-go resolves it, learns
// that its transaction has not committed, and reads past it); a lock
// whose transaction committed is resolved and the commit read. The
// store's max_ts is not raised by it (TiKV and storenode ignore
// math.MaxUint64). Reads of several keys must not use it: the newest
// versions of two keys need not be a snapshot.
func (s *Storage) LatestSnapshot() kv.Snapshot {
	return (*latestSnapshot)(s)
}

// CurrentTS is a fresh timestamp from PD (see timestamp).
func (s *Storage) CurrentTS() (uint64, error) {
	return s.timestamp()
}

// timestamp is a fresh timestamp from PD, retried with client-go's
// backoff, as Begin's (and TiDB's CurrentVersion) are, but for at most
// tsoWait of wall time: while PD changes leader the request fails with
// the broken TSO stream's error and is retried; while PD is down it is
// ErrPDTimeout once tsoWait has passed.
func (s *Storage) timestamp() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), tsoWait)
	defer cancel()
	bo := tikv.NewBackofferWithVars(ctx, transaction.TsoMaxBackoff, nil)
	ts, err := s.store.GetTimestampWithRetry(bo, oracle.GlobalTxnScope)
	if err != nil && ctx.Err() != nil {
		return 0, errTSOWait
	}
	return ts, mapErr(err)
}

// Close closes the client.
func (s *Storage) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.close()
}

// DeleteRange implements kv.RangeDeleter: every version of every key in
// [start, end) goes at once, region by region (TiKV's DeleteRange), for
// the data of dropped tables and indexes that nothing reads any more.
func (s *Storage) DeleteRange(ctx context.Context, start, end []byte) error {
	_, err := s.store.DeleteRange(ctx, start, end, deleteRangeConcurrency)
	return mapErr(err)
}

// deleteRangeConcurrency is how many regions a DeleteRange works on at once.
const deleteRangeConcurrency = 4

// SetLogLevel sets the level of client-go's own log (pingcap/log, on
// stderr), which reports every lock it resolves and every region it
// reloads at info: "debug", "info", "warn" or "error".
func SetLogLevel(level string) error {
	var l zapcore.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("log level %q: %w", level, err)
	}
	log.SetLevel(l)
	return nil
}

// ClientConfig is what Basalt sets of client-go's configuration (TiDB's
// [tikv-client] section).
type ClientConfig struct {
	GrpcConnectionCount     uint
	MaxBatchSize            uint
	MaxBatchWaitTime        time.Duration
	BatchWaitSize           uint
	BatchPolicy             string
	RegionCacheTTL          time.Duration
	CommitTimeout           time.Duration
	AsyncCommitKeysLimit    uint
	AsyncCommitKeySizeLimit uint64
}

// Configure sets client-go's process-wide configuration; it applies to
// the storages opened after it.
func Configure(c ClientConfig) {
	tikvconfig.UpdateGlobal(func(g *tikvconfig.Config) {
		t := &g.TiKVClient
		t.GrpcConnectionCount = c.GrpcConnectionCount
		t.MaxBatchSize = c.MaxBatchSize
		t.MaxBatchWaitTime = c.MaxBatchWaitTime
		t.BatchWaitSize = c.BatchWaitSize
		t.BatchPolicy = c.BatchPolicy
		t.CommitTimeout = c.CommitTimeout.String()
		t.AsyncCommit.KeysLimit = c.AsyncCommitKeysLimit
		t.AsyncCommit.TotalKeySizeLimit = c.AsyncCommitKeySizeLimit
		t.RegionCacheTTL = uint(c.RegionCacheTTL / time.Second)
	})
	tikv.SetRegionCacheTTLSec(int64(c.RegionCacheTTL / time.Second))
}

// StreamReads is how many reads the stores answered on the storage's own
// read streams (readconn.go), for tests.
func (s *Storage) StreamReads() int64 {
	if s.reads == nil {
		return 0
	}
	return s.reads.calls.Load()
}
