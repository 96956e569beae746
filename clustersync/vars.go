// Package clustersync shares the SQL state other than the schema (which
// package schemasync keeps) among the SQL nodes of one cluster, through
// PD's etcd: the global system variables, and the changes of accounts,
// privileges and statistics. It is used in cluster mode only (--store tikv).
package clustersync

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// VarPrefix is where the global variables set with SET GLOBAL are kept:
//
//	/basalt/global_variables/<name>  the value, as SELECT @@GLOBAL.<name> writes it
//
// They have no lease: they outlive every node, as TiDB's
// mysql.global_variables does.
const VarPrefix = "/basalt/global_variables/"

// Vars keeps a node's global variables in step with the cluster's: Set
// saves one, and every node (the setter too) has apply called with each
// value saved before it started and each one saved since, in order.
type Vars struct {
	cli    *clientv3.Client
	apply  func(name, value string)
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartVars loads the global variables saved in etcd, applying each, and
// watches for changes.
func StartVars(cli *clientv3.Client, apply func(name, value string), log *slog.Logger) (*Vars, error) {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	v := &Vars{cli: cli, apply: apply, log: log, ctx: ctx, cancel: cancel}
	rev, err := v.load()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("clustersync: load the global variables: %w", err)
	}
	v.wg.Add(1)
	go v.watch(rev)
	return v, nil
}

// load applies every saved variable and returns the revision it read at.
func (v *Vars) load() (int64, error) {
	resp, err := v.cli.Get(v.ctx, VarPrefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	for _, kv := range resp.Kvs {
		v.apply(strings.TrimPrefix(string(kv.Key), VarPrefix), string(kv.Value))
	}
	return resp.Header.Revision, nil
}

// watch applies the changes after rev; when the watch breaks (a
// compaction, a lost connection) it loads everything again.
func (v *Vars) watch(rev int64) {
	defer v.wg.Done()
	for v.ctx.Err() == nil {
		for resp := range v.cli.Watch(v.ctx, VarPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
			if resp.Err() != nil {
				break
			}
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypePut {
					v.apply(strings.TrimPrefix(string(ev.Kv.Key), VarPrefix), string(ev.Kv.Value))
				}
				rev = ev.Kv.ModRevision
			}
		}
		if v.ctx.Err() != nil {
			return
		}
		r, err := v.load()
		if err != nil {
			v.log.Warn("clustersync: cannot reload the global variables", "err", err)
			select {
			case <-v.ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		rev = r
	}
}

// Set saves a global variable for every node.
func (v *Vars) Set(ctx context.Context, name, value string) error {
	if _, err := v.cli.Put(ctx, VarPrefix+name, value); err != nil {
		return fmt.Errorf("save the global variable %s in PD's etcd: %w", name, err)
	}
	return nil
}

// Close stops watching.
func (v *Vars) Close() {
	v.cancel()
	v.wg.Wait()
}
