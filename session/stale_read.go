package session

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
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
// versions may be gone.
//
// SELECT ... FROM t AS OF TIMESTAMP expr reads the same way for one
// statement (TiDB's stale read); its errors are TiDB's 8135 "invalid as of
// timestamp: ...". The data of a table dropped or truncated since is
// gone at once (the DDL deletes its range), so a past read of it is empty.

// pastRead is the moment a session reads at, and its schema then.
type pastRead struct {
	ts uint64
	is *catalog.InfoSchema
}

func errWriteInPast() error {
	return errno.New(errno.ErUnknown, "can not execute write statement when 'tidb_snapshot' is set")
}

func init() {
	// Here, not in the table: the check reads the time zone, a variable
	// of the table.
	def := sysVars["tidb_snapshot"]
	sysVars["tidb_snapshot"] = def.checked(checkSnapshot)
}

// checkSnapshot is tidb_snapshot's check: it parses the value, loads the
// schema of that moment and makes the session read there; the empty
// string ends it.
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
// may not: TiDB's list (INSERT, REPLACE, UPDATE, DELETE, LOAD DATA, DDL),
// SELECT ... FOR UPDATE / FOR SHARE, and ANALYZE (which writes statistics
// of the present).
func writesInPast(st ast.StmtNode) bool {
	switch x := st.(type) {
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt, *ast.LoadDataStmt, *ast.ImportIntoStmt, ast.DDLNode, *ast.AnalyzeTableStmt:
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

// errAsOf is TiDB's ErrAsOf.
func errAsOf(format string, args ...any) error {
	return errno.New(errAsOfCode, "invalid as of timestamp: "+format, args...)
}

const errAsOfCode = 8135

// asOfClauses collects the AS OF clauses of a statement's tables.
type asOfClauses []*ast.AsOfClause

func (c *asOfClauses) Enter(n ast.Node) (ast.Node, bool) {
	if t, ok := n.(*ast.TableName); ok && t.AsOf != nil {
		*c = append(*c, t.AsOf)
	}
	return n, false
}

func (c *asOfClauses) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// readAsOf makes a statement whose tables say AS OF TIMESTAMP read at
// that moment, until restore. Every AS OF of the statement must name the
// same moment, and the statement must only read, outside a transaction.
func (s *Session) readAsOf(ctx context.Context, st ast.StmtNode, params []types.Datum) (restore func(), err error) {
	var clauses asOfClauses
	st.Accept(&clauses)
	if len(clauses) == 0 {
		return nil, nil
	}
	switch {
	case writesInPast(st):
		return nil, errAsOf("as of timestamp cannot be used in a statement that writes")
	case s.past != nil:
		return nil, errAsOf("can't use select as of while tidb_snapshot is set")
	case s.txn != nil || s.deferred || !s.autocommit():
		return nil, errAsOf("as of timestamp can't be set in transaction")
	}
	var ts uint64
	for i, c := range clauses {
		t, err := s.asOfTS(ctx, c, params)
		if err != nil {
			return nil, err
		}
		if i > 0 && t != ts {
			return nil, errAsOf("can not set different time in the as of")
		}
		ts = t
	}
	now, err := s.d.store.CurrentTS()
	if err != nil {
		return nil, mapError(err, nil)
	}
	if ts > now {
		return nil, errAsOf("cannot set read timestamp to a future time")
	}
	if err := s.d.checkSafePoint(ts); err != nil {
		return nil, err
	}
	is, err := catalog.SchemaAt(s.d.store, ts)
	if err != nil {
		return nil, mapError(err, nil)
	}
	s.past = &pastRead{ts: ts, is: is}
	return func() { s.past = nil }, nil
}

// asOfTS evaluates an AS OF TIMESTAMP expression: a datetime (in the
// session's time zone) or a string that is one.
func (s *Session) asOfTS(ctx context.Context, c *ast.AsOfClause, params []types.Datum) (uint64, error) {
	b := &expression.Builder{Clause: "as of timestamp"}
	e, err := b.Build(c.TsExpr)
	if err != nil {
		return 0, err
	}
	ec := s.evalCtx(ctx, params)
	v, err := e.Eval(ec, nil)
	if err != nil {
		return 0, err
	}
	if v.IsNull() || (v.Kind() != types.KindString && v.Kind() != types.KindTime) {
		return 0, errAsOf("as of timestamp must be a datetime")
	}
	t, err := types.ParseTime(string(types.ToText(v)))
	if err != nil {
		return 0, errAsOf("cannot parse as of timestamp expression as datetime: %s", types.ToText(v))
	}
	return tso.ComposeTS(t.GoTime(ec.Location()).UnixMilli(), 0), nil
}
