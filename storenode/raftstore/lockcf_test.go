package raftstore

import (
	"errors"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// runLockCF runs the command for the lock column family's emptiness
// (lockcf.go, testdata/lockcf):
//
//	lock-cf store=S    store S looks for a lock in Pebble (as its
//	                   background check does) and says whether its
//	                   reads may skip looking: empty or not empty
func (c *raftCluster) runLockCF(t *testing.T, td *datadriven.TestData) (string, bool) {
	if td.Cmd != "lock-cf" {
		return "", false
	}
	var id uint64
	td.ScanArgs(t, "store", &id)
	s := c.stores[id].rs
	s.lockCF.check(func() (bool, error) { return s.lockCFFound() })
	if s.lockCF.empty() {
		return "empty", true
	}
	return "not empty", true
}

// TestLockCFCheck: a check records an empty lock column family only if
// no write that may add a lock ran during its scan or was in progress
// when it began.
func TestLockCFCheck(t *testing.T) {
	none := func() (bool, error) { return false, nil }
	l := newLockCF()
	if l.empty() {
		t.Fatal("empty before any check")
	}
	l.check(none)
	if !l.empty() {
		t.Fatal("not empty after a check that found nothing")
	}
	l.begin()
	if l.empty() {
		t.Fatal("empty while a lock write runs")
	}
	l.check(none) // the write runs: it may not be in Pebble yet
	if l.empty() {
		t.Fatal("a check during a write recorded empty")
	}
	l.end()
	l.check(func() (bool, error) { return true, nil })
	if l.empty() {
		t.Fatal("empty after a check that found a lock")
	}
	l.check(func() (bool, error) { l.begin(); l.end(); return false, nil }) // a write began during the scan
	if l.empty() {
		t.Fatal("a check that a write overlapped recorded empty")
	}
	l.check(func() (bool, error) { return false, errors.New("disk") })
	if l.empty() {
		t.Fatal("a failed check recorded empty")
	}
	l.check(none)
	if !l.empty() {
		t.Fatal("not empty after the locks are gone")
	}
}
