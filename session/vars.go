package session

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// The system variables Basalt knows are the one table sysVars: a line per
// variable gives its type, default, scope and range, so that adding a
// variable is adding a line. SET checks a value against its line (type,
// range, allowed values) before storing it, and SELECT @@name returns it
// with the type the line declares (BIGINT for integers and booleans, as
// MySQL sends them). Variables from TiDB's reports are accepted so that
// their tuning scripts run; the ones Basalt has a mechanism for take effect
// (autocommit, tidb_txn_mode, innodb_lock_wait_timeout, sql_mode,
// tidb_guarantee_linearizability, cte_max_recursion_depth, the limits of
// limits.go ...), the others are kept and shown.

// varType is what values a system variable takes.
type varType uint8

const (
	varString varType = iota // any text
	varInt                   // a signed integer in [min, max]
	varUint                  // an unsigned integer in [min, max]
	varBool                  // ON/OFF/TRUE/FALSE/1/0, read back as 1/0
	varEnum                  // one of values, by name (any case) or index
	varFloat                 // a number in [fmin, fmax]
)

// varScope is where a system variable lives.
type varScope uint8

const (
	scopeBoth    varScope = iota // a global value and a session value
	scopeGlobal                  // a global value only (TiDB's INSTANCE scope too)
	scopeSession                 // a session value only
	scopeNone                    // read-only
)

// sysVarDef is one line of the table. Values are kept as the datum
// SELECT @@name returns.
type sysVarDef struct {
	typ   varType
	scope varScope
	def   types.Datum
	// min and max bound integers: SET clamps to them with warning 1292,
	// as MySQL does. fmin and fmax bound numbers: a value outside is
	// refused with 1231, as TiDB does.
	min, max   int64
	fmin, fmax float64
	values     []string // an enum's values, spelled as they read back
	// check vets and normalizes a value that has the variable's type;
	// global is the scope of the SET.
	check func(s *Session, v types.Datum, global bool) (types.Datum, error)
}

func strVar(s string) sysVarDef { return sysVarDef{typ: varString, def: types.NewString(s)} }
func intVar(n int64) sysVarDef {
	return sysVarDef{typ: varInt, def: types.NewInt(n), min: math.MinInt64, max: math.MaxInt64}
}
func uintVar(n uint64) sysVarDef {
	return sysVarDef{typ: varUint, def: types.NewUint(n), min: 0, max: math.MaxInt64}
}
func boolVar(b bool) sysVarDef { return sysVarDef{typ: varBool, def: types.NewBool(b)} }

// enumVar's default is def, one of values.
func enumVar(def string, values ...string) sysVarDef {
	return sysVarDef{typ: varEnum, def: types.NewString(def), values: values}
}
func floatVar(f, min, max float64) sysVarDef {
	return sysVarDef{typ: varFloat, def: types.NewFloat(f), fmin: min, fmax: max}
}
func roVar(d types.Datum) sysVarDef {
	v := sysVarDef{typ: varString, scope: scopeNone, def: d}
	switch d.Kind() {
	case types.KindInt:
		v.typ = varInt
	case types.KindUint:
		v.typ = varUint
	}
	return v
}

// within bounds an integer variable.
func (v sysVarDef) within(min, max int64) sysVarDef { v.min, v.max = min, max; return v }

// global makes v a variable with a global value only.
func (v sysVarDef) global() sysVarDef { v.scope = scopeGlobal; return v }

// sessionOnly makes v a variable with a session value only.
func (v sysVarDef) sessionOnly() sysVarDef { v.scope = scopeSession; return v }

// checked adds a check to v.
func (v sysVarDef) checked(f func(s *Session, v types.Datum, global bool) (types.Datum, error)) sysVarDef {
	v.check = f
	return v
}

const defaultSQLMode = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

var isolationLevels = []string{"READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE"}

const secondsPerYear = 31536000

var sysVars = map[string]sysVarDef{
	"autocommit":               boolVar(true),
	"sql_mode":                 strVar(defaultSQLMode).checked(checkSQLMode),
	"transaction_isolation":    enumVar("REPEATABLE-READ", isolationLevels...),
	"tx_isolation":             enumVar("REPEATABLE-READ", isolationLevels...),
	"transaction_read_only":    boolVar(false),
	"tx_read_only":             boolVar(false),
	"innodb_lock_wait_timeout": uintVar(50).within(1, 1073741824),
	"lock_wait_timeout":        uintVar(31536000).within(1, secondsPerYear),
	"max_allowed_packet":       uintVar(67108864).within(1024, 1<<30).checked(checkMaxAllowedPacket),
	"net_buffer_length":        uintVar(16384).within(1024, 1048576),
	"max_execution_time":       uintVar(0).within(0, 1<<32-1),
	"wait_timeout":             uintVar(28800).within(1, secondsPerYear),
	"interactive_timeout":      uintVar(28800).within(1, secondsPerYear),
	"net_read_timeout":         uintVar(30).within(1, secondsPerYear),
	"net_write_timeout":        uintVar(60).within(1, secondsPerYear),
	"character_set_client":     strVar("utf8mb4"),
	"character_set_connection": strVar("utf8mb4"),
	"character_set_results":    strVar("utf8mb4"),
	"character_set_server":     strVar("utf8mb4"),
	"character_set_database":   strVar("utf8mb4"),
	"character_set_system":     roVar(types.NewString("utf8")),
	"character_set_filesystem": strVar("binary"),
	"collation_connection":     strVar("utf8mb4_general_ci"),
	"collation_server":         strVar("utf8mb4_general_ci"),
	"collation_database":       strVar("utf8mb4_general_ci"),
	"init_connect":             strVar("").global(),
	// SHOW CREATE quotes every name whatever it says; dump tools set it.
	"sql_quote_show_create":               boolVar(true),
	"time_zone":                           strVar("SYSTEM").checked(checkTimeZone),
	"system_time_zone":                    roVar(types.NewString("UTC")),
	"lower_case_table_names":              roVar(types.NewUint(0)),
	"version_comment":                     roVar(types.NewString("Basalt, a MySQL-compatible distributed database")),
	"version_compile_os":                  roVar(types.NewString("Linux")),
	"version_compile_machine":             roVar(types.NewString("x86_64")),
	"license":                             roVar(types.NewString("Apache License 2.0")),
	"auto_increment_increment":            uintVar(1).within(1, 65535),
	"auto_increment_offset":               uintVar(1).within(1, 65535),
	"sql_select_limit":                    sysVarDef{typ: varUint, def: types.NewUint(math.MaxUint64), max: math.MaxInt64},
	"sql_safe_updates":                    boolVar(false),
	"sql_auto_is_null":                    boolVar(false),
	"sql_notes":                           boolVar(true),
	"sql_warnings":                        boolVar(false),
	"sql_log_bin":                         boolVar(true),
	"foreign_key_checks":                  boolVar(true),
	"unique_checks":                       boolVar(true),
	"big_tables":                          boolVar(false),
	"profiling":                           boolVar(false),
	"performance_schema":                  roVar(types.NewInt(0)),
	"have_ssl":                            roVar(types.NewString("DISABLED")),
	"have_openssl":                        roVar(types.NewString("DISABLED")),
	"query_cache_size":                    uintVar(0),
	"query_cache_type":                    enumVar("OFF", "OFF", "ON", "DEMAND"),
	"div_precision_increment":             uintVar(4).within(0, 30),
	"group_concat_max_len":                uintVar(1024).within(4, math.MaxInt64),
	"default_storage_engine":              strVar("InnoDB"),
	"default_tmp_storage_engine":          strVar("InnoDB"),
	"storage_engine":                      strVar("InnoDB"),
	"max_connections":                     uintVar(0).within(0, 100000).global(),
	"port":                                roVar(types.NewUint(4000)),
	"socket":                              roVar(types.NewString("")),
	"hostname":                            roVar(types.NewString("localhost")),
	"datadir":                             roVar(types.NewString("")),
	"innodb_buffer_pool_size":             uintVar(134217728).global(),
	"default_week_format":                 uintVar(0).within(0, 7),
	"explicit_defaults_for_timestamp":     boolVar(true),
	"block_encryption_mode":               strVar("aes-128-ecb"),
	"cte_max_recursion_depth":             uintVar(1000).within(0, 4294967295),
	"windowing_use_high_precision":        boolVar(true),
	"tidb_txn_mode":                       enumVar("", "", "pessimistic", "optimistic"),
	"tidb_current_ts":                     roVar(types.NewUint(0)),  // see sysVar
	"tidb_snapshot":                       strVar("").sessionOnly(), // checked by checkSnapshot (stale_read.go)
	"tidb_enable_async_commit":            boolVar(true),
	"tidb_enable_1pc":                     boolVar(true),
	"tidb_guarantee_linearizability":      boolVar(true),
	"tidb_prepared_plan_cache_size":       uintVar(100).within(1, 100000),
	"tidb_enable_prepared_plan_cache":     boolVar(true),
	"tidb_executor_concurrency":           uintVar(5).within(1, 256),
	"tidb_distsql_scan_concurrency":       uintVar(15).within(1, 256),
	"tidb_retry_limit":                    intVar(10).within(-1, math.MaxInt64),
	"tidb_disable_txn_auto_retry":         boolVar(true),
	"tidb_mem_quota_query":                intVar(1<<30).within(-1, math.MaxInt64),
	"tidb_gc_life_time":                   strVar("10m0s").global(),
	"tidb_gc_run_interval":                strVar("10m0s").global(),
	"tidb_gc_enable":                      boolVar(true).global(),
	"tidb_ddl_enable_fast_reorg":          boolVar(true).global(), // ddl.WithoutFastReorg
	"tidb_enable_clustered_index":         enumVar("ON", "OFF", "ON", "INT_ONLY"),
	"tidb_general_log":                    boolVar(false).global(),
	"tidb_enable_stmt_summary":            boolVar(true).global(),
	"tidb_hashagg_final_concurrency":      intVar(-1).within(-1, 256),
	"tidb_hashagg_partial_concurrency":    intVar(-1).within(-1, 256),
	"tidb_index_lookup_concurrency":       intVar(-1).within(-1, 256),
	"tidb_index_serial_scan_concurrency":  uintVar(1).within(1, 256),
	"tidb_session_plan_cache_size":        uintVar(100).within(1, 100000),
	"tidb_stmt_summary_refresh_interval":  intVar(1800).within(1, math.MaxInt32).global(),
	"tidb_stmt_summary_history_size":      intVar(24).within(0, 255).global(),
	"tidb_stmt_summary_max_stmt_count":    intVar(3000).within(1, 32767).global(),
	"tidb_stmt_summary_max_sql_length":    intVar(4096).within(0, math.MaxInt32).global(),
	"tidb_enable_slow_log":                boolVar(true),
	"tidb_query_log_max_len":              intVar(4096).within(0, 1<<30),
	"tidb_enable_non_prepared_plan_cache": boolVar(false),
	"tidb_isolation_read_engines":         strVar("tikv,tidb"),
	"tidb_opt_agg_push_down":              boolVar(false),
	"tidb_enable_tmp_storage_on_oom":      boolVar(true).global(),
	"tidb_slow_log_threshold":             intVar(300).within(-1, math.MaxInt64),
	"innodb_flush_log_at_trx_commit":      uintVar(1).within(0, 3).global(),
	"sync_binlog":                         uintVar(1).within(0, 4294967295).global(),
	"transaction_alloc_block_size":        uintVar(8192).within(1024, 131072),
	"optimizer_switch":                    strVar("index_merge=on"),
	"completion_type":                     enumVar("NO_CHAIN", "NO_CHAIN", "CHAIN", "RELEASE"),
	"tmp_table_size":                      uintVar(16777216).within(1024, math.MaxInt64),
	"max_heap_table_size":                 uintVar(16777216).within(16384, math.MaxInt64),
	"long_query_time":                     floatVar(10, 0, math.MaxFloat64),
	"slow_query_log":                      boolVar(false).global(),
	"general_log":                         boolVar(false).global(),
	"max_prepared_stmt_count":             uintVar(16382).within(0, 4194304).global(),
	"max_sp_recursion_depth":              uintVar(0).within(0, 255),
	"old_passwords":                       uintVar(0).within(0, 2),
	"default_authentication_plugin":       roVar(types.NewString("mysql_native_password")),
	"thread_handling":                     roVar(types.NewString("one-thread-per-connection")),
	"require_secure_transport":            boolVar(false).global(),
	// local_infile allows LOAD DATA LOCAL (loaddata.go). On, as in MariaDB
	// and MySQL 5.7 (MySQL 8 has it off).
	"secure_file_priv": roVar(types.NewString("")),
	"local_infile":     boolVar(true).global(),

	// TiDB's, as its sysbench reports set them (defaults as a new TiDB
	// cluster has them).
	"tidb_ignore_prepared_cache_close_stmt":         boolVar(false),
	"tidb_enable_inl_join_inner_multi_pattern":      boolVar(true),
	"tidb_opt_derive_topn":                          boolVar(false),
	"tidb_opt_ordering_index_selectivity_threshold": floatVar(0, 0, 1),
	"tidb_runtime_filter_mode":                      enumVar("OFF", "OFF", "LOCAL"),
	"tidb_opt_enable_mpp_shared_cte_execution":      boolVar(false),
	"tidb_rc_read_check_ts":                         boolVar(false).global(),
	"tidb_enable_historical_stats":                  boolVar(false).global(),
	"tidb_analyze_skip_column_types":                strVar("json,blob,mediumblob,longblob,mediumtext,longtext").checked(checkSkipColumnTypes),
	"tidb_opt_prefer_range_scan":                    boolVar(true),
	"tidb_max_chunk_size":                           uintVar(1024).within(32, math.MaxInt32),
	"tidb_enable_collect_execution_info":            boolVar(true).global(),
	"tidb_use_plan_baselines":                       boolVar(true),
	"tidb_txn_assertion_level":                      enumVar("FAST", "OFF", "FAST", "STRICT"),

	// The plan cache (prepare.go): off, new statistics leave cached plans
	// alone; last_plan_from_cache tells of the statement before.
	"tidb_plan_cache_invalidation_on_fresh_stats": boolVar(true),
	"last_plan_from_cache":                        roVar(types.NewInt(0)), // see sysVar
}

func init() {
	sysVars["version"] = roVar(types.NewString(expression.Version))
	// TiDB's: client-go's backoff budgets (20 s of sleeps for a read, 40 s
	// for a prewrite) are multiplied by it; 0 means 2. Global only here:
	// it sets the node's budgets (setGlobalLimit), not one session's.
	sysVars["tidb_backoff_weight"] = uintVar(2).within(0, math.MaxInt32).global()
	// TiDB's: how long (ms, 0 to 10) the PD client's TSO dispatcher may
	// wait for more timestamp requests to batch into one RPC; 0 sends at
	// once. Global: it tunes the node's PD client (setGlobalLimit).
	sysVars["tidb_tso_client_batch_max_wait_time"] = floatVar(0, 0, 10).global()
	// The zone SYSTEM means, by its abbreviation, as MySQL reports it.
	zone, _ := time.Now().Zone()
	sysVars["system_time_zone"] = roVar(types.NewString(zone))
	expression.RegisterSysVarInfo(sysVarInfo)
}

// sessionOnlyVars are the variables sysVar computes for the session,
// outside the table; they have no global value.
var sessionOnlyVars = map[string]expression.SysVarKind{
	"last_insert_id": expression.SysVarUint,
	"identity":       expression.SysVarUint,
	"warning_count":  expression.SysVarUint,
	"error_count":    expression.SysVarUint,
	// TiDB's: whether the previous statement was planned with a
	// binding (binding.go).
	"last_plan_from_binding": expression.SysVarInt,
}

// sysVarInfo describes @@name to the expression builder: its type
// (integers and booleans are BIGINT, UNSIGNED for unsigned variables, as
// MySQL sends them) and its scopes.
func sysVarInfo(name string) expression.SysVarInfo {
	if k, ok := sessionOnlyVars[name]; ok {
		return expression.SysVarInfo{Kind: k, SessionOnly: true}
	}
	def, ok := sysVars[name]
	if !ok {
		return expression.SysVarInfo{}
	}
	info := expression.SysVarInfo{
		GlobalOnly:  def.scope == scopeGlobal || def.scope == scopeNone,
		SessionOnly: def.scope == scopeSession,
	}
	switch def.typ {
	case varInt, varBool:
		info.Kind = expression.SysVarInt
	case varUint:
		info.Kind = expression.SysVarUint
	case varFloat:
		info.Kind = expression.SysVarDouble
	}
	return info
}

// sysVar reads a system variable; session values shadow global ones.
func (s *Session) sysVar(name string, global bool) (types.Datum, error) {
	name = strings.ToLower(name)
	switch name {
	case "version":
		return types.NewString(s.d.cfg.ServerVersion), nil
	case "last_insert_id", "identity":
		return types.NewUint(s.lastInsertID), nil
	case "warning_count":
		return types.NewUint(uint64(len(s.warnings))), nil
	case "error_count":
		return types.NewUint(0), nil
	case "last_plan_from_binding":
		return types.NewBool(s.binds.prev), nil
	case "last_plan_from_cache":
		if s.obs.prevFromCache {
			return types.NewInt(1), nil
		}
		return types.NewInt(0), nil
	case "tidb_current_ts":
		// TiDB's: the open transaction's start timestamp, 0 outside
		// one. Asking starts a transaction BEGIN deferred.
		if s.txn == nil && s.deferred {
			if err := s.startTxn(); err != nil {
				return types.Null, err
			}
		}
		if s.txn != nil {
			return types.NewUint(s.txn.StartTS()), nil
		}
		return types.NewUint(0), nil
	case "have_ssl", "have_openssl":
		if s.d.conns != nil && s.d.conns.TLSEnabled() {
			return types.NewString("YES"), nil
		}
	}
	switch name { // MySQL's names of the slow log's settings
	case "long_query_time":
		ms, err := s.sysVar("tidb_slow_log_threshold", global)
		if err != nil {
			return ms, err
		}
		return types.NewFloat(float64(ms.Int()) / 1000), nil
	case "slow_query_log":
		return s.sysVar("tidb_enable_slow_log", global)
	}
	def, ok := sysVars[name]
	if !ok {
		return types.Null, errno.New(errno.ErUnknownSystemVariable, "Unknown system variable '%s'", name)
	}
	if v, ok := s.serverVar(name, global); ok {
		return def.coerce(v), nil
	}
	if !global {
		if v, ok := s.vars[name]; ok {
			return v, nil
		}
	}
	s.d.mu.Lock()
	v, ok := s.d.globals[name]
	s.d.mu.Unlock()
	if ok {
		return v, nil
	}
	return def.def, nil
}

// coerce gives an integer read from elsewhere the kind the variable
// declares.
func (v sysVarDef) coerce(d types.Datum) types.Datum {
	switch {
	case v.typ == varUint && d.Kind() == types.KindInt:
		return types.NewUint(uint64(d.Int()))
	case v.typ == varInt && d.Kind() == types.KindUint:
		return types.NewInt(d.Int())
	}
	return d
}

// setSysVar sets a system variable at session or global scope.
func (s *Session) setSysVar(name string, v types.Datum, global bool) error {
	name = strings.ToLower(name)
	switch name {
	case "long_query_time": // MySQL's name, in seconds
		f, tr := types.ToFloat(v)
		if tr || v.IsNull() {
			return errno.New(errno.ErWrongTypeForVar, "Incorrect argument type to variable '%s'", name)
		}
		return s.setSysVar("tidb_slow_log_threshold", types.NewInt(int64(math.Round(max(f, 0)*1000))), global)
	case "slow_query_log":
		return s.setSysVar("tidb_enable_slow_log", v, global)
	}
	def, ok := sysVars[name]
	if !ok {
		return errno.New(errno.ErUnknownSystemVariable, "Unknown system variable '%s'", name)
	}
	switch {
	case def.scope == scopeNone:
		return errno.New(1238, "Variable '%s' is a read only variable", name)
	case def.scope == scopeGlobal && !global:
		return errno.New(errno.ErIncorrectGlobalLocalVar, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
	case def.scope == scopeSession && global:
		return errno.New(1228, "Variable '%s' is a SESSION variable and can't be used with SET GLOBAL", name)
	}
	v, err := s.typedValue(name, def, v)
	if err != nil {
		return err
	}
	if def.check != nil {
		if v, err = def.check(s, v, global); err != nil {
			return err
		}
	}
	if global {
		s.d.mu.Lock()
		s.d.globals[name] = v
		s.d.mu.Unlock()
		s.d.globalsChanged.Add(1)
		if strings.HasPrefix(name, "tidb_stmt_summary_") || name == "tidb_enable_stmt_summary" {
			s.d.configureSummary(s)
		}
	} else {
		s.vars[name] = v
		s.hot.valid = false
	}
	s.setLimit(name, v, global)
	if global {
		return s.d.afterSetGlobal(name, v)
	}
	return nil
}

// typedValue converts a value given to SET into the variable's type, or
// fails as MySQL does: 1231 for a value the variable does not take, 1232
// for a value of the wrong type. An integer outside the variable's range
// is clamped to it, with warning 1292.
func (s *Session) typedValue(name string, def sysVarDef, v types.Datum) (types.Datum, error) {
	wrongValue := func() error {
		text := "NULL"
		if !v.IsNull() {
			text = string(types.ToText(v))
		}
		return errno.New(errno.ErWrongValueForVar, "Variable '%s' can't be set to the value of '%s'", name, text)
	}
	wrongType := func() error {
		return errno.New(errno.ErWrongTypeForVar, "Incorrect argument type to variable '%s'", name)
	}
	switch def.typ {
	case varBool:
		b, ok := parseBool(v)
		if !ok {
			return v, wrongValue()
		}
		return types.NewBool(b), nil
	case varInt, varUint:
		var n int64
		big := false // an unsigned value above MaxInt64
		switch v.Kind() {
		case types.KindInt:
			n = v.Int()
		case types.KindUint:
			n, big = v.Int(), v.Uint() > math.MaxInt64
		case types.KindString:
			// MySQL wants a number; TiDB, whose scripts quote them, takes
			// a string that is one.
			var err error
			if n, err = strconv.ParseInt(strings.TrimSpace(v.Str()), 10, 64); err != nil {
				return v, wrongType()
			}
		default:
			return v, wrongType()
		}
		if big {
			if def.typ == varUint && def.max == math.MaxInt64 {
				return v, nil // sql_select_limit's default and the like
			}
			n = math.MaxInt64
		}
		c := min(max(n, def.min), def.max)
		if c != n || big {
			s.warnings = append(s.warnings, errno.New(errno.ErTruncatedWrongValue, "Truncated incorrect %s value: '%s'", name, types.ToText(v)))
		}
		if def.typ == varUint {
			return types.NewUint(uint64(c)), nil
		}
		return types.NewInt(c), nil
	case varFloat:
		var f float64
		switch v.Kind() {
		case types.KindInt, types.KindUint, types.KindFloat, types.KindDecimal:
			f, _ = types.ToFloat(v)
		case types.KindString:
			var err error
			if f, err = strconv.ParseFloat(strings.TrimSpace(v.Str()), 64); err != nil {
				return v, wrongType()
			}
		default:
			return v, wrongType()
		}
		if f < def.fmin || f > def.fmax {
			return v, wrongValue()
		}
		return types.NewFloat(f), nil
	case varEnum:
		switch v.Kind() {
		case types.KindInt, types.KindUint:
			// An enum takes the index of its value, as in MySQL.
			if i := v.Uint(); (v.Kind() == types.KindUint || v.Int() >= 0) && i < uint64(len(def.values)) {
				return types.NewString(def.values[i]), nil
			}
			return v, wrongValue()
		case types.KindString:
			for _, e := range def.values {
				if strings.EqualFold(e, strings.TrimSpace(v.Str())) {
					return types.NewString(e), nil
				}
			}
		}
		return v, wrongValue()
	}
	if v.IsNull() {
		return types.NewString(""), nil
	}
	return types.NewString(string(types.ToText(v))), nil
}

// checkSQLMode normalizes sql_mode: known modes, combinations expanded.
func checkSQLMode(_ *Session, v types.Datum, _ bool) (types.Datum, error) {
	m, err := expression.ParseSQLMode(v.Str())
	if err != nil {
		return v, err
	}
	return types.NewString(m.String()), nil
}

// checkTimeZone accepts a zone name or an offset, which reads back as
// MySQL writes it: '+8:00' is '+08:00'.
func checkTimeZone(_ *Session, v types.Datum, _ bool) (types.Datum, error) {
	loc, ok := expression.ParseTimeZone(v.Str())
	if !ok {
		return v, errno.New(errno.ErUnknownTimeZone, "Unknown or incorrect time zone: '%s'", v.Str())
	}
	if s := v.Str(); s[0] == '+' || s[0] == '-' {
		_, off := time.Now().In(loc).Zone()
		sign := '+'
		if off < 0 {
			sign, off = '-', -off
		}
		v = types.NewString(fmt.Sprintf("%c%02d:%02d", sign, off/3600, off/60%60))
	}
	return v, nil
}

// checkMaxAllowedPacket: the session value is the connection's, fixed
// when it opened; the global one keeps whole KiB, as in MySQL.
func checkMaxAllowedPacket(_ *Session, v types.Datum, global bool) (types.Datum, error) {
	if !global {
		return v, errno.New(1621, "SESSION variable 'max_allowed_packet' is read-only. Use SET GLOBAL to assign the value")
	}
	return types.NewUint(v.Uint() &^ 1023), nil
}

// analyzeSkipTypes are the column types tidb_analyze_skip_column_types
// may list, as in TiDB.
var analyzeSkipTypes = []string{"json", "blob", "mediumblob", "longblob", "text", "mediumtext", "longtext"}

// checkSkipColumnTypes takes a comma-separated list of analyzeSkipTypes,
// kept in lower case.
func checkSkipColumnTypes(_ *Session, v types.Datum, _ bool) (types.Datum, error) {
	if v.Str() == "" {
		return v, nil
	}
	items := strings.Split(strings.ToLower(v.Str()), ",")
	for i, t := range items {
		items[i] = strings.TrimSpace(t)
		if !slices.Contains(analyzeSkipTypes, items[i]) {
			return v, errno.New(errno.ErWrongValueForVar, "Variable 'tidb_analyze_skip_column_types' can't be set to the value of '%s'", v.Str())
		}
	}
	return types.NewString(strings.Join(items, ",")), nil
}

func parseBool(v types.Datum) (bool, bool) {
	switch v.Kind() {
	case types.KindInt, types.KindUint:
		return v.Int() != 0, v.Int() == 0 || v.Int() == 1
	case types.KindString:
		switch strings.ToUpper(v.Str()) {
		case "ON", "TRUE", "1":
			return true, true
		case "OFF", "FALSE", "0":
			return false, true
		}
	}
	return false, false
}

// showValue is a variable's value as SHOW VARIABLES writes it: booleans
// as ON and OFF.
func showValue(name string, v types.Datum) string {
	if sysVars[name].typ == varBool {
		if types.ToBool(v) {
			return "ON"
		}
		return "OFF"
	}
	return v.String()
}

// strict reports sql_mode's strict mode.
func (s *Session) strict() bool { return s.sqlMode().Strict() }

// execSet runs SET: system variables (SESSION, GLOBAL), user variables
// and SET NAMES.
func (s *Session) execSet(ctx context.Context, x *ast.SetStmt, params []types.Datum) error {
	ec := s.evalCtx(ctx, params)
	for _, v := range x.Variables {
		name := strings.ToLower(v.Name)
		if name == ast.SetNames || name == ast.SetCharset {
			continue
		}
		var val types.Datum
		if v.Value != nil {
			if _, isDefault := v.Value.(*ast.DefaultExpr); isDefault {
				if def, ok := sysVars[name]; ok {
					val = def.def
				}
			} else if cn, ok := v.Value.(*ast.ColumnNameExpr); ok && v.IsSystem {
				// SET autocommit = ON: a bare word is a string.
				val = types.NewString(cn.Name.Name.O)
			} else if hasSubquery(v.Value) {
				var err error
				if val, err = s.evalWithSubquery(ctx, v.Value); err != nil {
					return err
				}
			} else {
				b := &expression.Builder{Clause: "field list"}
				e, err := b.Build(v.Value)
				if err != nil {
					return err
				}
				if val, err = e.Eval(ec, nil); err != nil {
					return err
				}
			}
		}
		if !v.IsSystem {
			s.userVars[name] = val.Clone()
			continue
		}
		if name == "transaction_isolation" || name == "tx_isolation" {
			if v.IsGlobal {
				continue
			}
		}
		if err := s.setSysVar(name, val, v.IsGlobal); err != nil {
			return err
		}
		if name == "autocommit" && !v.IsGlobal && s.autocommit() && (s.txn != nil || s.deferred) {
			if err := s.commit(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
