package pd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The [schedule] and [replication] sections can change while PD runs
// (POST /pd/api/v1/config), as PD's can. The leader saves a change in
// etcd ({root}/config); a new leader loads it, so the cluster keeps it
// across leader changes and restarts (it then wins over the file).

// clusterConfig is the part of the configuration that can change.
type clusterConfig struct {
	Schedule    ScheduleConfig    `json:"schedule"`
	Replication ReplicationConfig `json:"replication"`
	// Schedulers are the balance schedulers that run (the replica checker
	// always does); nil is all of them.
	Schedulers []string `json:"schedulers,omitempty"`
}

// The balance schedulers, by PD's names.
const (
	balanceRegionScheduler = "balance-region-scheduler"
	balanceLeaderScheduler = "balance-leader-scheduler"
)

var allSchedulers = []string{balanceRegionScheduler, balanceLeaderScheduler}

// schedulers lists the balance schedulers that run.
func (c clusterConfig) schedulers() []string {
	if c.Schedulers == nil {
		return allSchedulers
	}
	return c.Schedulers
}

func (c clusterConfig) hasScheduler(name string) bool {
	for _, s := range c.schedulers() {
		if s == name {
			return true
		}
	}
	return false
}

// setScheduler turns a balance scheduler on or off and saves the result.
func (s *Server) setScheduler(ctx context.Context, name string, on bool) ([]string, error) {
	known := false
	for _, k := range allSchedulers {
		known = known || k == name
	}
	if !known {
		return nil, fmt.Errorf("unknown scheduler %q (the balance schedulers are %v)", name, allSchedulers)
	}
	s.conf.mu.Lock()
	defer s.conf.mu.Unlock()
	next := s.conf.cur
	list := []string{}
	for _, k := range allSchedulers {
		if (k == name && on) || (k != name && next.hasScheduler(k)) {
			list = append(list, k)
		}
	}
	next.Schedulers = list
	b, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	if err := s.leaderTxn(ctx, clientv3.OpPut(s.configKey(), string(b))); err != nil {
		return nil, err
	}
	s.conf.cur = next
	return list, nil
}

// runtimeConfig holds the current clusterConfig.
type runtimeConfig struct {
	mu  sync.RWMutex
	cur clusterConfig
}

func (r *runtimeConfig) get() clusterConfig {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur
}

func (s *Server) configKey() string { return s.rootPath + "/config" }

// loadConfig reads a saved configuration, for a new leader.
func (s *Server) loadConfig(ctx context.Context) error {
	resp, err := s.client.Get(ctx, s.configKey())
	if err != nil || len(resp.Kvs) == 0 {
		return err
	}
	var c clusterConfig
	if err := json.Unmarshal(resp.Kvs[0].Value, &c); err != nil {
		return fmt.Errorf("pd: saved config: %w", err)
	}
	s.conf.mu.Lock()
	s.conf.cur = c
	s.conf.mu.Unlock()
	return nil
}

// updateConfig applies a JSON object of changes ({"schedule": {...},
// "replication": {...}}, with PD's key names) and saves the result. An
// invalid value is refused, naming its key.
func (s *Server) updateConfig(ctx context.Context, body []byte) (clusterConfig, error) {
	s.conf.mu.Lock()
	defer s.conf.mu.Unlock()
	next := s.conf.cur
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&next); err != nil {
		return clusterConfig{}, fmt.Errorf("config: %w", err)
	}
	check := s.cfg
	check.Schedule, check.Replication = next.Schedule, next.Replication
	if err := check.validateCluster(); err != nil {
		return clusterConfig{}, err
	}
	b, err := json.Marshal(next)
	if err != nil {
		return clusterConfig{}, err
	}
	if err := s.leaderTxn(ctx, clientv3.OpPut(s.configKey(), string(b))); err != nil {
		return clusterConfig{}, err
	}
	s.conf.cur = next
	return next, nil
}
