package main

import (
	"fmt"
	"strconv"

	"github.com/basalt-db/basalt/config"
	"github.com/basalt-db/basalt/dashboard"
	"github.com/basalt-db/basalt/metrics"
	"github.com/basalt-db/basalt/slowlog"
	"github.com/basalt-db/basalt/stmtsummary"
	"github.com/basalt-db/basalt/store/local"
)

// dashboardSources is what the status port's /dashboard reads of the
// node: the metrics, the SQL layer's summary and slow log, the embedded
// store's figures, or with --store tikv the PD members.
func (n *node) dashboardSources(cfg *config.Config) dashboard.Sources {
	src := dashboard.Sources{Gatherer: metrics.Registry()}
	if e, ok := n.engine.(interface {
		observed() (*stmtsummary.Summary, *slowlog.Logger)
	}); ok {
		src.Summary, src.SlowLog = e.observed()
	}
	if st, ok := n.store.(*local.Store); ok {
		src.Store = func() []dashboard.Stat { return localStoreStats(st) }
	}
	if cfg.Store == config.StoreTiKV {
		src.PD, _ = config.PDEndpoints(cfg.Path) // checked when the store opened
	}
	return src
}

// localStoreStats are the embedded store's figures: Pebble's LSM, its
// compactions and block cache, and the latest-version cache.
func localStoreStats(st *local.Store) []dashboard.Stat {
	m := st.Metrics()
	lc := st.LatestCacheStats()
	hitRate := "–"
	if n := m.BlockCache.Hits + m.BlockCache.Misses; n > 0 {
		hitRate = fmt.Sprintf("%.1f%%", 100*float64(m.BlockCache.Hits)/float64(n))
	}
	var files int64
	for _, l := range m.Levels {
		files += l.TablesCount
	}
	return []dashboard.Stat{
		{Name: "disk space used", Value: bytesText(int64(m.DiskSpaceUsage()))},
		{Name: "sstables", Value: strconv.FormatInt(files, 10)},
		{Name: "L0 sublevels", Value: strconv.Itoa(int(m.Levels[0].Sublevels))},
		{Name: "memtables", Value: fmt.Sprintf("%d (%s)", m.MemTable.Count, bytesText(int64(m.MemTable.Size)))},
		{Name: "flushes", Value: strconv.FormatInt(m.Flush.Count, 10)},
		{Name: "compactions", Value: strconv.FormatInt(m.Compact.Count, 10)},
		{Name: "compactions running", Value: strconv.FormatInt(m.Compact.NumInProgress, 10)},
		{Name: "compaction debt", Value: bytesText(int64(m.Compact.EstimatedDebt))},
		{Name: "block cache size", Value: bytesText(m.BlockCache.Size)},
		{Name: "block cache hit rate", Value: hitRate},
		{Name: "block cache hits / misses", Value: fmt.Sprintf("%d / %d", m.BlockCache.Hits, m.BlockCache.Misses)},
		{Name: "latest-version cache", Value: fmt.Sprintf("%d chunks, %s", lc.Chunks, bytesText(lc.Bytes))},
		{Name: "latest-version cache loads / evictions / refused", Value: fmt.Sprintf("%d / %d / %d", lc.Loads, lc.Evictions, lc.Refused)},
	}
}

// bytesText is n bytes in binary units: "12.3 MiB".
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n), -1
	for f >= unit && u < 4 {
		f /= unit
		u++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTP"[u])
}
