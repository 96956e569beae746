package local

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/basalt-db/basalt/tso"
)

// oracle hands out timestamps (see package tso), strictly increasing, and
// never reissued after a restart.
//
// It keeps that promise across restarts by persisting a high-water mark
// ahead of use: it never issues a timestamp whose physical part reaches the
// mark saved in its file, and it moves the mark forward (synced to disk)
// before getting there. After a restart, issuing starts at the saved mark,
// above everything issued before, even if the wall clock went backwards.
type oracle struct {
	mu       sync.Mutex
	path     string
	physical int64 // ms of the last timestamp issued
	logical  int64
	limit    int64 // persisted high-water mark, in ms
	now      func() time.Time
}

const (
	oracleFile   = "tso"
	oracleWindow = 3000 // ms saved ahead of use
)

// openOracle loads the high-water mark from dir, or starts from zero if the
// file does not exist yet.
func openOracle(dir string) (*oracle, error) {
	o := &oracle{path: filepath.Join(dir, oracleFile), now: time.Now}
	b, err := os.ReadFile(o.path)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return nil, err
	case len(b) != 8:
		return nil, fmt.Errorf("timestamp oracle file %s is corrupt (%d bytes, want 8)", o.path, len(b))
	default:
		o.limit = int64(binary.BigEndian.Uint64(b))
		o.physical = o.limit
	}
	return o, nil
}

// next returns a new timestamp.
func (o *oracle) next() (uint64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now().UnixMilli()
	if now > o.physical {
		o.physical, o.logical = now, 0
	} else {
		o.logical++
		if o.logical >= tso.MaxLogical {
			o.physical, o.logical = o.physical+1, 0
		}
	}
	if o.physical >= o.limit {
		if err := o.save(o.physical + oracleWindow); err != nil {
			return 0, err
		}
	}
	return tso.ComposeTS(o.physical, o.logical), nil
}

// save durably records limit as the new high-water mark.
func (o *oracle) save(limit int64) error {
	tmp := o.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(limit))
	if _, err := f.Write(b[:]); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, o.path); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(o.path)); err != nil {
		return err
	}
	o.limit = limit
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
