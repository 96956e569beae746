// Package brie backs databases up to files and restores them: the
// BACKUP and RESTORE statements (TiDB's BRIE syntax) run on it.
//
// A backup is a directory:
//
//	backupmeta.json    the manifest: format version, backup ts, and for every
//	                   database its schema, and for every table its schema,
//	                   auto-increment counter and data files
//	t{id}_{n}.kv       the keys of table id (rows and index entries), as
//	                   stored at the backup ts: file n of the table
//
// A data file is a header and a run of entries, keys ascending:
//
//	"BSLTKV1\n"  { uvarint len(key)  key  uvarint len(value)  value }*
//
// The manifest records each file's sha256, size and key count. Restore
// checks every file against them before it writes anything, so a corrupt
// or partial backup is refused whole, never half restored.
package brie

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/basalt-db/basalt/catalog"
)

// formatVersion is the manifest's format; Restore refuses others.
const formatVersion = 1

const (
	manifestName = "backupmeta.json"
	fileMagic    = "BSLTKV1\n"
	// maxFileSize is where a table's data moves on to its next file.
	maxFileSize = 64 << 20
)

// Manifest describes a backup.
type Manifest struct {
	Version int `json:"version"`
	// BackupTS is the timestamp every table was read at.
	BackupTS  uint64     `json:"backup_ts"`
	Databases []Database `json:"databases"`
}

// Database is one database of a backup.
type Database struct {
	Info   *catalog.DBInfo `json:"info"`
	Tables []Table         `json:"tables"`
}

// Table is one table (or view) of a backup. Its keys carry Info.ID, which
// Restore rewrites to the new table's id.
type Table struct {
	Info *catalog.TableInfo `json:"info"`
	// AutoID is the end of the table's last auto-increment batch.
	AutoID int64  `json:"auto_id"`
	Files  []File `json:"files"`
}

// File is one data file.
type File struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Keys   int64  `json:"keys"`
}

// ErrCorrupt reports a backup that does not match its manifest.
var ErrCorrupt = errors.New("backup is corrupt or incomplete")

func readManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: no %s in %s", ErrCorrupt, manifestName, dir)
		}
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, manifestName, err)
	}
	if m.Version != formatVersion {
		return nil, fmt.Errorf("backup format version %d is not supported (want %d)", m.Version, formatVersion)
	}
	return &m, nil
}

func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	// The manifest is written last and renamed into place: a directory
	// with a manifest holds a whole backup.
	tmp := filepath.Join(dir, manifestName+".tmp")
	if err := writeSynced(tmp, b); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, manifestName))
}

func writeSynced(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fileWriter writes one data file, hashing and counting as it goes.
type fileWriter struct {
	f    *os.File
	w    *bufio.Writer
	h    hash
	name string
	size int64
	keys int64
}

type hash interface {
	io.Writer
	Sum([]byte) []byte
}

func createFile(dir, name string) (*fileWriter, error) {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	fw := &fileWriter{f: f, w: bufio.NewWriterSize(f, 1<<20), h: sha256.New(), name: name}
	if err := fw.write([]byte(fileMagic)); err != nil {
		f.Close()
		return nil, err
	}
	return fw, nil
}

func (fw *fileWriter) write(b []byte) error {
	fw.h.Write(b)
	fw.size += int64(len(b))
	_, err := fw.w.Write(b)
	return err
}

func (fw *fileWriter) add(key, value []byte) error {
	var n [binary.MaxVarintLen64]byte
	for _, b := range [][]byte{key, value} {
		if err := fw.write(n[:binary.PutUvarint(n[:], uint64(len(b)))]); err != nil {
			return err
		}
		if err := fw.write(b); err != nil {
			return err
		}
	}
	fw.keys++
	return nil
}

// close flushes and syncs the file and describes it.
func (fw *fileWriter) close() (File, error) {
	err := fw.w.Flush()
	if err == nil {
		err = fw.f.Sync()
	}
	if cerr := fw.f.Close(); err == nil {
		err = cerr
	}
	return File{Name: fw.name, SHA256: hex.EncodeToString(fw.h.Sum(nil)), Size: fw.size, Keys: fw.keys}, err
}

// readFile reads a data file whole and checks it against its description
// (hash, size, key count, every key inside prefix), calling fn, if not
// nil, for each entry once the file has checked out.
func readFile(dir string, want File, prefix []byte, fn func(key, value []byte) error) error {
	b, err := os.ReadFile(filepath.Join(dir, want.Name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: file %s is missing", ErrCorrupt, want.Name)
		}
		return err
	}
	sum := sha256.Sum256(b)
	if int64(len(b)) != want.Size || hex.EncodeToString(sum[:]) != want.SHA256 {
		return fmt.Errorf("%w: file %s: checksum mismatch (sha256 %x, %d bytes; the manifest says %s, %d bytes)",
			ErrCorrupt, want.Name, sum, len(b), want.SHA256, want.Size)
	}
	entries, err := decodeEntries(b, prefix)
	if err != nil {
		return fmt.Errorf("%w: file %s: %v", ErrCorrupt, want.Name, err)
	}
	if int64(len(entries)) != want.Keys {
		return fmt.Errorf("%w: file %s holds %d keys, the manifest says %d", ErrCorrupt, want.Name, len(entries), want.Keys)
	}
	if fn == nil {
		return nil
	}
	for _, e := range entries {
		if err := fn(e[0], e[1]); err != nil {
			return err
		}
	}
	return nil
}

func decodeEntries(b []byte, prefix []byte) ([][2][]byte, error) {
	if len(b) < len(fileMagic) || string(b[:len(fileMagic)]) != fileMagic {
		return nil, errors.New("not a data file")
	}
	b = b[len(fileMagic):]
	var out [][2][]byte
	for len(b) > 0 {
		var e [2][]byte
		for i := range e {
			n, w := binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < n {
				return nil, errors.New("truncated entry")
			}
			e[i], b = b[w:w+int(n)], b[w+int(n):]
		}
		if len(e[0]) < len(prefix) || string(e[0][:len(prefix)]) != string(prefix) {
			return nil, fmt.Errorf("key %x is not the table's", e[0])
		}
		out = append(out, e)
	}
	return out, nil
}
