package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/metrics"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/privilege"
	"github.com/basalt-db/basalt/stmtsummary"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Session is one connection's SQL state. Its methods run on the
// connection's goroutine, one at a time.
type Session struct {
	d      *Driver
	info   ConnInfo
	db     string
	parser *parser.Parser
	// parserMode is the sql_mode the parser was last set to, parsed in
	// parserSQLMode.
	parserMode    string
	parserSQLMode mysql.SQLMode

	vars     map[string]types.Datum // session system variables set by SET
	userVars map[string]types.Datum
	binds    sessionBinds // the session's SQL plan bindings (binding.go)

	// txn is the open transaction, if any. explicit says BEGIN (or
	// autocommit=0) opened it, so it lasts past the statement.
	txn      kv.Txn
	explicit bool
	// deferred says BEGIN opened a transaction that has not started yet:
	// its kv transaction, and so its snapshot, starts with its first
	// statement that reads or writes data (startTxn), as InnoDB takes a
	// transaction's read view at its first consistent read, not at BEGIN.
	// deferredMode is the mode BEGIN chose.
	deferred     bool
	deferredMode kv.Mode
	// savepoints are the open transaction's SAVEPOINTs, oldest first
	// (savepoint.go).
	savepoints []savepoint
	txnIS      *catalog.InfoSchema // schema the transaction runs under (schema.go)
	txnBegan   time.Time           // when txn began: its duration in the metrics
	stmtType   metrics.StmtType    // the running statement's type, set by run: the metrics' sql_type
	stmtIS     *catalog.InfoSchema // schema the running statement is pinned to
	// forUpdateTS is the open pessimistic transaction's newest for-update
	// timestamp: its start timestamp, then the newest one a statement that
	// locks fetched (freshForUpdateTS). A point DML statement locks at it
	// instead of fetching one (point_dml.go).
	forUpdateTS uint64
	// past, while tidb_snapshot is set, is the moment the session reads
	// at; pastTxn is the running statement's reader there (stale_read.go).
	past         *pastRead
	pastTxn      kv.Txn
	lastInsertID uint64
	// tablesLocked is set from LOCK TABLES to UNLOCK TABLES (lock_tables.go).
	tablesLocked bool
	foundRows    uint64
	rowCount     int64
	warnings     []*errno.Error
	stmts        map[*Stmt]struct{}
	named        map[string]*Stmt // PREPARE's statements, by lower-case name (sqlprepare.go)
	// out is the ResultWriter of the running COM_QUERY (nil otherwise):
	// LOAD DATA LOCAL asks it for the client's file.
	out ResultWriter

	// subject is the account the session acts as; nil for the driver's
	// internal sessions, whose statements are not checked (privcheck.go).
	subject *privilege.Subject

	limits // max_execution_time, tidb_mem_quota_query, wait_timeout (limits.go)

	// hot caches the variables every statement reads (see hotVars).
	hot hotVars

	// obs is what the running statement's handler learned, for the slow
	// log and the statement summary (observe.go).
	obs     stmtObs
	counted countedRows // the running statement's rows, counted (observe.go)
	// digests are the digests of text statements by their shape
	// (observe.go, record).
	digests stmtsummary.DigestCache
	// textParses are the trees of text INSERTs by shape (text_parse.go);
	// oneStmt holds the statement taken from one.
	textParses textParses
	oneStmt    [1]ast.StmtNode
	// rtStats, while EXPLAIN ANALYZE runs a write, counts what its
	// operators do (explain_analyze.go); nil otherwise.
	rtStats *executor.RuntimeStats
}

// hotVars holds the values of the system variables that every statement
// reads, so that it does not look them up (a lowercasing, three map
// lookups and the driver's mutex) several times per statement. They are
// valid while valid is set (cleared when the session changes a variable)
// and global equals the driver's count of global changes.
type hotVars struct {
	valid      bool
	global     uint64
	autocommit bool
	sqlMode    expression.SQLMode
	// sqlModeText is sql_mode as set, for the parser (syncParserMode).
	sqlModeText string
	lockWait    time.Duration
	commit      kv.CommitOptions
	fkChecks    bool // foreign_key_checks

	// The plan cache (prepare.go): tidb_enable_prepared_plan_cache and
	// tidb_plan_cache_invalidation_on_fresh_stats.
	planCache        bool
	freshStatsReplan bool

	// The slow log and the statement summary (observe.go).
	slowLog           bool
	slowThreshold     time.Duration
	queryLogMaxLen    int64
	stmtSummary       bool
	stmtSummaryMaxSQL int64
}

// hotVar returns the cached hot variables, reading them again if a
// variable changed since.
func (s *Session) hotVar() *hotVars {
	h := &s.hot
	if g := s.d.globalsChanged.Load(); !h.valid || h.global != g {
		*h = hotVars{valid: true, global: g, autocommit: s.readAutocommit(), lockWait: s.readLockWait(), commit: s.readCommitOptions(), fkChecks: s.readFKChecks(),
			planCache: s.boolSysVar("tidb_enable_prepared_plan_cache"), freshStatsReplan: s.boolSysVar("tidb_plan_cache_invalidation_on_fresh_stats")}
		h.sqlMode, h.sqlModeText = s.readSQLMode()
		s.readObserveVars(h)
	}
	return h
}

func newSession(d *Driver, info ConnInfo) *Session {
	p := parser.New()
	s := &Session{d: d, info: info, db: info.DB, parser: p, vars: map[string]types.Datum{},
		userVars: map[string]types.Datum{}, stmts: map[*Stmt]struct{}{}}
	s.maxPacket = d.connMaxPacket()
	s.initLimits()
	return s
}

// autocommit reports the session's autocommit setting.
func (s *Session) autocommit() bool { return s.hotVar().autocommit }

// readCommitOptions reads the commit protocol's switches.
func (s *Session) readCommitOptions() kv.CommitOptions {
	return kv.CommitOptions{AsyncCommit: s.boolSysVar("tidb_enable_async_commit"), OnePC: s.boolSysVar("tidb_enable_1pc"),
		CausalConsistency: !s.boolSysVar("tidb_guarantee_linearizability")}
}

// boolSysVar reads a boolean system variable's session value.
func (s *Session) boolSysVar(name string) bool {
	v, err := s.sysVar(name, false)
	return err == nil && types.ToBool(v)
}

func (s *Session) readAutocommit() bool {
	v, err := s.sysVar("autocommit", false)
	return err != nil || types.ToBool(v)
}

// fkChecks reports whether foreign_key_checks is on: schema changes check
// foreign key definitions against their parents and DML enforces them.
func (s *Session) fkChecks() bool { return s.hotVar().fkChecks }

func (s *Session) readFKChecks() bool {
	v, err := s.sysVar("foreign_key_checks", false)
	return err != nil || types.ToBool(v)
}

// Autocommit reports the session's autocommit setting (the status flag
// SERVER_STATUS_AUTOCOMMIT).
func (s *Session) Autocommit() bool { return s.autocommit() }

// InTransaction reports an open explicit transaction, one that lasts past
// the statement (SERVER_STATUS_IN_TRANS).
func (s *Session) InTransaction() bool { return (s.txn != nil || s.deferred) && s.explicit }

// WarningCount is the number of warnings the last statement raised.
func (s *Session) WarningCount() uint16 { return uint16(min(len(s.warnings), 65535)) }

// CurrentDB is the current database; it implements expression.Session.
func (s *Session) CurrentDB() string { return s.db }

// UseDB makes db the current database (USE, COM_INIT_DB).
func (s *Session) UseDB(_ context.Context, db string) error {
	if err := s.dbAccess(db); err != nil {
		return mapError(err, nil)
	}
	if strings.EqualFold(db, planner.InfoSchemaDB) {
		s.db = planner.InfoSchemaDB
		return nil
	}
	info := s.d.catalog.InfoSchema().DB(db)
	if info == nil {
		return errno.BadDB(db)
	}
	s.db = info.Name
	return nil
}

// Reset returns the session to the state of a new connection
// (COM_RESET_CONNECTION): it rolls back and forgets user variables and
// session variables.
func (s *Session) Reset(context.Context) error {
	s.rollback()
	s.dropNamedStmts()
	s.vars = map[string]types.Datum{}
	s.past = nil // tidb_snapshot is a session variable
	s.hot.valid = false
	s.userVars = map[string]types.Datum{}
	s.warnings = nil
	s.initLimits()
	return nil
}

// Close ends the session: it rolls back an open transaction.
func (s *Session) Close() error {
	s.rollback()
	return nil
}

// User implements expression.Session.
func (s *Session) User() string { return s.info.User + "@" + s.info.Host }

// ConnectionID implements expression.Session.
func (s *Session) ConnectionID() uint64 { return uint64(s.info.ID) }

// LastInsertID implements expression.Session.
func (s *Session) LastInsertID() uint64 { return s.lastInsertID }

// UserVar implements expression.Session.
func (s *Session) UserVar(name string) (types.Datum, bool) {
	v, ok := s.userVars[strings.ToLower(name)]
	return v, ok
}

// FoundRows implements expression.Session.
func (s *Session) FoundRows() uint64 { return s.foundRows }

// RowCount implements expression.Session.
func (s *Session) RowCount() int64 { return s.rowCount }

// SysVar implements expression.Session.
func (s *Session) SysVar(name string, global bool) (types.Datum, error) {
	return s.sysVar(name, global)
}

// pessimistic reports whether new explicit transactions lock as they go.
func (s *Session) pessimistic() bool {
	v, err := s.sysVar("tidb_txn_mode", false)
	if err == nil {
		switch strings.ToLower(v.Str()) {
		case "optimistic":
			return false
		case "pessimistic":
			return true
		}
	}
	return s.d.cfg.PessimisticByDefault
}

// lockWait is innodb_lock_wait_timeout.
func (s *Session) lockWait() time.Duration { return s.hotVar().lockWait }

func (s *Session) readLockWait() time.Duration {
	v, err := s.sysVar("innodb_lock_wait_timeout", false)
	if err != nil {
		return s.d.cfg.LockWaitTimeout
	}
	n, _, _ := types.ToInt(v)
	return time.Duration(n) * time.Second
}

// defaultMode is the mode of a transaction BEGIN or autocommit=0 opens
// without naming one.
func (s *Session) defaultMode() kv.Mode {
	if s.pessimistic() {
		return kv.Pessimistic
	}
	return kv.Optimistic
}

// startTxn starts the transaction a statement that reads or writes data
// runs in, if one is open but not started: BEGIN's (deferred), or the one
// every statement opens under autocommit=0. Outside a transaction it does
// nothing: the statement runs in its own.
func (s *Session) startTxn() error {
	switch {
	case s.txn != nil:
		return nil
	case s.deferred:
		return s.begin(true, s.deferredMode)
	case !s.autocommit():
		return s.begin(true, s.defaultMode())
	}
	return nil
}

// begin starts a transaction now: its start timestamp is its snapshot.
func (s *Session) begin(explicit bool, mode kv.Mode) error {
	// Pin the schema before the start timestamp: a schema version is
	// published after the data it needs (a backfilled index) committed.
	is, err := s.d.pinSchema(s.info.ID)
	if err != nil {
		return mapError(err, nil)
	}
	txn, err := s.d.store.Begin(kv.TxnOptions{Mode: mode, Commit: s.hotVar().commit})
	if err != nil {
		s.d.unpin(is, s.info.ID)
		return mapError(err, nil)
	}
	s.d.checkSchemaAtCommit(txn, is)
	s.txn, s.explicit, s.txnIS, s.txnBegan = txn, explicit, is, time.Now()
	s.forUpdateTS = txn.StartTS()
	s.deferred = false
	s.markSavepoints()
	s.obs.txnStartTS = txn.StartTS()
	return nil
}

// endTxn forgets the transaction after commit or rollback, and returns
// the schema it had pinned, for the caller to unpin once the commit or
// rollback is done: until then the transaction still writes (or removes)
// its locks, under that schema, and a schema change must wait for it (a
// dropped index's keys deleted under a committing transaction took its
// pessimistic locks away: 'pessimistic lock not found').
func (s *Session) endTxn() *catalog.InfoSchema {
	is := s.txnIS
	s.txn, s.explicit, s.txnIS = nil, false, nil
	s.deferred, s.savepoints = false, nil
	return is
}

// commit commits the open transaction, if any.
func (s *Session) commit(ctx context.Context) error {
	if s.txn == nil {
		s.endTxn() // a deferred transaction ends with nothing to do
		return nil
	}
	txn := s.txn
	is := s.endTxn()
	defer s.d.unpin(is, s.info.ID)
	err := txn.Commit(ctx)
	metrics.ObserveTxn(txn.Mode() == kv.Pessimistic, err == nil, time.Since(s.txnBegan))
	if err != nil {
		return mapError(err, s.d.catalog.InfoSchema())
	}
	return nil
}

// rollback rolls back the open transaction, if any.
func (s *Session) rollback() {
	if s.txn == nil {
		s.endTxn()
		return
	}
	txn := s.txn
	is := s.endTxn()
	defer s.d.unpin(is, s.info.ID)
	txn.Rollback()
	metrics.ObserveTxn(txn.Mode() == kv.Pessimistic, false, time.Since(s.txnBegan))
}

func (s *Session) String() string { return fmt.Sprintf("session %d", s.info.ID) }
