package ddl

import (
	"context"
	"os"

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
// non-unique index ix, by ingestion at a snapshot (see above).
func (d *DDL) backfillIngest(ctx context.Context, ing kv.BackfillIngester, t *catalog.TableInfo, ix *catalog.IndexInfo) error {
	txn, err := d.Store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return err
	}
	// Open until the ingest is done: it holds GC below its start ts.
	defer txn.Rollback()
	dir, err := os.MkdirTemp("", "basalt-index-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sorter, err := importer.NewSorter(dir, IngestMemBudget)
	if err != nil {
		return err
	}
	defer sorter.Close()
	// The transaction writes nothing: its snapshot reads the rows.
	if err := sortEntries(ctx, d.Store.Snapshot(txn.StartTS()), t, ix, sorter); err != nil {
		return err
	}
	if beforeIngest != nil {
		beforeIngest()
	}
	if sorter.Pairs == 0 {
		return nil
	}
	m, err := sorter.Merge()
	if err != nil {
		return err
	}
	defer m.Close()
	prefix := tablecodec.IndexPrefix(t.ID, ix.ID)
	return ing.IngestAt(ctx, txn, prefix, kv.PrefixEnd(prefix), func(put func(key, value []byte) error) error {
		// Entries of a non-unique index hold their row's handle: no two
		// are equal, which put checks (keys strictly ascending).
		for i := 0; ; i++ {
			if i&4095 == 4095 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			k, v, ok, err := m.Next()
			if err != nil || !ok {
				return err
			}
			if err := put(k, v); err != nil {
				return err
			}
		}
	})
}

// sortEntries adds to sorter the entry of ix of every row of t in snap.
func sortEntries(ctx context.Context, snap kv.Snapshot, t *catalog.TableInfo, ix *catalog.IndexInfo, sorter *importer.Sorter) error {
	start := tablecodec.RowPrefix(t.ID)
	it, err := snap.Iter(start, kv.PrefixEnd(start))
	if err != nil {
		return err
	}
	defer it.Close()
	enc := table.NewIndexEncoder(t, ix)
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
		key, value, err := enc.Entry(h, it.Value())
		if err != nil {
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
