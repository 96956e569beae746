package session

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// The system variables that protect the server from its clients:
//
//	max_connections       global: connections served at once (0: no limit);
//	                      the server's, changed at once by SET GLOBAL
//	max_allowed_packet    the largest packet a client may send; SET GLOBAL
//	                      changes it for new connections, the session value
//	                      is the connection's own and read-only
//	max_execution_time    ms a SELECT may run (0: no limit); a
//	                      /*+ MAX_EXECUTION_TIME(n) */ hint overrides it
//	tidb_mem_quota_query  bytes one statement may hold (<= 0: no limit)
//	wait_timeout          seconds an idle connection is kept;
//	interactive_timeout   its value for CLIENT_INTERACTIVE clients
//
// Their ranges are in the table of variables (vars.go); SET clamps to
// them with a warning, as MySQL does. As in MySQL, a session takes the global values of the last four when it
// opens (wait_timeout from interactive_timeout for interactive clients), so
// SET GLOBAL changes them for new sessions only. The session keeps them
// decoded in limits, so that statements read them without a lookup.

// limits is a session's decoded limit variables and its statements'
// memory tracker.
type limits struct {
	maxExecTime time.Duration // max_execution_time
	memQuota    int64         // tidb_mem_quota_query
	idleTimeout time.Duration // wait_timeout
	maxPacket   int64         // max_allowed_packet when the session opened

	// mem tracks the running statement. Statements run one at a time, and
	// a SELECT's rows are read to the end before the next one starts.
	mem executor.MemTracker
}

// initLimits gives a new (or reset) session the global values of its limit
// variables. max_allowed_packet is the connection's for its whole life,
// and is taken once, by newSession.
func (s *Session) initLimits() {
	global := func(name string) types.Datum {
		v, _ := s.sysVar(name, true)
		return v
	}
	wait := global("wait_timeout")
	if s.info.Interactive {
		wait = global("interactive_timeout")
	}
	for name, v := range map[string]types.Datum{
		"wait_timeout":         wait,
		"max_execution_time":   global("max_execution_time"),
		"tidb_mem_quota_query": global("tidb_mem_quota_query"),
	} {
		s.vars[name] = v
		s.hot.valid = false
		s.applyLimit(name, v)
	}
}

// connMaxPacket is max_allowed_packet for a connection opening now: what
// the server holds it to.
func (d *Driver) connMaxPacket() int64 {
	if d.conns != nil {
		return int64(d.conns.MaxAllowedPacket())
	}
	return sysVars["max_allowed_packet"].def.Int()
}

// serverVar reads the variables the server holds: the limits, and the
// port it listens on.
func (s *Session) serverVar(name string, global bool) (types.Datum, bool) {
	switch name {
	case "port":
		if s.d.conns != nil && s.d.conns.Port() != 0 {
			return types.NewUint(uint64(s.d.conns.Port())), true
		}
	case "secure_file_priv":
		if strings.EqualFold(s.d.cfg.SecureFilePriv, "NULL") {
			return types.Null, true
		}
		return types.NewString(s.d.cfg.SecureFilePriv), true
	case "max_connections":
		if s.d.conns != nil {
			return types.NewInt(int64(s.d.conns.MaxConnections())), true
		}
	case "max_allowed_packet":
		if !global {
			return types.NewInt(s.maxPacket), true
		}
		if s.d.conns != nil {
			return types.NewInt(int64(s.d.conns.MaxAllowedPacket())), true
		}
	}
	return types.Datum{}, false
}

// setLimit applies a SET of a limit variable that the table let through
// and the variable map now holds.
func (s *Session) setLimit(name string, v types.Datum, global bool) {
	if !global {
		s.applyLimit(name, v)
		return
	}
	s.d.setGlobalLimit(name, v)
}

// setGlobalLimit applies the global value of a limit variable to the
// server's connections.
func (d *Driver) setGlobalLimit(name string, v types.Datum) {
	if name == "tidb_backoff_weight" {
		if st, ok := d.store.(interface{ SetBackoffWeight(int) }); ok {
			st.SetBackoffWeight(int(v.Int()))
		}
		return
	}
	if name == "tidb_tso_client_batch_max_wait_time" {
		if st, ok := d.store.(interface{ SetTSOBatchWait(time.Duration) error }); ok {
			ms, _ := types.ToFloat(v)
			if err := st.SetTSOBatchWait(time.Duration(ms * float64(time.Millisecond))); err != nil {
				slog.Default().Warn("cannot set the TSO client's batch wait", "err", err)
			}
		}
		return
	}
	if d.conns == nil {
		return
	}
	switch name {
	case "max_connections":
		d.conns.SetMaxConnections(int(v.Int()))
	case "max_allowed_packet":
		d.conns.SetMaxAllowedPacket(int(v.Int()))
	}
}

// applyLimit decodes a session value of a limit variable.
func (s *Session) applyLimit(name string, v types.Datum) {
	n, _, _ := types.ToInt(v)
	switch name {
	case "max_execution_time":
		s.maxExecTime = time.Duration(n) * time.Millisecond
	case "tidb_mem_quota_query":
		s.memQuota = n
	case "wait_timeout":
		s.idleTimeout = time.Duration(n) * time.Second
	}
}

// IdleTimeout is how long the connection may wait for its next command:
// wait_timeout, or interactive_timeout for interactive clients.
func (s *Session) IdleTimeout() time.Duration { return s.idleTimeout }

// selectContext bounds a query by max_execution_time, or by the
// MAX_EXECUTION_TIME(n) hint of sel (nil for a UNION and the like; 0 there
// lifts the bound). It returns ctx itself and a nil cancel when there is
// no bound; otherwise the caller calls cancel when the statement ends.
func (s *Session) selectContext(ctx context.Context, sel *ast.SelectStmt) (context.Context, context.CancelFunc) {
	d := s.maxExecTime
	var hints []*ast.TableOptimizerHint
	if sel != nil {
		hints = sel.TableHints
	}
	for _, h := range hints {
		if h.HintName.L == "max_execution_time" {
			if ms, ok := h.HintData.(uint64); ok {
				d = time.Duration(min(ms, 1<<32-1)) * time.Millisecond
			}
		}
	}
	if d <= 0 {
		return ctx, nil
	}
	return context.WithTimeout(ctx, d)
}

// stmtMem readies the memory tracker for a statement (or one attempt of
// it) that writes to txn (nil for none).
func (s *Session) stmtMem(txn kv.Txn) *executor.MemTracker {
	s.mem.Reset(s.memQuota, txn)
	return &s.mem
}
