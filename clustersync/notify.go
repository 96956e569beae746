package clustersync

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PrivilegeKey is bumped (written again) by a node that changed the
// accounts or privileges, and watched by every node, which then reloads
// the grant tables from KV: TiDB's key.
const PrivilegeKey = "/tidb/privilege"

// StatsKey is bumped by a node that stored new statistics (ANALYZE
// TABLE), and watched by every node, which then reloads the statistics
// newer than its own from KV. (TiDB's nodes poll mysql.stats_meta every
// stats lease instead.)
const StatsKey = "/basalt/stats"

// BindInfoKey is bumped by a node that changed the global SQL plan
// bindings (mysql.bind_info), and watched by every node, which then
// reloads them from KV. (TiDB's nodes poll mysql.bind_info instead.)
const BindInfoKey = "/basalt/bindinfo"

// Notify tells every node watching key that what it stands for changed.
func Notify(ctx context.Context, cli *clientv3.Client, key string) error {
	if _, err := cli.Put(ctx, key, ""); err != nil {
		return fmt.Errorf("notify the other SQL nodes through PD's etcd (%s): %w", key, err)
	}
	return nil
}

// Watcher calls a function whenever a key is written, and once at the
// start and after any gap in its watch (a compaction, a lost connection),
// so that no write is missed: each time, it reads the store's revision,
// calls the function, and watches from the next revision on.
type Watcher struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Watch starts a Watcher of key that calls reload.
func Watch(cli *clientv3.Client, key string, reload func(), log *slog.Logger) *Watcher {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{cancel: cancel}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for ctx.Err() == nil {
			resp, err := cli.Get(ctx, key)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("clustersync: cannot read a notification key", "key", key, "err", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
			reload()
			for wr := range cli.Watch(ctx, key, clientv3.WithRev(resp.Header.Revision+1)) {
				if wr.Err() != nil {
					break
				}
				if len(wr.Events) > 0 {
					reload()
				}
			}
		}
	}()
	return w
}

// Close stops watching.
func (w *Watcher) Close() {
	w.cancel()
	w.wg.Wait()
}
