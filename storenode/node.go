package storenode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/basalt-db/basalt/grpccodec"
	storepebble "github.com/basalt-db/basalt/store/pebble"
	"github.com/basalt-db/basalt/storenode/raftstore"
	"github.com/cockroachdb/pebble/v2"
	"github.com/pingcap/kvproto/pkg/deadlock"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/raft_serverpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
)

// StoreVersion is the version the store registers with PD: that of the
// TiKV release whose API it serves. PD and tools compare it as semver.
const StoreVersion = "8.5.0"

// The gRPC server's flow-control windows: a stream's, TiKV's default
// (server.grpc-stream-initial-window-size), and a connection's, room for
// eight such streams.
const (
	grpcStreamWindow = 2 << 20
	grpcConnWindow   = 8 * grpcStreamWindow
)

// Node is a running storage node.
type Node struct {
	cfg     Config
	log     *slog.Logger
	eng     *storepebble.Engine
	pd      *pdClient
	rs      *raftstore.Store
	storeID uint64
	drop    raftDrop // the test's fault switch (fault.go)
	grpc    *grpc.Server
	status  *http.Server
	started time.Time
	gc      gcState

	stopOnce sync.Once
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	done     chan struct{}
	err      error
}

// Start opens the data directory, joins the cluster through PD (registering
// the store, bootstrapping the cluster's first region if it is new), and
// starts serving on cfg.Server.Addr (gRPC) and cfg.Server.StatusAddr
// (HTTP: /metrics, /status).
func Start(cfg Config, log *slog.Logger) (_ *Node, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{cfg: cfg, log: log, cancel: cancel, done: make(chan struct{}), started: time.Now()}
	defer func() {
		if err != nil {
			n.closeAll()
		}
	}()
	dir := filepath.Join(cfg.Storage.DataDir, "db")
	if err := os.MkdirAll(cfg.Storage.DataDir, 0o755); err != nil {
		return nil, err
	}
	cache := int64(cfg.Storage.BlockCache.Capacity)
	if cache == 0 {
		cache = int64(cfg.RocksDB.DefaultCF.BlockCacheSize)
	}
	// rocksdb.max-background-jobs covers RocksDB's flushes and compactions;
	// Pebble flushes on a goroutine of its own, so all go to compactions.
	if n.eng, err = storepebble.Open(dir, storepebble.Options{BlockCacheSize: cache,
		MaxCompactions: cfg.RocksDB.MaxBackgroundJobs}); err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	n.pd = newPDClient(cfg.PDURLs())
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if err := n.pd.connect(sctx); err != nil {
		return nil, err
	}
	if n.storeID, err = n.loadIdent(sctx); err != nil {
		return nil, err
	}
	n.rs, err = raftstore.NewStore(raftstore.Config{StoreID: n.storeID, Engine: n.eng, SyncLog: cfg.Raft.SyncLog,
		Tick: cfg.Raft.BaseTick.Duration, HeartbeatTicks: cfg.Raft.HeartbeatTicks, ElectionTicks: cfg.Raft.ElectionTicks,
		LogGCCountLimit: cfg.Raft.RaftLogGCCountLimit, LogGCSizeLimit: uint64(cfg.Raft.RaftLogGCSizeLimit), StorePoolSize: cfg.Raft.StorePoolSize,
		ApplyPoolSize: cfg.Raft.ApplyPoolSize, MaxLeaderLease: cfg.Raft.MaxLeaderLease.Duration,
		RaftConnNum: cfg.Server.GRPCRaftConnNum, InMemoryLocks: cfg.Txn.InMemory, Resolve: n.resolve, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := n.bootstrap(sctx); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return nil, err
	}
	svc := NewService(n.storeID, regionsOf{n})
	svc.Configure(cfg)
	svc.ClusterID = n.pd.ClusterID()
	svc.TSO = n.pd.tso // a new leader syncs max_ts before async commit or 1PC
	n.grpc = grpc.NewServer(append(serverOptions(cfg), grpc.UnaryInterceptor(svc.CheckCluster))...)
	tikvpb.RegisterTikvServer(n.grpc, &tikvServer{Service: svc, rs: n.rs, drop: &n.drop})
	graph := newWaitGraph(waitGraphTTL(svc.lockWait(0)))
	deadlock.RegisterDeadlockServer(n.grpc, &deadlockService{graph: graph, owner: n.ownsDetector})
	detector := newDetectorClient(n, n.rs.Waits())
	n.rs.Waits().SetDetector(detector)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(n.grpc, hs)
	n.rs.Start()
	go func() { _ = n.grpc.Serve(lis) }()
	if err := n.startStatus(svc); err != nil {
		return nil, err
	}
	store := &metapb.Store{Id: n.storeID, Address: cfg.AdvertiseAddr(), PeerAddress: cfg.AdvertiseAddr(),
		StatusAddress: cfg.Server.StatusAddr, Version: StoreVersion, StartTimestamp: n.started.Unix(),
		DeployPath: cfg.Storage.DataDir, State: metapb.StoreState_Up, NodeState: metapb.NodeState_Serving}
	if err := n.pd.putStore(sctx, store); err != nil {
		return nil, fmt.Errorf("registering store %d with PD: %w", n.storeID, err)
	}
	n.wg.Add(6)
	go n.gcLoop(ctx)
	go detector.run(ctx, graph)
	go n.storeHeartbeats(ctx)
	go n.regionHeartbeats(ctx)
	go n.splitChecks(ctx)
	go n.staleChecks(ctx)
	log.Info("store started", "store", n.storeID, "addr", cfg.AdvertiseAddr(), "cluster", n.pd.ClusterID(),
		"regions", len(n.rs.Peers()))
	return n, nil
}

// loadIdent returns the store's ID, asking PD for one on first start.
func (n *Node) loadIdent(ctx context.Context) (uint64, error) {
	db := n.eng.DB()
	var ident raft_serverpb.StoreIdent
	v, closer, err := db.Get([]byte("mident"))
	switch {
	case err == nil:
		err = ident.Unmarshal(v)
		closer.Close()
		if err != nil {
			return 0, fmt.Errorf("bad store identity: %w", err)
		}
		if ident.ClusterId != n.pd.ClusterID() {
			return 0, fmt.Errorf("this data directory belongs to cluster %d, not %d", ident.ClusterId, n.pd.ClusterID())
		}
		return ident.StoreId, nil
	case !errors.Is(err, pebble.ErrNotFound):
		return 0, err
	}
	id, err := n.pd.allocID(ctx)
	if err != nil {
		return 0, err
	}
	ident = raft_serverpb.StoreIdent{ClusterId: n.pd.ClusterID(), StoreId: id}
	b, _ := ident.Marshal()
	if err := db.Set([]byte("mident"), b, pebble.Sync); err != nil {
		return 0, err
	}
	n.log.Info("new store", "store", id, "cluster", ident.ClusterId)
	return id, nil
}

// bootstrap creates the cluster's first region when the cluster is new:
// the region is written here first, marked as prepared, then offered to
// PD, as TiKV does, so that a crash in between leaves the region to offer
// again. If another store bootstrapped first, whether this store learns
// it at once or after a restart, the region written here is dropped.
func (n *Node) bootstrap(ctx context.Context) error {
	prepared, isPrepared, err := n.rs.PreparedBootstrap()
	if err != nil {
		return err
	}
	done, err := n.pd.isBootstrapped(ctx)
	if err != nil {
		return err
	}
	if done {
		if !isPrepared {
			return nil
		}
		return n.settleBootstrap(ctx, prepared)
	}
	var region *metapb.Region
	switch ps := n.rs.Peers(); {
	case isPrepared && n.rs.Peer(prepared) != nil:
		region = n.rs.Peer(prepared).Meta() // an earlier attempt's
	case len(ps) == 1 && !isPrepared:
		region = ps[0].Meta() // an earlier attempt's, by a version that kept no mark
	case len(ps) > 0:
		return fmt.Errorf("the store holds %d regions, but the cluster is not bootstrapped", len(ps))
	default:
		regionID, err := n.pd.allocID(ctx)
		if err != nil {
			return err
		}
		peerID, err := n.pd.allocID(ctx)
		if err != nil {
			return err
		}
		region = &metapb.Region{Id: regionID, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
			Peers: []*metapb.Peer{{Id: peerID, StoreId: n.storeID}}}
		if err := n.rs.Bootstrap(region); err != nil {
			return err
		}
	}
	store := &metapb.Store{Id: n.storeID, Address: n.cfg.AdvertiseAddr(), Version: StoreVersion}
	err = n.pd.bootstrap(ctx, store, region)
	var pe errPD
	if errors.As(err, &pe) && pe.e.Type.String() == "ALREADY_BOOTSTRAPPED" {
		return n.settleBootstrap(ctx, region.Id)
	}
	if err != nil {
		return err
	}
	n.log.Info("bootstrapped the cluster", "region", region.Id)
	return n.rs.ClearPrepareBootstrap()
}

// settleBootstrap decides the fate of a region this store wrote for
// bootstrapping, once the cluster is bootstrapped: PD knows it (this
// store's offer was taken, and it stopped before it learned so), or it is
// dropped.
func (n *Node) settleBootstrap(ctx context.Context, regionID uint64) error {
	r, err := n.pd.getRegionByID(ctx, regionID)
	if err != nil {
		return err
	}
	if r == nil {
		n.log.Info("another store bootstrapped the cluster", "dropped_region", regionID)
		return n.rs.DropBootstrap(regionID)
	}
	return n.rs.ClearPrepareBootstrap()
}

// resolve is the raftstore's address book: PD's.
func (n *Node) resolve(ctx context.Context, storeID uint64) (string, error) {
	st, err := n.pd.getStore(ctx, storeID)
	if err != nil {
		return "", err
	}
	if st.GetState() == metapb.StoreState_Tombstone {
		return "", fmt.Errorf("store %d is a tombstone", storeID)
	}
	if st.PeerAddress != "" {
		return st.PeerAddress, nil
	}
	return st.Address, nil
}

func (n *Node) startStatus(svc *Service) error {
	if n.cfg.Server.StatusAddr == "" {
		return nil
	}
	lis, err := net.Listen("tcp", n.cfg.Server.StatusAddr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(metricsGatherer(svc), promhttp.HandlerOpts{}))
	// Go's profiles, where TiKV serves its own (/debug/pprof/profile).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		leaders := 0
		ps := n.rs.Peers()
		for _, p := range ps {
			if p.IsLeader() {
				leaders++
			}
		}
		lockDeletes, lockDeletesSkipped := n.rs.LockDeletes()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"store_id": n.storeID, "version": StoreVersion,
			"address": n.cfg.AdvertiseAddr(), "start_timestamp": n.started.Unix(),
			"region_count": len(ps), "leader_count": leaders,
			// What the store's leaders proposed, its raft log syncs, the
			// pessimistic lock writes kept in memory and their flushes
			// through raft, since it started; the bytes of the locks in
			// memory now.
			"raft_proposals": n.rs.LogStats().Proposals, "raft_log_syncs": n.rs.LogStats().Syncs,
			"in_memory_lock_writes": n.rs.MemLockStats().Writes, "in_memory_lock_flushes": n.rs.MemLockStats().Flushes,
			"in_memory_lock_bytes": n.rs.MemLockStats().Bytes,
			// Pessimistic lock requests handed to another goroutine to be
			// answered once proposed (those not kept in memory).
			"pessimistic_lock_handoffs": svc.lockHandoffs.Load(),
			// The lock column family's deletes applied into Pebble, and
			// those skipped as it held no lock.
			"lock_cf_deletes": lockDeletes, "lock_cf_deletes_skipped": lockDeletesSkipped})
	})
	mux.HandleFunc("/debug/gc", n.serveGC)
	n.registerFaults(mux)
	n.status = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = n.status.Serve(lis) }()
	return nil
}

// StoreID is the store's ID in the cluster.
func (n *Node) StoreID() uint64 { return n.storeID }

// Stop shuts the node down gracefully: it transfers the leaders it holds
// to other stores, stops serving, flushes and closes.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		n.transferLeadersAway(ctx)
		n.closeAll()
		close(n.done)
	})
	return nil
}

// transferLeadersAway hands each region this store leads to another
// voter, and waits (within ctx) until it leads none that has one. Meanwhile
// the store refuses leadership (raftstore's RefuseLeadership), so that
// stores stopping together do not hand regions back and forth; it asks
// each region's other voters in turn, a second each (one may be down or
// stopping too); and it gives up once its count of leaders has not fallen
// for transferStall, which is what happens when every store stops at once.
func (n *Node) transferLeadersAway(ctx context.Context) {
	n.rs.RefuseLeadership()
	best, since := -1, time.Now()
	for round := 0; ; round++ {
		pending := 0
		for _, p := range n.rs.Peers() {
			if !p.IsLeader() {
				continue
			}
			var voters []*metapb.Peer
			for _, pr := range p.Meta().Peers {
				if pr.StoreId != n.storeID && pr.Role != metapb.PeerRole_Learner {
					voters = append(voters, pr)
				}
			}
			if len(voters) > 0 {
				p.TransferLeader(voters[round/transferRoundsPerVoter%len(voters)])
				pending++
			}
		}
		if pending == 0 {
			return
		}
		if best < 0 || pending < best {
			best, since = pending, time.Now()
		} else if time.Since(since) > transferStall {
			n.log.Warn("stopping with leaders not transferred: no other store took them", "regions", pending)
			return
		}
		select {
		case <-ctx.Done():
			n.log.Warn("stopping with leaders not transferred", "regions", pending)
			return
		case <-time.After(transferRound):
		}
	}
}

// A stopping store asks for its leaders' transfer every transferRound, to
// the same voter for transferRoundsPerVoter rounds, and stops asking after
// transferStall without one more region handed over.
const (
	transferRound          = 200 * time.Millisecond
	transferRoundsPerVoter = 5
	transferStall          = 3 * time.Second
)

func (n *Node) closeAll() {
	n.cancel()
	if n.status != nil {
		_ = n.status.Close()
	}
	if n.grpc != nil {
		stopped := make(chan struct{})
		go func() { n.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(3 * time.Second):
			n.grpc.Stop()
		}
	}
	n.wg.Wait()
	if n.rs != nil {
		n.rs.Stop()
	}
	if n.eng != nil {
		_ = n.eng.DB().Flush()
		_ = n.eng.Close()
	}
	if n.pd != nil {
		n.pd.close()
	}
}

// Done is closed when the node has stopped.
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is why the node stopped on its own, once Done is closed; nil after
// Stop.
func (n *Node) Err() error { return n.err }

// diskStats returns the capacity and free space of the data directory's
// file system.
func diskStats(dir string) (capacity, available uint64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize)
}

// serverOptions are the gRPC server's options but its interceptor.
func serverOptions(cfg Config) []grpc.ServerOption {
	return []grpc.ServerOption{
		// server.grpc-concurrency: the goroutines that serve streams' frames.
		grpc.NumStreamWorkers(uint32(cfg.Server.GRPCConcurrency)),
		grpc.MaxRecvMsgSize(1 << 30), grpc.MaxSendMsgSize(1 << 30),
		// kvproto's messages marshalled straight into gRPC's buffers (codec.go).
		grpc.ForceServerCodecV2(grpccodec.NewGogo()),
		// Fixed flow-control windows, as TiKV's (grpc-stream-initial-window-size
		// 2 MB). Without them gRPC-Go sizes the windows itself and, to do so,
		// pings the client after the first frame that follows each ping's
		// ack: on a BatchCommands stream of small requests that is a ping
		// and its ack for almost every batch, a read and a write more on each
		// side (docs/cluster-bench/README.md). client-go fixes its own windows.
		grpc.InitialWindowSize(grpcStreamWindow), grpc.InitialConnWindowSize(grpcConnWindow),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 10 * time.Second, Timeout: 3 * time.Second}),
	}
}
