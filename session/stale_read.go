package session

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tso"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Reading the past, as TiDB's tidb_snapshot does: after
//
//	SET @@tidb_snapshot = '2026-11-27 02:10:00'   -- in the session's time zone
//	SET @@tidb_snapshot = 464508312377786368      -- a timestamp (TSO), e.g. a BackupTS
//
// every statement of the session reads the data, and the schema, as they
// were at that moment, until it is set to ''. Statements that write fail
// (TiDB's 1105 "can not execute write statement when 'tidb_snapshot' is
// set"). A moment older than the GC safe point is refused with 9006: its
// versions may be gone. The data of a table dropped or truncated since is
// gone at once (the DDL deletes its range), so a past read of it is empty.

// pastRead is the moment a session reads at, and its schema then.
type pastRead struct {
	ts uint64
	is *catalog.InfoSchema
}

var errWriteInPast = errno.New(errno.ErUnknown, "can not execute write statement when 'tidb_snapshot' is set")

func init() {
	// Here, not in the table: the check reads the time zone, a variable
	// of the table.
	def := sysVars["tidb_snapshot"]
	sysVars["tidb_snapshot"] = def.checked(checkSnapshot)
}

// checkSnapshot is tidb_snapshot's check: it parses the value, loads the
// schema of that moment and makes the session read there (” ends it).
func checkSnapshot(s *Session, v types.Datum, _ bool) (types.Datum, error) {
	text := strings.TrimSpace(string(types.ToText(v)))
	if v.IsNull() || text == "" {
		s.past = nil
		return types.NewString(""), nil
	}
	ts, err := parseSnapshotTS(text, s.evalCtx(context.Background(), nil).Location())
	if err != nil {
		return v, errno.New(errno.ErWrongValueForVar, "Variable 'tidb_snapshot' can't be set to the value of '%s'", text)
	}
	if err := s.d.checkSafePoint(ts); err != nil {
		return v, err
	}
	is, err := catalog.SchemaAt(s.d.store, ts)
	if err != nil {
		return v, err
	}
	s.past = &pastRead{ts: ts, is: is}
	return types.NewString(text), nil
}

// parseSnapshotTS reads a timestamp (TSO: 15 digits or more) or a datetime
// in loc.
func parseSnapshotTS(text string, loc *time.Location) (uint64, error) {
	if len(text) >= 15 && isDigits(text) {
		return strconv.ParseUint(text, 10, 64)
	}
	t, err := types.ParseTime(text)
	if err != nil {
		return 0, err
	}
	return tso.ComposeTS(t.GoTime(loc).UnixMilli(), 0), nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// checkSafePoint fails with 9006 if GC may have removed versions at ts:
// if ts is below the safe point of the embedded store's last GC pass, or
// the cluster's (PD's).
func (d *Driver) checkSafePoint(ts uint64) error {
	var safe uint64
	switch st := d.store.(type) {
	case interface{ LastGCSafePoint() uint64 }:
		safe = st.LastGCSafePoint()
	case interface {
		GCSafePoint(context.Context) (uint64, error)
	}:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if safe, err = st.GCSafePoint(ctx); err != nil {
			return err
		}
	}
	if ts < safe {
		return &kv.GCTooEarlyError{StartTS: time.UnixMilli(tso.PhysicalMs(ts)), SafePoint: time.UnixMilli(tso.PhysicalMs(safe))}
	}
	return nil
}

// writesInPast says whether st writes, which a session reading the past
// may not: TiDB's list (INSERT, REPLACE, UPDATE, DELETE, LOAD DATA, DDL)
// and SELECT ... FOR UPDATE / FOR SHARE.
func writesInPast(st ast.StmtNode) bool {
	switch x := st.(type) {
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt, *ast.LoadDataStmt, ast.DDLNode:
		return true
	case *ast.SelectStmt:
		return x.LockInfo != nil && x.LockInfo.LockType != ast.SelectLockNone
	}
	return false
}

// pinPast is pinStmt for a session reading the past: the statement runs
// under the schema of that moment and reads in a transaction started
// then, which holds GC back until release.
func (s *Session) pinPast() (*catalog.InfoSchema, func(), error) {
	txn, err := s.d.store.Begin(kv.TxnOptions{Mode: kv.Optimistic, StartTS: s.past.ts})
	if err != nil {
		return nil, nil, mapError(err, nil)
	}
	// Checked once the transaction holds GC back: a pass that began
	// before has recorded its safe point by now.
	if err := s.d.checkSafePoint(s.past.ts); err != nil {
		txn.Rollback()
		return nil, nil, mapError(err, nil)
	}
	unread := s.d.readingAt(s.past.ts)
	s.pastTxn = txn
	return s.past.is, func() {
		if s.pastTxn == txn {
			s.pastTxn = nil
		}
		txn.Rollback()
		unread()
	}, nil
}
