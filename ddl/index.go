package ddl

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// CreateIndex runs CREATE [UNIQUE] INDEX (and ALTER TABLE ADD INDEX): the
// index is published delete-only, then write-only, older transactions
// being waited out after each step (so that at most two adjacent states
// are live at once, as in F1's online schema change), the existing rows
// are backfilled in batches, and the index becomes public.
// A unique index that finds duplicates is removed again and the statement
// fails with 1062.
func (d *DDL) CreateIndex(ctx context.Context, currentDB string, tn *ast.TableName, name string, unique bool,
	parts []*ast.IndexPartSpecification, ifNotExists bool) error {
	dbName := tn.Schema.O
	if dbName == "" {
		dbName = currentDB
	}
	unlock, err := d.Catalog.LockDDL(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	_, t, err := d.table(dbName, tn.Name.O)
	if err != nil {
		return err
	}
	_, err = d.createIndexLocked(ctx, t.ID, name, unique, parts, ifNotExists)
	return err
}

// createIndexLocked builds an index on table tableID (see CreateIndex) and
// returns its id (0 if ifNotExists found one of that name). The caller
// holds the schema-change lock.
func (d *DDL) createIndexLocked(ctx context.Context, tableID int64, name string, unique bool,
	parts []*ast.IndexPartSpecification, ifNotExists bool) (int64, error) {
	var indexID int64
	err := d.change(ctx, tableID, func(nt *catalog.TableInfo) error {
		ix := &catalog.IndexInfo{Name: name, Unique: unique, State: catalog.StateDeleteOnly}
		if err := fillIndexColumns(nt, ix, parts); err != nil {
			return err
		}
		if ix.Name == "" {
			ix.Name = uniqueIndexName(nt, ix.Columns[0].Name)
		}
		if nt.FindIndex(ix.Name) != nil || strings.EqualFold(ix.Name, "PRIMARY") {
			if ifNotExists {
				return errSkip
			}
			return errno.New(errno.ErDupKeyName, "Duplicate key name '%s'", ix.Name)
		}
		nt.MaxIndexID++
		ix.ID = nt.MaxIndexID
		nt.Indexes = append(nt.Indexes, ix)
		indexID = ix.ID
		return nil
	})
	if errors.Is(err, errSkip) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	// Delete-only first: while statements that predate the index still
	// run (they neither add nor delete its entries), nobody adds entries
	// they could leave dangling by deleting or changing a row. Once they
	// have drained, writers add entries too (write-only).
	if err := d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		findIndexByID(t, indexID).State = catalog.StateWriteOnly
		return nil
	}); err != nil {
		return 0, d.abandonIndex(ctx, tableID, indexID, err)
	}
	// From here on, writers maintain the index. Rows written by
	// transactions that started earlier were waited out (change); now
	// they are backfilled.
	if backfillDelay > 0 {
		// A test's switch (testfault.go).
		select {
		case <-time.After(backfillDelay):
		case <-ctx.Done():
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, d.abandonIndex(ctx, tableID, indexID, err)
	}
	t := d.Catalog.InfoSchema().TableByID(tableID)
	ix := findIndexByID(t, indexID)
	if err := d.backfill(ctx, t, ix); err != nil {
		return 0, d.abandonIndex(ctx, tableID, indexID, err)
	}
	return indexID, d.publish(ctx, tableID, func(t *catalog.TableInfo) error {
		findIndexByID(t, indexID).State = catalog.StatePublic
		return nil
	})
}

func findIndexByID(t *catalog.TableInfo, id int64) *catalog.IndexInfo {
	for _, ix := range t.Indexes {
		if ix.ID == id {
			return ix
		}
	}
	return nil
}

// abandonIndex removes an index whose build failed, and its entries once
// the statements and transactions that may still write them (those under
// an older schema, which maintained the write-only index) have ended
// (change waits), as DropIndex does: deleting the range under a live
// transaction took away its pessimistic locks, and its commit failed with
// 'lock not found'.
func (d *DDL) abandonIndex(ctx context.Context, tableID, indexID int64, cause error) error {
	// It runs to the end even when the statement was cancelled (a KILL,
	// ADMIN CANCEL DDL JOBS).
	ctx = context.WithoutCancel(ctx)
	err := d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		for i, ix := range t.Indexes {
			if ix.ID == indexID {
				t.Indexes = append(t.Indexes[:i], t.Indexes[i+1:]...)
				break
			}
		}
		return nil
	})
	if err == nil {
		prefix := tablecodec.IndexPrefix(tableID, indexID)
		err = d.dropRange(ctx, prefix, kv.PrefixEnd(prefix))
	}
	return errors.Join(cause, err)
}

// backfill writes the entries of every existing row, a batch of rows per
// transaction. The index is write-only meanwhile: every writer that
// commits after the backfill's batch read the row maintains the entry
// itself (deleting the old one unconditionally), so what a batch must
// not do is write an entry for a row value that a writer replaced or
// deleted between the batch's snapshot and its commit.
//
// A unique index's batch locks its rows' keys (lock-only), so a batch that
// raced with a change of one of its rows fails to commit and is redone
// from a fresh snapshot; its entries are keyed by value, and their
// conflict checks also catch another row taking the value meanwhile.
//
// A non-unique index's entries are keyed by value and handle, so only the
// row's own writers touch them: the batch writes them unchecked
// (kv.Txn.Cover) and locks nothing, which costs the commit no conflict
// seek per key, and then validates, reading its rows again above its
// commit ts: an entry whose row changed its indexed values or went
// meanwhile is deleted again, in a checked transaction (see
// backfillCovered).
//
// On a store that can ingest in the past (the embedded store), with
// tidb_ddl_enable_fast_reorg on, a non-unique index is built from one
// sorted snapshot instead (backfillIngest, ingest.go).
func (d *DDL) backfill(ctx context.Context, t *catalog.TableInfo, ix *catalog.IndexInfo) error {
	if ing, ok := d.Store.(kv.BackfillIngester); ok && !ix.Unique && fastReorg(ctx) {
		return d.backfillIngest(ctx, ing, t, ix)
	}
	start, end := tablecodec.RowPrefix(t.ID), kv.PrefixEnd(tablecodec.RowPrefix(t.ID))
	batch, maxRows := d.backfillBatch, backfillMaxRows
	if !ix.Unique {
		// A cluster's transactions check even covered keys (client-go
		// has no such hint), so its batches can still conflict.
		batch, maxRows = d.backfillCovered, backfillCoveredRows
	}
	size := maxRows
	for {
		next, err := batch(ctx, t, ix, start, end, size)
		if errors.Is(err, kv.ErrWriteConflict) {
			// Under writes a large batch nearly always meets a row or an
			// index entry committed since it started, and would be
			// redone forever: halve it, down to backfillMinRows.
			size = max(size/2, backfillMinRows)
			continue
		}
		if err != nil {
			return err
		}
		if next == nil {
			return nil
		}
		start = next
		size = min(size*2, maxRows)
	}
}

// backfillMaxRows is how many rows a backfill transaction of a unique
// index covers at most, backfillMinRows how few it comes down to after
// write conflicts; backfillCoveredRows is the batch of a non-unique
// index, which does not conflict on the embedded store.
const (
	backfillMaxRows     = 1024
	backfillMinRows     = 16
	backfillCoveredRows = 4096
)

func (d *DDL) backfillBatch(ctx context.Context, t *catalog.TableInfo, ix *catalog.IndexInfo, start, end []byte, size int) ([]byte, error) {
	txn, err := d.Store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return nil, err
	}
	defer txn.Rollback()
	it, err := txn.Iter(start, end)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	enc := table.NewIndexEncoder(t, ix)
	var next []byte
	n := 0
	for it.Valid() {
		if n == size {
			next = append([]byte(nil), it.Key()...)
			break
		}
		rk := append([]byte(nil), it.Key()...)
		_, h, err := tablecodec.DecodeRowKey(rk, t.CommonHandle)
		if err != nil {
			return nil, err
		}
		key, value, err := enc.Entry(h, it.Value())
		if err != nil {
			return nil, err
		}
		if ix.Unique && len(value) > 0 {
			old, err := txn.Get(ctx, key)
			switch {
			case err == nil && string(old) != string(value):
				vals, _, _, _ := tablecodec.DecodeIndexKey(key, len(ix.Columns), t.CommonHandle)
				return nil, table.DupEntry(t, ix, vals)
			case err != nil && !errors.Is(err, kv.ErrNotFound):
				return nil, err
			}
		}
		if err := txn.Set(key, value); err != nil {
			return nil, err
		}
		if err := txn.LockKeys(ctx, 0, 0, rk); err != nil {
			return nil, err
		}
		n++
		if err := it.Next(); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, nil
	}
	return next, txn.Commit(ctx)
}

// builtEntry is a row a covered batch read and the entry it wrote for it.
type builtEntry struct {
	rowKey, rowValue []byte
	key, value       []byte
}

// backfillCovered writes the entries of a non-unique index for up to size
// rows from start, unchecked, then validates them; it returns where the
// next batch starts (nil: the table is done).
//
// Why the validation suffices: the batch read row r at its snapshot S and
// wrote entry e(r@S) at commit ts C. A writer of r that committed after C
// wrote its own entries over it. One that committed in (S, C] deleted
// e(r@S) if it changed the indexed values or the row, and the batch wrote
// it back: then r, read at a ts after C, no longer has entry e(r@S) (a
// later writer that made the values e(r@S)'s again wrote e(r@S) itself,
// and the row then matches, and the entry is right). So every entry whose
// row, read after C, no longer yields exactly it is deleted again — by a
// transaction that checks the entry for newer commits and reads the row
// once more, so that it cannot delete an entry a writer has just put back.
func (d *DDL) backfillCovered(ctx context.Context, t *catalog.TableInfo, ix *catalog.IndexInfo, start, end []byte, size int) ([]byte, error) {
	built, next, err := d.writeCovered(ctx, t, ix, start, end, size)
	if err != nil || len(built) == 0 {
		return nil, err
	}
	stale, err := d.staleEntries(t, ix, built, start, next, end)
	if err != nil {
		return nil, err
	}
	if len(stale) > 0 {
		if err := d.deleteStaleEntries(ctx, t, ix, stale); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// writeCovered is the first half of backfillCovered: one transaction that
// reads up to size rows from start and writes their entries, covered.
func (d *DDL) writeCovered(ctx context.Context, t *catalog.TableInfo, ix *catalog.IndexInfo, start, end []byte, size int) ([]builtEntry, []byte, error) {
	txn, err := d.Store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return nil, nil, err
	}
	defer txn.Rollback()
	it, err := txn.Iter(start, end)
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	enc := table.NewIndexEncoder(t, ix)
	built := make([]builtEntry, 0, min(size, 1024))
	var next []byte
	for it.Valid() {
		if len(built) == size {
			next = append([]byte(nil), it.Key()...)
			break
		}
		b := builtEntry{rowKey: append([]byte(nil), it.Key()...), rowValue: append([]byte(nil), it.Value()...)}
		_, h, err := tablecodec.DecodeRowKey(b.rowKey, t.CommonHandle)
		if err != nil {
			return nil, nil, err
		}
		if b.key, b.value, err = enc.Entry(h, b.rowValue); err != nil {
			return nil, nil, err
		}
		if err := txn.Set(b.key, b.value); err != nil {
			return nil, nil, err
		}
		txn.Cover(b.key)
		built = append(built, b)
		if err := it.Next(); err != nil {
			return nil, nil, err
		}
	}
	if len(built) == 0 {
		return nil, nil, nil
	}
	return built, next, txn.Commit(ctx)
}

// staleEntries reads the rows of built (in row key order, from start up
// to next, or end for the last batch) at a ts after their batch
// committed, and returns the entries that their rows no longer yield.
func (d *DDL) staleEntries(t *catalog.TableInfo, ix *catalog.IndexInfo, built []builtEntry, start, next, end []byte) ([]builtEntry, error) {
	ts, err := d.Store.CurrentTS()
	if err != nil {
		return nil, err
	}
	upto := next
	if upto == nil {
		upto = end
	}
	it, err := d.Store.Snapshot(ts).Iter(start, upto)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	enc := table.NewIndexEncoder(t, ix)
	var stale []builtEntry
	for _, b := range built {
		for it.Valid() && bytes.Compare(it.Key(), b.rowKey) < 0 {
			if err := it.Next(); err != nil {
				return nil, err
			}
		}
		if !it.Valid() || !bytes.Equal(it.Key(), b.rowKey) {
			stale = append(stale, b) // deleted
			continue
		}
		if bytes.Equal(it.Value(), b.rowValue) {
			continue
		}
		ok, err := b.yieldedBy(t, enc, it.Value())
		if err != nil {
			return nil, err
		}
		if !ok {
			stale = append(stale, b)
		}
	}
	return stale, nil
}

// deleteStaleEntries deletes the entries of stale whose rows, read again,
// do not yield them, in one transaction that checks each deleted entry
// for commits since it began (a writer that just put the entry back);
// such a conflict runs it again.
func (d *DDL) deleteStaleEntries(ctx context.Context, t *catalog.TableInfo, ix *catalog.IndexInfo, stale []builtEntry) error {
	enc := table.NewIndexEncoder(t, ix)
	for {
		err := func() error {
			txn, err := d.Store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
			if err != nil {
				return err
			}
			defer txn.Rollback()
			for _, b := range stale {
				v, err := txn.Get(ctx, b.rowKey)
				switch {
				case errors.Is(err, kv.ErrNotFound):
				case err != nil:
					return err
				default:
					if ok, err := b.yieldedBy(t, enc, v); err != nil || ok {
						if err != nil {
							return err
						}
						continue
					}
				}
				if err := txn.Delete(b.key); err != nil {
					return err
				}
			}
			return txn.Commit(ctx)
		}()
		if !errors.Is(err, kv.ErrWriteConflict) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// DropIndex runs DROP INDEX (and ALTER TABLE DROP INDEX): the index stops
// being read (write-only), then stops being written (delete-only), then
// leaves the schema, a schema version each with older transactions waited
// out in between; then its entries are deleted.
func (d *DDL) DropIndex(ctx context.Context, currentDB string, tn *ast.TableName, name string, ifExists bool) error {
	dbName := tn.Schema.O
	if dbName == "" {
		dbName = currentDB
	}
	unlock, err := d.Catalog.LockDDL(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	_, t, err := d.table(dbName, tn.Name.O)
	if err != nil {
		return err
	}
	ix := t.FindIndex(name)
	if ix == nil || ix.State != catalog.StatePublic {
		if ifExists {
			return nil
		}
		return errno.New(errno.ErCantDropFieldOrKey, "Can't DROP '%s'; check that column/key exists", name)
	}
	if err := checkDropIndexFK(d.Catalog.InfoSchema(), dbName, t, ix); err != nil {
		return err
	}
	return d.dropIndexLocked(ctx, t, ix)
}

// dropIndexLocked drops index ix of t; the caller holds the schema-change
// lock.
func (d *DDL) dropIndexLocked(ctx context.Context, t *catalog.TableInfo, ix *catalog.IndexInfo) error {
	if ix.Primary && (t.PKIsHandle || t.CommonHandle) {
		return errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support 'dropping a clustered primary key'")
	}
	tableID, indexID := t.ID, ix.ID
	for _, st := range []catalog.SchemaState{catalog.StateWriteOnly, catalog.StateDeleteOnly} {
		err := d.change(ctx, tableID, func(t *catalog.TableInfo) error {
			findIndexByID(t, indexID).State = st
			return nil
		})
		if err != nil {
			return err
		}
	}
	err := d.change(ctx, tableID, func(t *catalog.TableInfo) error {
		for i, x := range t.Indexes {
			if x.ID == indexID {
				t.Indexes = append(t.Indexes[:i], t.Indexes[i+1:]...)
				break
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	prefix := tablecodec.IndexPrefix(tableID, indexID)
	return d.dropRange(ctx, prefix, kv.PrefixEnd(prefix))
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// yieldedBy reports whether the row stored as rowValue under b's row key
// has exactly b's entry.
func (b *builtEntry) yieldedBy(t *catalog.TableInfo, enc *table.IndexEncoder, rowValue []byte) (bool, error) {
	_, h, err := tablecodec.DecodeRowKey(b.rowKey, t.CommonHandle)
	if err != nil {
		return false, err
	}
	key, value, err := enc.Entry(h, rowValue)
	if err != nil {
		return false, err
	}
	return bytes.Equal(key, b.key) && bytes.Equal(value, b.value), nil
}
