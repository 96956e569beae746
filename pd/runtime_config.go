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
