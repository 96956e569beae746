package raftstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/store/mvcc"

	"github.com/cockroachdb/datadriven"
)

// runLockCF runs the commands for the lock column family's emptiness
// (lockcf.go, testdata/lockcf):
//
//	lock-cf store=S    store S looks for a lock in Pebble (as its
//	                   background check does) and says whether its
//	                   reads may skip looking: empty or not empty
//	lock-deletes store=S
//	                   the lock column family's deletes store S applied
//	                   into Pebble, and those it skipped, since it started
//	lock-iter region=R whether an iterator of the lock column family on
//	                   R's leader reads Pebble or skips it
//	scan region=R ts=TS
//	                   the leader's scan of the whole region at TS, as
//	                   the service's KvScan makes it: k=v per line
func (c *raftCluster) runLockCF(t *testing.T, td *datadriven.TestData) (string, bool) {
	arg := func(key string) uint64 {
		var v uint64
		td.ScanArgs(t, key, &v)
		return v
	}
	switch td.Cmd {
	case "lock-cf":
		s := c.stores[arg("store")].rs
		s.lockCF.check(func() (bool, error) { return s.lockCFFound() })
		if s.lockCF.empty() {
			return "empty", true
		}
		return "not empty", true
	case "lock-deletes":
		s := c.stores[arg("store")].rs
		return fmt.Sprintf("applied %d skipped %d", s.lockDeletes.Load(), s.lockDeletesSkipped.Load()), true
	case "lock-iter":
		it, err := c.readyLeader(t, arg("region")).MVCC().Engine().NewIter(mvcc.CFLock, nil, nil)
		if err != nil {
			return "error: " + err.Error(), true
		}
		defer it.Close()
		if _, ok := it.(noLocks); ok {
			return "skips Pebble", true
		}
		return "reads Pebble", true
	case "scan":
		sc, err := c.readyLeader(t, arg("region")).MVCC().ScanWith(context.Background(), nil, nil, arg("ts"), false, nil)
		if err != nil {
			return "error: " + err.Error(), true
		}
		defer sc.Close()
		var out []string
		for ; sc.Valid(); sc.Next() {
			out = append(out, fmt.Sprintf("%s=%s", sc.Key(), sc.Value()))
		}
		if err := sc.Err(); err != nil {
			out = append(out, "error: "+err.Error())
		}
		return strings.Join(out, "\n"), true
	}
	return "", false
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
