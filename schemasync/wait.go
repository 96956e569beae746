package schemasync

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/basalt-db/basalt/catalog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Published announces schema version v, which this node just committed,
// and waits until every other registered node has loaded it (or its
// registration expired). It implements catalog.Cluster.
func (s *Syncer) Published(ctx context.Context, v int64) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := s.cli.Put(pctx, GlobalVersionKey, strconv.FormatInt(v, 10))
	cancel()
	if err != nil {
		// The others find it by polling within half a lease.
		s.warn("cannot publish the global schema version", err)
	}
	s.Notify()
	return s.waitAll(ctx, LoadedPrefix, v, "load")
}

// WaitInUse waits until no statement or transaction of another node uses
// a schema version older than v: the cluster's part of ddl.Waiter.
func (s *Syncer) WaitInUse(ctx context.Context, v int64) error {
	return s.waitAll(ctx, InUsePrefix, v, "finish the statements and transactions under versions older than")
}

// waitAll waits until the version of every other node under prefix is at
// least v. A node whose lease expires has its keys deleted by etcd and is
// waited for no more.
func (s *Syncer) waitAll(ctx context.Context, prefix string, v int64, what string) error {
	start := time.Now()
	logged := start
	backoff := 2 * time.Millisecond
	for {
		resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix())
		var pending []string
		if err == nil {
			for _, kv := range resp.Kvs {
				id := string(kv.Key[len(prefix):])
				if id == s.id {
					continue
				}
				if n, perr := strconv.ParseInt(string(kv.Value), 10, 64); perr != nil || n < v {
					pending = append(pending, id+"="+string(kv.Value))
				}
			}
			if len(pending) == 0 {
				return nil
			}
		} else {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Without etcd nobody can tell what the others use; this
			// node stops serving within a lease, and so does this wait.
			if verr := s.Valid(); verr != nil {
				return errors.Join(verr, err)
			}
		}
		if time.Since(logged) > 5*time.Second {
			sort.Strings(pending)
			s.log.Info("schemasync: waiting for SQL nodes to "+what+" the new schema version",
				"version", v, "pending", pending, "err", err)
			logged = time.Now()
		}
		if time.Since(start) > waitLimit {
			return fmt.Errorf("schema change gave up waiting for SQL nodes %v to %s schema version %d", pending, what, v)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// LockDDL takes the cluster's schema-change lock: an etcd mutex under a
// session of about the lease's TTL, so that a node that dies holding it
// releases it within a lease. It implements catalog.Cluster.
func (s *Syncer) LockDDL(ctx context.Context) (unlock func(), err error) {
	s.ddlMu.Lock()
	sess := s.ddlSession
	if sess != nil {
		select {
		case <-sess.Done():
			sess = nil // expired: the lock it held is gone too
		default:
		}
	}
	if sess == nil {
		ttl := int(math.Ceil(s.cfg.Lease.Seconds()))
		if sess, err = concurrency.NewSession(s.cli, concurrency.WithTTL(ttl), concurrency.WithContext(s.ctx)); err != nil {
			s.ddlMu.Unlock()
			return nil, fmt.Errorf("schemasync: schema-change lock: %w", err)
		}
		s.ddlSession = sess
	}
	s.ddlMu.Unlock()
	m := concurrency.NewMutex(sess, ddlLockKey)
	if err := m.Lock(ctx); err != nil {
		return nil, fmt.Errorf("schemasync: schema-change lock: %w", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Unlock(ctx); err != nil {
			s.warn("cannot release the schema-change lock (it expires with its session)", err)
		}
	}, nil
}

var _ catalog.Cluster = (*Syncer)(nil)
