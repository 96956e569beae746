package pd

import (
	"context"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/pdpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Leadership is an etcd election under {root}/leader: each member
// campaigns with its pdpb.Member as the value, on a session whose lease
// lasts LeaderLease; the candidate whose key was created first leads
// until its lease lapses (it died, or lost etcd) or it resigns. Writes that
// only the leader may make are guarded by its election key (leaderTxn),
// so a member that lost leadership without noticing yet cannot make them.

// leadership is this member's view of whether it leads.
type leadership struct {
	mu  sync.RWMutex
	key string // this member's election key while it leads, else ""
	rev int64  // its create revision
	// ready: the leader's state is loaded and it serves.
	ready bool
}

func (l *leadership) isLeader() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.key != "" && l.ready
}

func (l *leadership) term() (key string, rev int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.key, l.rev
}

func (s *Server) electionPrefix() string { return s.rootPath + "/leader" }

// A leader that dies keeps its key until its lease runs out (3 s, and
// etcd extends leases when its own raft leader changes, which killing the
// PD leader often does). So that a dead leader is replaced sooner, the
// other members probe it (watchLeader): when its client URL has refused
// connections for leaderProbeFailures probes in a row, a member revokes
// its lease, which ends its term at once. Revoking needs an etcd quorum,
// so a member cut off from the others cannot depose a live leader; and a
// live leader deposed by mistake only loses its term: it cannot save
// anything after that (leaderTxn), and its successor starts above its
// saved timestamp window.
const (
	leaderProbeInterval = 250 * time.Millisecond
	leaderProbeTimeout  = 250 * time.Millisecond
	leaderProbeFailures = 3
)

// watchLeader probes the leader while this member follows, and revokes
// the lease of a leader that stopped answering.
func (s *Server) watchLeader() {
	defer s.wg.Done()
	failures, lease := 0, clientv3.LeaseID(0)
	tick := time.NewTicker(leaderProbeInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		if s.leader.isLeader() {
			failures = 0
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, time.Second)
		resp, err := s.client.Get(ctx, s.electionPrefix(), clientv3.WithFirstCreate()...)
		cancel()
		if err != nil || len(resp.Kvs) == 0 {
			failures = 0
			continue
		}
		kv := resp.Kvs[0]
		m := &pdpb.Member{}
		if m.Unmarshal(kv.Value) != nil || m.MemberId == s.memberID || len(m.ClientUrls) == 0 {
			failures = 0
			continue
		}
		if clientv3.LeaseID(kv.Lease) != lease {
			failures, lease = 0, clientv3.LeaseID(kv.Lease)
		}
		if reachable(m.ClientUrls[0]) {
			failures = 0
			continue
		}
		if failures++; failures < leaderProbeFailures {
			continue
		}
		ctx, cancel = context.WithTimeout(s.ctx, time.Second)
		_, err = s.client.Revoke(ctx, lease)
		cancel()
		s.log.Warn("pd: the leader does not answer; revoked its lease", "leader", m.Name, "err", err)
		failures = 0
	}
}

// reachable reports whether a TCP connection to u's host succeeds.
func reachable(u string) bool {
	parsed, err := url.Parse(u)
	if err != nil {
		return false
	}
	conn, err := net.DialTimeout("tcp", parsed.Host, leaderProbeTimeout)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// campaignLoop campaigns for leadership until the server closes: on
// winning it loads the leader's state and leads until its session ends,
// then campaigns again.
func (s *Server) campaignLoop() {
	defer s.wg.Done()
	for s.ctx.Err() == nil {
		if err := s.campaignOnce(); err != nil && s.ctx.Err() == nil {
			s.log.Warn("pd: campaign", "err", err)
			select {
			case <-time.After(200 * time.Millisecond):
			case <-s.ctx.Done():
			}
		}
	}
}

func (s *Server) campaignOnce() error {
	if err := s.dropOwnStaleKey(); err != nil {
		return err
	}
	ttl := int(s.cfg.LeaderLease / time.Second)
	if ttl < 1 {
		ttl = 1
	}
	sess, err := concurrency.NewSession(s.client, concurrency.WithTTL(ttl), concurrency.WithContext(s.ctx))
	if err != nil {
		return err
	}
	defer sess.Close()
	el := concurrency.NewElection(sess, s.electionPrefix())
	val, err := s.member.Marshal()
	if err != nil {
		return err
	}
	if err := el.Campaign(s.ctx, string(val)); err != nil {
		return err
	}
	key, rev := el.Key(), el.Rev()
	if err := s.becomeLeader(key, rev); err != nil {
		s.stepDown()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		el.Resign(ctx)
		cancel()
		return err
	}
	s.log.Info("pd: became leader", "name", s.cfg.Name)
	select {
	case <-sess.Done():
		s.log.Warn("pd: leader lease lost", "name", s.cfg.Name)
	case <-s.ctx.Done():
	}
	s.stepDown()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	el.Resign(ctx)
	cancel()
	return nil
}

// dropOwnStaleKey deletes the election key this member held before it
// restarted, if its lease has not run out yet: clients would take it for
// the leader, and the others would wait out the lease before leading.
// PD does the same.
func (s *Server) dropOwnStaleKey() error {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	resp, err := s.client.Get(ctx, s.electionPrefix(), clientv3.WithPrefix())
	if err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		m := &pdpb.Member{}
		if m.Unmarshal(kv.Value) == nil && m.MemberId == s.memberID {
			if _, err := s.client.Delete(ctx, string(kv.Key)); err != nil {
				return err
			}
			s.log.Info("pd: dropped this member's election key from before a restart", "key", string(kv.Key))
		}
	}
	return nil
}

// becomeLeader loads what the leader serves from, then marks this member
// leader.
func (s *Server) becomeLeader(key string, rev int64) error {
	s.leader.mu.Lock()
	s.leader.key, s.leader.rev = key, rev
	s.leader.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := s.tso.start(ctx); err != nil {
		return err
	}
	s.ids.reset()
	if err := s.loadConfig(ctx); err != nil {
		return err
	}
	if err := s.cl.load(ctx); err != nil {
		return err
	}
	s.leader.mu.Lock()
	s.leader.ready = true
	s.leader.mu.Unlock()
	leaderTerms.Inc()
	return nil
}

func (s *Server) stepDown() {
	s.leader.mu.Lock()
	s.leader.key, s.leader.rev, s.leader.ready = "", 0, false
	s.leader.mu.Unlock()
	s.tso.stop()
	s.log.Info("pd: stepped down", "name", s.cfg.Name)
}

// errNotLeader ends a write the leader made after its term ended.
var errNotLeader = errNotLeaderT{}

type errNotLeaderT struct{}

func (errNotLeaderT) Error() string { return "not leader" }

// leaderTxn commits ops only while this member still holds its term's
// election key.
func (s *Server) leaderTxn(ctx context.Context, ops ...clientv3.Op) error {
	key, rev := s.leader.term()
	if key == "" {
		return errNotLeader
	}
	resp, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return errNotLeader
	}
	return nil
}

// leaderMember is the member that leads now, or nil.
func (s *Server) leaderMember(ctx context.Context) (*pdpb.Member, error) {
	resp, err := s.client.Get(ctx, s.electionPrefix(), clientv3.WithFirstCreate()...)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	m := &pdpb.Member{}
	if err := m.Unmarshal(resp.Kvs[0].Value); err != nil {
		return nil, err
	}
	return m, nil
}
