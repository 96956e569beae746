package brie

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
)

// Summary is what a finished backup or restore reports.
type Summary struct {
	// Size is the bytes of the data files written or read.
	Size int64
	// BackupTS is the timestamp the backup read at.
	BackupTS uint64
	// Keys is the number of keys written or restored.
	Keys int64
}

// systemDBs are never backed up by BACKUP DATABASE *, as TiDB leaves its
// system schemas out of a full backup.
var systemDBs = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true,
	"sys": true, "metrics_schema": true}

// LocalPath returns the directory a storage URL names. Only local:// with
// an absolute path is supported.
func LocalPath(storage string) (string, error) {
	u, err := url.Parse(storage)
	if err != nil {
		return "", fmt.Errorf("invalid storage URL %q: %v", storage, err)
	}
	if u.Scheme != "local" {
		if u.Scheme == "" {
			return "", fmt.Errorf("storage URL %q has no scheme: use local:///absolute/path", storage)
		}
		return "", fmt.Errorf("storage %q is not supported: only local:///absolute/path is", u.Scheme+"://")
	}
	if u.Host != "" || !filepath.IsAbs(u.Path) {
		return "", fmt.Errorf("storage URL %q must name an absolute path: local:///absolute/path", storage)
	}
	return filepath.Clean(u.Path), nil
}

// Progress, if not nil, is told how far a backup or restore has come:
// done of total units (tables backed up, keys restored).
type Progress func(done, total int64)

func (p Progress) report(done, total int64) {
	if p != nil {
		p(done, total)
	}
}

// Backup writes the databases named in dbs (every user database if dbs
// is nil) as they were at one timestamp to dir, which must not hold a
// backup already. The server keeps serving meanwhile: Backup only reads,
// at a snapshot.
func Backup(ctx context.Context, store kv.Storage, dbs []string, dir string, progress Progress) (Summary, error) {
	if _, err := os.Stat(filepath.Join(dir, manifestName)); err == nil {
		return Summary{}, fmt.Errorf("%s already holds a backup (%s): choose an empty directory", dir, manifestName)
	}
	ts, err := store.CurrentTS()
	if err != nil {
		return Summary{}, err
	}
	// The schema is read at the backup ts too, in a transaction that only
	// reads (catalog.Meta reads through a Txn). Kept open to the end, it
	// also holds GC back from the versions the backup reads (the embedded
	// store's safe point stays below every open transaction).
	txn, err := store.Begin(kv.TxnOptions{Mode: kv.Optimistic, StartTS: ts})
	if err != nil {
		return Summary{}, err
	}
	defer txn.Rollback()
	meta := catalog.NewMeta(txn)
	all, err := meta.DBs()
	if err != nil {
		return Summary{}, err
	}
	chosen, err := chooseDBs(all, dbs)
	if err != nil {
		return Summary{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Summary{}, err
	}
	m := &Manifest{Version: formatVersion, BackupTS: ts}
	snap := store.Snapshot(ts)
	var sum Summary
	sum.BackupTS = ts
	tablesOf := make([][]*catalog.TableInfo, len(chosen))
	var total, done int64
	for i, db := range chosen {
		tables, err := meta.Tables(db.ID)
		if err != nil {
			return Summary{}, err
		}
		sort.Slice(tables, func(i, j int) bool { return tables[i].ID < tables[j].ID })
		tablesOf[i] = tables
		total += int64(len(tables))
	}
	progress.report(0, total)
	for i, db := range chosen {
		d := Database{Info: db}
		for _, t := range tablesOf[i] {
			if err := checkPublic(db, t); err != nil {
				return Summary{}, err
			}
			auto, err := meta.AutoID(t.ID)
			if err != nil {
				return Summary{}, err
			}
			bt := Table{Info: t, AutoID: auto}
			if t.View == nil {
				if bt.Files, err = backupTable(ctx, snap, t.ID, dir); err != nil {
					return Summary{}, fmt.Errorf("table %s.%s: %w", db.Name, t.Name, err)
				}
			}
			for _, f := range bt.Files {
				sum.Size += f.Size
				sum.Keys += f.Keys
			}
			d.Tables = append(d.Tables, bt)
			done++
			progress.report(done, total)
		}
		m.Databases = append(m.Databases, d)
	}
	return sum, writeManifest(dir, m)
}

// chooseDBs picks the databases a statement names from those stored.
func chooseDBs(all []*catalog.DBInfo, names []string) ([]*catalog.DBInfo, error) {
	byName := make(map[string]*catalog.DBInfo, len(all))
	for _, db := range all {
		byName[strings.ToLower(db.Name)] = db
	}
	var out []*catalog.DBInfo
	if names == nil {
		for _, db := range all {
			if !systemDBs[strings.ToLower(db.Name)] {
				out = append(out, db)
			}
		}
	} else {
		seen := map[string]bool{}
		for _, n := range names {
			db, ok := byName[strings.ToLower(n)]
			if !ok {
				return nil, fmt.Errorf("%w: %s", ErrUnknownDB, n)
			}
			if !seen[strings.ToLower(n)] {
				seen[strings.ToLower(n)] = true
				out = append(out, db)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ErrUnknownDB reports a database that a statement names and that does
// not exist (in the store for BACKUP, in the backup for RESTORE).
var ErrUnknownDB = errors.New("unknown database")

// checkPublic refuses a table in the middle of a schema change: its
// half-built index or hidden columns would come back with no job to finish
// them.
func checkPublic(db *catalog.DBInfo, t *catalog.TableInfo) error {
	busy := len(t.Hidden) > 0
	for _, c := range t.Columns {
		busy = busy || c.State != catalog.StatePublic
	}
	for _, ix := range t.Indexes {
		busy = busy || ix.State != catalog.StatePublic
	}
	if busy {
		return fmt.Errorf("table %s.%s is in the middle of a schema change: back it up once the change is done", db.Name, t.Name)
	}
	return nil
}

// backupTable writes the keys of table id in snap to data files.
func backupTable(ctx context.Context, snap kv.Snapshot, id int64, dir string) ([]File, error) {
	it, err := snap.Iter(tablecodec.TablePrefix(id), tablecodec.TableEnd(id))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var files []File
	var fw *fileWriter
	finish := func() error {
		f, err := fw.close()
		fw = nil
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	}
	for ; it.Valid(); err = it.Next() {
		if err != nil {
			break
		}
		if fw == nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if fw, err = createFile(dir, fmt.Sprintf("t%d_%d.kv", id, len(files))); err != nil {
				return nil, err
			}
		}
		if err := fw.add(it.Key(), it.Value()); err != nil {
			fw.f.Close()
			return nil, err
		}
		if fw.size >= maxFileSize {
			if err := finish(); err != nil {
				return nil, err
			}
		}
	}
	if err != nil {
		if fw != nil {
			fw.f.Close()
		}
		return nil, err
	}
	if fw != nil {
		if err := finish(); err != nil {
			return nil, err
		}
	}
	return files, nil
}
