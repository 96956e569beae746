package ddl

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/importer"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
)

// The fast path of a non-unique index's backfill (TiDB's
// tidb_ddl_enable_fast_reorg), on a store that can ingest files in the
// past (kv.BackfillIngester, the embedded store): one snapshot of the
// table at S, its rows' entries sorted in bounded memory
// (importer.Sorter: runs spilled to temp files past the budget), then
// written into SSTs as versions committed at S and ingested, while
// writers go on maintaining the write-only index.
//
// Why that is the index as of now, with no validation afterwards:
//
//   - a row not written since S: its entry at S is the right one;
//   - a row written by a transaction that committed after S: that writer
//     deleted the entry of the row value it replaced (the row at S, or a
//     later one) and wrote that of the value it wrote, at its commit ts,
//     above S; so whatever was ingested for the row is hidden where it is
//     stale and repeated where it is not (an entry whose values did not
//     change is not rewritten, and reads as ingested: the same);
//   - a transaction that committed at or before S: the snapshot saw it;
//     one in flight with a commit ts below S is waited out by the scan.
//
// What that needs: every writer that can commit after S maintains the
// index, which the write-only state gives (createIndexLocked waited out
// the transactions of older schema versions before the backfill); nobody
// reads the index before it is public; and the Deletes of writers after
// S are not collected before the ingest, which the snapshot's
// transaction, open until then, ensures (it holds the GC safe point
// below S). Against backfillCovered, which commits above its snapshot
// and must find and delete again the entries of rows changed meanwhile,
// nothing here commits above S, so there is nothing to find.
//
// A unique index keeps the transactional path: its entries are keyed by
// value alone, and a duplicate must be found against the rows written
// meanwhile too.

type fastReorgKey struct{}

// WithoutFastReorg marks ctx for a schema change run with
// tidb_ddl_enable_fast_reorg off: indexes are backfilled in transactions
// (backfillCovered, backfillBatch), whatever the store.
func WithoutFastReorg(ctx context.Context) context.Context {
	return context.WithValue(ctx, fastReorgKey{}, false)
}

func fastReorg(ctx context.Context) bool {
	v, ok := ctx.Value(fastReorgKey{}).(bool)
	return !ok || v
}

// beforeIngest, if set, runs between the scan and the ingest (tests:
// writes that land after the snapshot).
var beforeIngest func()

// IngestMemBudget is the memory the fast path's sorter keeps entries in
// before it spills them to temp files (os.TempDir()).
var IngestMemBudget = importer.DefaultMemBudget

// backfillIngest writes the entries of every row of t for the
// non-unique index ix, by ingestion at a snapshot (see above). The rows
// are read in up to ingestParts parts of their handle range at once, each
// into a sorter of its own (a share of IngestMemBudget), which also sorts
// it; the sorted parts are merged into the files.
func (d *DDL) backfillIngest(ctx context.Context, ing kv.BackfillIngester, t *catalog.TableInfo, ix *catalog.IndexInfo) error {
	txn, err := d.Store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return err
	}
	// Open until the ingest is done: it holds GC below its start ts.
	defer txn.Rollback()
	// The transaction writes nothing: its snapshot reads the rows.
	snap := d.Store.Snapshot(txn.StartTS())
	parts, err := rowParts(snap, t, ingestParts())
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "basalt-index-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sorters := make([]*importer.Sorter, len(parts))
	defer func() {
		for _, s := range sorters {
			if s != nil {
				s.Close()
			}
		}
	}()
	for i := range parts {
		if sorters[i], err = importer.NewSorter(filepath.Join(dir, strconv.Itoa(i)), IngestMemBudget/len(parts)); err != nil {
			return err
		}
	}
	merges := make([]*importer.Merger, len(parts))
	defer func() {
		for _, m := range merges {
			if m != nil {
				m.Close()
			}
		}
	}()
	scanCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := sortEntries(scanCtx, snap, t, ix, p[0], p[1], sorters[i])
			if err == nil {
				merges[i], err = sorters[i].Merge() // sorts what it holds
			}
			if err != nil {
				errs[i] = err
				cancel()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if beforeIngest != nil {
		beforeIngest()
	}
	var n int64
	for _, s := range sorters {
		n += s.Pairs
	}
	if n == 0 {
		return nil
	}
	prefix := tablecodec.IndexPrefix(t.ID, ix.ID)
	return ing.IngestAt(ctx, txn, prefix, kv.PrefixEnd(prefix), func(put func(key, value []byte) error) error {
		// Entries of a non-unique index hold their row's handle: no two
		// are equal, which put checks (keys strictly ascending).
		return mergeParts(ctx, merges, put)
	})
}

// ingestParts is how many parts of a table backfillIngest reads at once:
// one per core, at most 4 (tests set it).
var ingestParts = func() int { return min(runtime.GOMAXPROCS(0), 4) }

// minPartRows is the span of handles below which a table is read in one
// part.
const minPartRows = 16384

// rowParts splits t's row range into up to n parts of about equal handle
// spans (one for a table with a clustered non-integer key, or few rows).
func rowParts(snap kv.Snapshot, t *catalog.TableInfo, n int) ([][2][]byte, error) {
	start, end := tablecodec.RowPrefix(t.ID), kv.PrefixEnd(tablecodec.RowPrefix(t.ID))
	whole := [][2][]byte{{start, end}}
	if n <= 1 || t.CommonHandle {
		return whole, nil
	}
	handle := func(reverse bool) (int64, bool, error) {
		var it kv.Iterator
		var err error
		if reverse {
			it, err = snap.IterReverse(start, end)
		} else {
			it, err = snap.Iter(start, end)
		}
		if err != nil {
			return 0, false, err
		}
		defer it.Close()
		if !it.Valid() {
			return 0, false, nil
		}
		_, h, err := tablecodec.DecodeRowKey(it.Key(), false)
		return h.Int, true, err
	}
	first, ok, err := handle(false)
	if err != nil || !ok {
		return whole, err
	}
	last, _, err := handle(true)
	if err != nil {
		return nil, err
	}
	span := uint64(last - first) // a wrapped difference is still the span
	if span < minPartRows {
		return whole, nil
	}
	parts := make([][2][]byte, 0, n)
	lo := start
	for i := 1; i < n; i++ {
		at := tablecodec.RowKey(t.ID, tablecodec.IntHandle(first+int64(span/uint64(n)*uint64(i))))
		parts = append(parts, [2][]byte{lo, at})
		lo = at
	}
	return append(parts, [2][]byte{lo, end}), nil
}

// sortEntries adds to sorter the entry of ix of every row of t in snap
// whose key is in [start, end).
func sortEntries(ctx context.Context, snap kv.Snapshot, t *catalog.TableInfo, ix *catalog.IndexInfo, start, end []byte, sorter *importer.Sorter) error {
	it, err := snap.Iter(start, end)
	if err != nil {
		return err
	}
	defer it.Close()
	enc := table.NewIndexEncoder(t, ix)
	var key []byte // reused: the sorter copies each pair in
	for n := 0; it.Valid(); n++ {
		if n&4095 == 4095 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		_, h, err := tablecodec.DecodeRowKey(it.Key(), t.CommonHandle)
		if err != nil {
			return err
		}
		var value []byte
		if key, value, err = enc.AppendEntry(key[:0], h, it.Value()); err != nil {
			return err
		}
		if err := sorter.Add(key, value); err != nil {
			return err
		}
		if err := it.Next(); err != nil {
			return err
		}
	}
	return nil
}

// mergeParts passes the pairs of the sorted parts to put in key order.
func mergeParts(ctx context.Context, parts []*importer.Merger, put func(key, value []byte) error) error {
	type head struct {
		m    *importer.Merger
		k, v []byte
	}
	var heads []*head
	for _, m := range parts {
		k, v, ok, err := m.Next()
		if err != nil {
			return err
		}
		if ok {
			heads = append(heads, &head{m, k, v})
		}
	}
	for i := 0; len(heads) > 0; i++ {
		if i&4095 == 4095 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// Few parts: the least head is found by a scan.
		least := 0
		for j := 1; j < len(heads); j++ {
			if bytes.Compare(heads[j].k, heads[least].k) < 0 {
				least = j
			}
		}
		h := heads[least]
		if err := put(h.k, h.v); err != nil {
			return err
		}
		k, v, ok, err := h.m.Next()
		if err != nil {
			return err
		}
		if ok {
			h.k, h.v = k, v
		} else {
			heads = append(heads[:least], heads[least+1:]...)
		}
	}
	return nil
}
