package local

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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
//
// next is safe for concurrent use and takes no lock unless the mark must
// move: the last timestamp issued is one atomic word that each call moves
// forward by compare-and-swap, and limit is raised only after the file
// holding it is synced, so a timestamp checked against it is below a mark
// on disk.
type oracle struct {
	path string
	now  func() time.Time
	last atomic.Uint64 // the last timestamp issued
	// limit is the persisted high-water mark, in ms; it only grows.
	limit   atomic.Int64
	saveMu  sync.Mutex  // serializes raise
	closed  bool        // under saveMu: no more raises (close)
	raising atomic.Bool // a raiseAhead goroutine is running
}

// errOracleClosed: a timestamp was asked of a closed store's oracle past
// its high-water mark.
var errOracleClosed = errors.New("local: the timestamp oracle is closed")

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
		limit := int64(binary.BigEndian.Uint64(b))
		o.limit.Store(limit)
		o.last.Store(tso.ComposeTS(limit, 0))
	}
	return o, nil
}

// next returns a new timestamp: the wall clock's ms with logical 0 if the
// clock is past the last timestamp's ms, else the last timestamp + 1 (a
// logical counter that overflows carries into the ms).
//
// A timestamp within half a window of the mark starts moving the mark in
// the background (raiseAhead), so that callers wait for the file only if
// they outrun it.
func (o *oracle) next() (uint64, error) {
	for {
		last := o.last.Load()
		ts := last + 1
		if now := o.now().UnixMilli(); now > tso.PhysicalMs(last) {
			ts = tso.ComposeTS(now, 0)
		}
		ms, limit := tso.PhysicalMs(ts), o.limit.Load()
		if ms >= limit {
			if err := o.raise(ms); err != nil {
				return 0, err
			}
			continue
		}
		if o.last.CompareAndSwap(last, ts) {
			if ms >= limit-oracleWindow/2 {
				o.raiseAhead(ms + oracleWindow/2)
			}
			return ts, nil
		}
	}
}

// lastIssued returns the last timestamp next returned (or the start of
// the oracle's range): every later call of next returns more.
func (o *oracle) lastIssued() uint64 { return o.last.Load() }

// raise moves the high-water mark past ms, unless another call already
// did, to ms + oracleWindow.
func (o *oracle) raise(ms int64) error {
	o.saveMu.Lock()
	defer o.saveMu.Unlock()
	if o.closed {
		return errOracleClosed
	}
	if ms < o.limit.Load() {
		return nil
	}
	return o.save(ms + oracleWindow)
}

// raiseAhead raises the mark past ms in a goroutine, unless one is already
// at it. An error is left to the next raise that a caller waits for.
func (o *oracle) raiseAhead(ms int64) {
	if !o.raising.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer o.raising.Store(false)
		o.raise(ms)
	}()
}

// close waits for a raise in progress and makes later ones fail, so that
// the file is not written after the store has released its directory.
func (o *oracle) close() {
	o.saveMu.Lock()
	o.closed = true
	o.saveMu.Unlock()
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
	o.limit.Store(limit)
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
