package pd

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pingcap/kvproto/pkg/meta_storagepb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Server is one PD member: an etcd member, the pdpb service on its gRPC
// server, and, while this member leads, the timestamp oracle and the
// cluster's directory.
type Server struct {
	cfg    Config
	log    *slog.Logger
	etcd   *embed.Etcd
	client *clientv3.Client // to this member's etcd
	// clusterID is the cluster's, memberID this etcd member's.
	clusterID uint64
	memberID  uint64
	member    *pdpb.Member // this member, as GetMembers shows it
	rootPath  string       // /pd/{clusterID}

	leader leadership    // leader.go
	tso    *oracle       // tso.go; serves while this member leads
	ids    *idAlloc      // id.go
	cl     *cluster      // cluster.go
	gcMu   sync.Mutex    // serializes safe point updates (gc.go)
	conf   runtimeConfig // [schedule] and [replication] now (runtime_config.go)
	// hbStreams are the region heartbeat streams by store, on which
	// admin operators are pushed (admin.go).
	hbStreams heartbeatStreams
	// collector reports the directory's metrics, if registered.
	collector prometheus.Collector

	// ready is set once NewServer has set up everything above: etcd
	// serves PD's gRPC and HTTP handlers before then.
	ready atomic.Bool

	// grpcServers are the gRPC servers etcd registered PD's services on
	// (one per client listener); Close stops them, which ends every
	// stream a client holds open (grpc.go's Tso reads on its handler's
	// goroutine, so only the stream's end returns it).
	grpcMu      sync.Mutex
	grpcServers []*grpc.Server

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed sync.Once
}

// keyClusterID holds the cluster ID, shared by every member.
const keyClusterID = "/pd/cluster_id"

// maxMsgSize bounds pdpb and etcd messages: well above gRPC's 4 MiB.
const maxMsgSize = 64 << 20

// NewServer starts a PD member with cfg (Validate it first): it starts the
// etcd member, creates or reads the cluster ID, and campaigns for
// leadership in the background. It returns once the member serves.
func NewServer(cfg Config, log *slog.Logger) (*Server, error) {
	s := &Server{cfg: cfg, log: log}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.checkDataDir(); err != nil {
		return nil, fmt.Errorf("pd: %w", err)
	}
	ecfg, err := s.etcdConfig()
	if err != nil {
		return nil, err
	}
	if s.etcd, err = embed.StartEtcd(ecfg); err != nil {
		return nil, fmt.Errorf("pd: start etcd: %w", err)
	}
	select {
	case <-s.etcd.Server.ReadyNotify():
	case err := <-s.etcd.Err():
		s.etcd.Close()
		return nil, fmt.Errorf("pd: etcd: %w", err)
	case <-time.After(60 * time.Second):
		s.etcd.Close()
		return nil, errors.New("pd: etcd did not become ready in 60s (are the other members of initial-cluster up?)")
	}
	s.memberID = uint64(s.etcd.Server.MemberID())
	s.client, err = clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(cfg.AdvertiseClientURLs, ","),
		DialTimeout: 5 * time.Second,
		Logger:      s.etcd.GetLogger(),
	})
	if err != nil {
		s.etcd.Close()
		return nil, fmt.Errorf("pd: etcd client: %w", err)
	}
	if err := s.initClusterID(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.checkName(); err != nil {
		s.Close()
		return nil, err
	}
	if o, err := readOwner(cfg.DataDir); err != nil || o == nil || o.ClusterID != s.clusterID {
		if err == nil && o != nil {
			err = fmt.Errorf("pd: data dir %s belongs to cluster %d, but its etcd data is cluster %d's", cfg.DataDir, o.ClusterID, s.clusterID)
		} else if err == nil {
			err = s.recordOwner()
		}
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	s.rootPath = fmt.Sprintf("/pd/%d", s.clusterID)
	s.member = &pdpb.Member{
		Name:       cfg.Name,
		MemberId:   s.memberID,
		ClientUrls: strings.Split(cfg.AdvertiseClientURLs, ","),
		PeerUrls:   strings.Split(cfg.AdvertisePeerURLs, ","),
	}
	s.conf.cur = clusterConfig{Schedule: cfg.Schedule, Replication: cfg.Replication}
	s.tso = newTSO(s)
	s.ids = newIDAlloc(s)
	s.cl = newCluster(s)
	// One PD member per process: its directory's metrics are the
	// process's (a second server in a process reports none).
	if err := prometheus.Register(clusterCollector{s: s}); err == nil {
		s.collector = clusterCollector{s: s}
	}
	s.ready.Store(true)
	s.wg.Add(2)
	go s.campaignLoop()
	go s.watchLeader()
	log.Info("pd member started", "name", cfg.Name, "cluster-id", s.clusterID, "member-id", s.memberID,
		"client-urls", cfg.AdvertiseClientURLs)
	return s, nil
}

// etcdConfig is the embedded etcd's configuration: this member's URLs and
// data dir, the pdpb service registered on its gRPC server, and gRPC
// limits that pd/client and client-go need (they ping every 10 s, with no
// stream open at times).
func (s *Server) etcdConfig() (*embed.Config, error) {
	cfg := s.cfg
	ec := embed.NewConfig()
	// NewConfig leaves this 0, which logs every unary call at warn.
	ec.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	ec.Name = cfg.Name
	ec.Dir = cfg.DataDir
	var err error
	if ec.ListenClientUrls, err = parseURLs(cfg.ClientURLs); err != nil {
		return nil, err
	}
	if ec.AdvertiseClientUrls, err = parseURLs(cfg.AdvertiseClientURLs); err != nil {
		return nil, err
	}
	if ec.ListenPeerUrls, err = parseURLs(cfg.PeerURLs); err != nil {
		return nil, err
	}
	if ec.AdvertisePeerUrls, err = parseURLs(cfg.AdvertisePeerURLs); err != nil {
		return nil, err
	}
	ec.InitialCluster = cfg.InitialCluster
	ec.InitialClusterToken = "pd-cluster"
	if cfg.Join != "" {
		if err := s.prepareJoin(ec); err != nil {
			return nil, err
		}
	}
	ec.MaxRequestBytes = maxMsgSize
	ec.UserHandlers = map[string]http.Handler{apiPrefix: &httpAPI{s: s}}
	ec.EnablePprof = true // /debug/pprof on the client URL, as PD serves it
	ec.AutoCompactionMode = "periodic"
	ec.AutoCompactionRetention = "1h"
	ec.GRPCAdditionalServerOptions = grpcServerOptions()
	ec.ServiceRegister = func(gs *grpc.Server) {
		s.grpcMu.Lock()
		s.grpcServers = append(s.grpcServers, gs)
		s.grpcMu.Unlock()
		pdpb.RegisterPDServer(gs, &grpcService{s: s})
		meta_storagepb.RegisterMetaStorageServer(gs, &metaStorage{s: s})
	}
	ec.LogLevel = etcdLogLevel(cfg.LogLevel)
	if cfg.LogFile != "" {
		ec.LogOutputs = []string{cfg.LogFile}
	} else {
		ec.LogOutputs = []string{"stderr"}
	}
	return ec, nil
}

// etcdLogLevel keeps etcd's own logging a step quieter than PD's: at
// info it reports every raft step.
func etcdLogLevel(level string) string {
	switch strings.ToLower(level) {
	case "debug":
		return "info"
	case "info":
		return "warn"
	}
	return strings.ToLower(level)
}

// prepareJoin makes ec join the cluster that cfg.Join reaches: a member
// restarting with its data dir rejoins as it was; a new one is added to
// the cluster first and starts with the members' list. A name taken by
// another member is refused.
func (s *Server) prepareJoin(ec *embed.Config) error {
	if _, err := os.Stat(filepath.Join(s.cfg.DataDir, "member")); err == nil {
		ec.InitialCluster, ec.ClusterState = "", embed.ClusterStateFlagExisting
		return nil
	}
	cli, ctx, done, err := s.joinClient()
	if err != nil {
		return err
	}
	defer done()
	list, err := cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("join %s: %w", s.cfg.Join, err)
	}
	for _, m := range list.Members {
		if m.Name == s.cfg.Name {
			return fmt.Errorf("join: the cluster already has a member named %q", s.cfg.Name)
		}
	}
	added, err := cli.MemberAdd(ctx, strings.Split(s.cfg.AdvertisePeerURLs, ","))
	if err != nil {
		return fmt.Errorf("join %s: add member: %w", s.cfg.Join, err)
	}
	var parts []string
	for _, m := range added.Members {
		name := m.Name
		if m.ID == added.Member.ID {
			name = s.cfg.Name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, name+"="+u)
		}
	}
	ec.InitialCluster, ec.ClusterState = strings.Join(parts, ","), embed.ClusterStateFlagExisting
	return nil
}

// initClusterID reads the cluster ID, or creates it if this is the
// cluster's first start: the time in the high bits, random low bits, as
// PD makes it.
func (s *Server) initClusterID() error {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	id := uint64(time.Now().Unix())<<32 | uint64(binary.BigEndian.Uint32(rnd[:]))
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(keyClusterID), "=", 0)).
		Then(clientv3.OpPut(keyClusterID, string(u64(id)))).
		Else(clientv3.OpGet(keyClusterID)).Commit()
	if err != nil {
		return fmt.Errorf("pd: cluster ID: %w", err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) != 1 || len(kvs[0].Value) != 8 {
			return errors.New("pd: the stored cluster ID is malformed")
		}
		id = binary.BigEndian.Uint64(kvs[0].Value)
	}
	s.clusterID = id
	return nil
}

// checkName refuses to run two members under one name.
func (s *Server) checkName() error {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	list, err := s.client.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("pd: member list: %w", err)
	}
	for _, m := range list.Members {
		if m.Name == s.cfg.Name && m.ID != s.memberID {
			return fmt.Errorf("pd: another member (%x) is named %q: member names must be unique", m.ID, s.cfg.Name)
		}
	}
	return nil
}

// ClusterID is the cluster's ID.
func (s *Server) ClusterID() uint64 { return s.clusterID }

// Name is this member's name.
func (s *Server) Name() string { return s.cfg.Name }

// IsLeader reports whether this member leads now.
func (s *Server) IsLeader() bool { return s.leader.isLeader() }

// Err reports etcd failing after start.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close resigns leadership and stops the member.
func (s *Server) Close() {
	s.closed.Do(func() {
		s.cancel()
		s.wg.Wait()
		if s.collector != nil {
			prometheus.Unregister(s.collector)
		}
		if s.client != nil {
			s.client.Close()
		}
		// Stop PD's and etcd's gRPC servers before etcd's Close, which
		// would wait (gracefully, for seconds) for the streams clients
		// keep open: a SQL node's TSO stream never ends on its own.
		s.grpcMu.Lock()
		for _, gs := range s.grpcServers {
			gs.Stop()
		}
		s.grpcMu.Unlock()
		s.etcd.Close()
	})
}

// members lists the cluster's members as pdpb shows them.
func (s *Server) members(ctx context.Context) ([]*pdpb.Member, error) {
	list, err := s.client.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*pdpb.Member, 0, len(list.Members))
	for _, m := range list.Members {
		out = append(out, &pdpb.Member{Name: m.Name, MemberId: m.ID, ClientUrls: m.ClientURLs, PeerUrls: m.PeerURLs})
	}
	return out, nil
}

// u64 is v as 8 big-endian bytes, how counters are stored in etcd.
func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// getU64 reads a counter stored by u64; 0 if absent.
func (s *Server) getU64(ctx context.Context, key string) (uint64, error) {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	if len(resp.Kvs[0].Value) != 8 {
		return 0, fmt.Errorf("pd: %s is malformed", key)
	}
	return binary.BigEndian.Uint64(resp.Kvs[0].Value), nil
}

// grpcStreamWindow and grpcConnWindow are the gRPC server's fixed
// flow-control windows (a stream's, the connection's), as the storage
// node's (storenode/node.go).
const (
	grpcStreamWindow = 2 << 20
	grpcConnWindow   = 8 * grpcStreamWindow
)

// grpcServerOptions are the options of the gRPC server that PD's and
// etcd's services share: keepalive limits that pd/client and client-go
// need (they ping every 10 s, with no stream open at times), and fixed
// flow-control windows. Without them gRPC-Go sizes the windows itself and,
// to do so, pings the client after the first frame that follows each
// ping's ack: on a SQL node's TSO stream, a transaction's start and commit
// timestamps one request each, that was a PING, its ack and a
// WINDOW_UPDATE for most requests (docs/cluster-bench/README.md).
func grpcServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.MaxSendMsgSize(maxMsgSize),
		grpc.InitialWindowSize(grpcStreamWindow), grpc.InitialConnWindowSize(grpcConnWindow),
	}
}
