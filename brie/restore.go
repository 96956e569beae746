package brie

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
)

// ErrTablesExist reports tables to restore that the server already has,
// in TiDB's words.
var ErrTablesExist = errors.New("[BR:Restore:ErrTablesAlreadyExisted]tables already existed in restored cluster")

// Restore writes back the databases named in dbs (every database of the
// backup if dbs is nil) from the backup in dir, into a server that has
// none of their tables. A database the server has already (an empty
// test, say) receives the tables, as TiDB's restore does.
//
// It goes in three steps, and writes nothing until the first is done:
//  1. check the whole backup (every file's checksum, size and key count)
//     and that no table to restore exists;
//  2. reserve new ids and write the data under them, keys rewritten from
//     the old table ids to the new: no schema names them yet, so no
//     statement sees the data half written;
//  3. publish the schemas in one schema change. If a table or database
//     appeared meanwhile, the data written is deleted and Restore fails.
//
// Indexes come back with the rows (their keys are in the backup);
// statistics do not (run ANALYZE TABLE).
func Restore(ctx context.Context, store kv.Storage, cat *catalog.Catalog, dbs []string, dir string, progress Progress) (Summary, error) {
	man, err := readManifest(dir)
	if err != nil {
		return Summary{}, err
	}
	all := make([]*catalog.DBInfo, len(man.Databases))
	byID := map[int64]*Database{}
	for i := range man.Databases {
		all[i] = man.Databases[i].Info
		byID[all[i].ID] = &man.Databases[i]
	}
	chosen, err := chooseDBs(all, dbs)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{BackupTS: man.BackupTS}
	var total int64 // keys to restore
	for _, db := range chosen {
		for _, t := range byID[db.ID].Tables {
			for _, f := range t.Files {
				if err := readFile(dir, f, tablecodec.TablePrefix(t.Info.ID), nil); err != nil {
					return Summary{}, err
				}
				sum.Size += f.Size
				total += f.Keys
			}
		}
	}
	if err := checkAbsent(cat.InfoSchema(), man, chosen); err != nil {
		return Summary{}, err
	}

	// Step 2: ids, then data.
	n := 0
	for _, db := range chosen {
		n += 1 + len(byID[db.ID].Tables)
	}
	var first int64
	err = cat.RunDDL(ctx, func(m *catalog.Meta, _ *catalog.InfoSchema) error {
		first, err = m.NewIDs(n)
		return err
	})
	if err != nil {
		return Summary{}, err
	}
	type restored struct {
		db     *catalog.DBInfo
		reused bool // db is the server's own
		tables []*catalog.TableInfo
		autos  []int64
	}
	var plan []restored
	next := first
	is := cat.InfoSchema()
	for _, db := range chosen {
		r := restored{db: cloneDB(db, next)}
		if have := is.DB(db.Name); have != nil {
			r.db, r.reused = have, true
		}
		next++
		for _, t := range byID[db.ID].Tables {
			nt := t.Info.Clone()
			nt.ID, nt.DBID = next, r.db.ID
			next++
			r.tables = append(r.tables, nt)
			r.autos = append(r.autos, t.AutoID)
		}
		plan = append(plan, r)
	}
	var written []int64 // new table ids whose data may be (partly) written
	w := &batchWriter{ctx: ctx, store: store, progress: func(done int64) { progress.report(done, total) }}
	undo := func(cause error) error {
		if w.txn != nil {
			w.txn.Rollback()
		}
		return errors.Join(cause, deleteTables(ctx, store, written))
	}
	for i, db := range chosen {
		for j, t := range byID[db.ID].Tables {
			newID := plan[i].tables[j].ID
			written = append(written, newID)
			newPrefix := tablecodec.TablePrefix(newID)
			oldLen := len(tablecodec.TablePrefix(t.Info.ID))
			for _, f := range t.Files {
				err := readFile(dir, f, tablecodec.TablePrefix(t.Info.ID), func(key, value []byte) error {
					k := append(append(make([]byte, 0, len(newPrefix)+len(key)-oldLen), newPrefix...), key[oldLen:]...)
					return w.set(k, value)
				})
				if err != nil {
					return Summary{}, undo(err)
				}
			}
		}
	}
	if err := w.flush(); err != nil {
		return Summary{}, undo(err)
	}
	sum.Keys = w.keys

	// Step 3: the schemas.
	err = cat.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		if err := checkAbsent(is, man, chosen); err != nil {
			return err
		}
		for _, r := range plan {
			have := is.DB(r.db.Name)
			if r.reused != (have != nil) || (have != nil && have.ID != r.db.ID) {
				return fmt.Errorf("database %s was created or dropped during the restore", r.db.Name)
			}
			if !r.reused {
				if err := m.PutDB(r.db); err != nil {
					return err
				}
				is.AddDB(r.db)
			}
			for k, t := range r.tables {
				if err := m.PutTable(t); err != nil {
					return err
				}
				if r.autos[k] != 0 {
					if err := m.SetAutoID(t.ID, r.autos[k]); err != nil {
						return err
					}
				}
				is.PutTable(r.db, t)
			}
		}
		return nil
	})
	if err != nil {
		return Summary{}, undo(err)
	}
	return sum, nil
}

func cloneDB(db *catalog.DBInfo, id int64) *catalog.DBInfo {
	c := *db
	c.ID = id
	return &c
}

// checkAbsent fails with TiDB's error if the server has a table (or
// view) of the databases to restore.
func checkAbsent(is *catalog.InfoSchema, m *Manifest, dbs []*catalog.DBInfo) error {
	var have []string
	for _, db := range dbs {
		for _, d := range m.Databases {
			if d.Info.ID != db.ID {
				continue
			}
			for _, t := range d.Tables {
				if is.Table(db.Name, t.Info.Name) != nil {
					have = append(have, db.Name+"."+t.Info.Name)
				}
			}
		}
	}
	if len(have) > 0 {
		return fmt.Errorf("table already exists: %s: %w", strings.Join(have, " "), ErrTablesExist)
	}
	return nil
}

// deleteTables removes what a failed restore wrote under the new table
// ids, which no schema names.
func deleteTables(ctx context.Context, store kv.Storage, ids []int64) error {
	var errs []error
	for _, id := range ids {
		start, end := tablecodec.TablePrefix(id), tablecodec.TableEnd(id)
		if rd, ok := store.(kv.RangeDeleter); ok {
			errs = append(errs, rd.DeleteRange(ctx, start, end))
			continue
		}
		errs = append(errs, deleteByTxn(ctx, store, start, end))
	}
	return errors.Join(errs...)
}

func deleteByTxn(ctx context.Context, store kv.Storage, start, end []byte) error {
	txn, err := store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return err
	}
	defer txn.Rollback()
	it, err := txn.Iter(start, end)
	if err != nil {
		return err
	}
	var keys [][]byte
	for ; err == nil && it.Valid(); err = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	it.Close()
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return txn.Commit(ctx)
}

// batchWriter writes keys in transactions of bounded size.
type batchWriter struct {
	ctx   context.Context
	store kv.Storage
	txn   kv.Txn
	keys  int64 // written, in committed batches and the open one
	// progress is told the keys committed after every batch.
	progress func(done int64)
}

const (
	batchKeys  = 4096
	batchBytes = 4 << 20
)

func (w *batchWriter) set(key, value []byte) error {
	if w.txn == nil {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		txn, err := w.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
		if err != nil {
			return err
		}
		w.txn = txn
	}
	if err := w.txn.Set(key, value); err != nil {
		return err
	}
	w.keys++
	if w.txn.Len() >= batchKeys || w.txn.Size() >= batchBytes {
		return w.flush()
	}
	return nil
}

func (w *batchWriter) flush() error {
	if w.txn == nil {
		return nil
	}
	txn := w.txn
	w.txn = nil
	if err := txn.Commit(w.ctx); err != nil {
		txn.Rollback()
		return err
	}
	w.progress(w.keys)
	return nil
}
