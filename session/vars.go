package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// sysVarDef is a system variable Basalt knows. Values are kept as the
// datum SELECT @@name returns. Variables from TiDB's reports are accepted so
// that their tuning scripts run; the ones that mean something here take
// effect (autocommit, tidb_txn_mode, innodb_lock_wait_timeout, sql_mode,
// tidb_prepared_plan_cache_size ...).
type sysVarDef struct {
	def      types.Datum
	readOnly bool
	// globalOnly variables have no session value.
	globalOnly bool
	// boolean variables accept ON/OFF/1/0/TRUE/FALSE and read back as 1/0.
	boolean bool
}

func strVar(s string) sysVarDef     { return sysVarDef{def: types.NewString(s)} }
func intVar(n int64) sysVarDef      { return sysVarDef{def: types.NewInt(n)} }
func boolVar(b bool) sysVarDef      { return sysVarDef{def: types.NewBool(b), boolean: true} }
func roVar(d types.Datum) sysVarDef { return sysVarDef{def: d, readOnly: true} }

const defaultSQLMode = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

var sysVars = map[string]sysVarDef{
	"autocommit":                          boolVar(true),
	"sql_mode":                            strVar(defaultSQLMode),
	"transaction_isolation":               strVar("REPEATABLE-READ"),
	"tx_isolation":                        strVar("REPEATABLE-READ"),
	"transaction_read_only":               boolVar(false),
	"tx_read_only":                        boolVar(false),
	"innodb_lock_wait_timeout":            intVar(50),
	"lock_wait_timeout":                   intVar(31536000),
	"max_allowed_packet":                  intVar(67108864),
	"net_buffer_length":                   intVar(16384),
	"max_execution_time":                  intVar(0),
	"wait_timeout":                        intVar(28800),
	"interactive_timeout":                 intVar(28800),
	"net_read_timeout":                    intVar(30),
	"net_write_timeout":                   intVar(60),
	"character_set_client":                strVar("utf8mb4"),
	"character_set_connection":            strVar("utf8mb4"),
	"character_set_results":               strVar("utf8mb4"),
	"character_set_server":                strVar("utf8mb4"),
	"character_set_database":              strVar("utf8mb4"),
	"character_set_system":                roVar(types.NewString("utf8")),
	"character_set_filesystem":            strVar("binary"),
	"collation_connection":                strVar("utf8mb4_general_ci"),
	"collation_server":                    strVar("utf8mb4_general_ci"),
	"collation_database":                  strVar("utf8mb4_general_ci"),
	"init_connect":                        strVar(""),
	"time_zone":                           strVar("SYSTEM"),
	"system_time_zone":                    roVar(types.NewString("UTC")),
	"lower_case_table_names":              roVar(types.NewInt(2)),
	"version_comment":                     roVar(types.NewString("Basalt, a MySQL-compatible distributed database")),
	"version_compile_os":                  roVar(types.NewString("Linux")),
	"version_compile_machine":             roVar(types.NewString("x86_64")),
	"license":                             roVar(types.NewString("Apache License 2.0")),
	"auto_increment_increment":            intVar(1),
	"auto_increment_offset":               intVar(1),
	"sql_select_limit":                    sysVarDef{def: types.NewUint(18446744073709551615)},
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
	"query_cache_size":                    intVar(0),
	"query_cache_type":                    strVar("OFF"),
	"div_precision_increment":             intVar(4),
	"group_concat_max_len":                intVar(1024),
	"default_storage_engine":              strVar("InnoDB"),
	"default_tmp_storage_engine":          strVar("InnoDB"),
	"storage_engine":                      strVar("InnoDB"),
	"max_connections":                     {def: types.NewInt(0), globalOnly: true},
	"port":                                roVar(types.NewInt(4000)),
	"socket":                              roVar(types.NewString("")),
	"hostname":                            roVar(types.NewString("localhost")),
	"datadir":                             roVar(types.NewString("")),
	"innodb_buffer_pool_size":             intVar(134217728),
	"default_week_format":                 intVar(0),
	"explicit_defaults_for_timestamp":     boolVar(true),
	"block_encryption_mode":               strVar("aes-128-ecb"),
	"cte_max_recursion_depth":             intVar(1000),
	"windowing_use_high_precision":        boolVar(true),
	"tidb_txn_mode":                       strVar(""),
	"tidb_enable_async_commit":            boolVar(true),
	"tidb_enable_1pc":                     boolVar(true),
	"tidb_guarantee_linearizability":      boolVar(true),
	"tidb_prepared_plan_cache_size":       intVar(100),
	"tidb_enable_prepared_plan_cache":     boolVar(true),
	"tidb_executor_concurrency":           intVar(5),
	"tidb_distsql_scan_concurrency":       intVar(15),
	"tidb_retry_limit":                    intVar(10),
	"tidb_disable_txn_auto_retry":         boolVar(true),
	"tidb_mem_quota_query":                intVar(1 << 30),
	"tidb_gc_life_time":                   strVar("10m0s"),
	"tidb_enable_clustered_index":         strVar("ON"),
	"tidb_general_log":                    boolVar(false),
	"tidb_enable_stmt_summary":            boolVar(true),
	"tidb_hashagg_final_concurrency":      intVar(-1),
	"tidb_hashagg_partial_concurrency":    intVar(-1),
	"tidb_index_lookup_concurrency":       intVar(-1),
	"tidb_index_serial_scan_concurrency":  intVar(1),
	"tidb_session_plan_cache_size":        intVar(100),
	"tidb_enable_non_prepared_plan_cache": boolVar(false),
	"tidb_isolation_read_engines":         strVar("tikv,tidb"),
	"tidb_opt_agg_push_down":              boolVar(false),
	"tidb_enable_tmp_storage_on_oom":      boolVar(true),
	"tidb_slow_log_threshold":             intVar(300),
	"innodb_flush_log_at_trx_commit":      intVar(1),
	"sync_binlog":                         intVar(1),
	"transaction_alloc_block_size":        intVar(8192),
	"optimizer_switch":                    strVar("index_merge=on"),
	"completion_type":                     strVar("NO_CHAIN"),
	"tmp_table_size":                      intVar(16777216),
	"max_heap_table_size":                 intVar(16777216),
	"long_query_time":                     intVar(10),
	"slow_query_log":                      boolVar(false),
	"general_log":                         boolVar(false),
	"max_prepared_stmt_count":             intVar(16382),
	"max_sp_recursion_depth":              intVar(0),
	"old_passwords":                       intVar(0),
	"default_authentication_plugin":       roVar(types.NewString("mysql_native_password")),
	"thread_handling":                     roVar(types.NewString("one-thread-per-connection")),
	"require_secure_transport":            {def: types.NewBool(false), boolean: true, globalOnly: true},
	// local_infile allows LOAD DATA LOCAL (loaddata.go). On, as in MariaDB
	// and MySQL 5.7 (MySQL 8 has it off).
	"secure_file_priv": roVar(types.NewString("")),
	"local_infile":     {def: types.NewBool(true), boolean: true, globalOnly: true},
}

func init() {
	sysVars["version"] = roVar(types.NewString(expression.Version))
	// The zone SYSTEM means, by its abbreviation, as MySQL reports it.
	zone, _ := time.Now().Zone()
	sysVars["system_time_zone"] = roVar(types.NewString(zone))
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
		return types.NewInt(int64(len(s.warnings))), nil
	case "error_count":
		return types.NewInt(0), nil
	case "have_ssl", "have_openssl":
		if s.d.conns != nil && s.d.conns.TLSEnabled() {
			return types.NewString("YES"), nil
		}
	}
	if v, ok := s.serverVar(name, global); ok {
		return v, nil
	}
	def, ok := sysVars[name]
	if !ok {
		return types.Null, errno.New(errno.ErUnknownSystemVariable, "Unknown system variable '%s'", name)
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

// setSysVar sets a system variable at session or global scope.
func (s *Session) setSysVar(name string, v types.Datum, global bool) error {
	name = strings.ToLower(name)
	def, ok := sysVars[name]
	if !ok {
		return errno.New(errno.ErUnknownSystemVariable, "Unknown system variable '%s'", name)
	}
	if def.readOnly {
		return errno.New(1238, "Variable '%s' is a read only variable", name)
	}
	if def.globalOnly && !global {
		return errno.New(errno.ErIncorrectGlobalLocalVar, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
	}
	if def.boolean {
		b, ok := parseBool(v)
		if !ok {
			return errno.New(errno.ErWrongValueForVar, "Variable '%s' can't be set to the value of '%s'", name, v.String())
		}
		v = types.NewBool(b)
	} else if def.def.Kind() == types.KindInt || def.def.Kind() == types.KindUint {
		n, _, tr := types.ToInt(v)
		if tr || v.IsNull() {
			return errno.New(errno.ErWrongTypeForVar, "Incorrect argument type to variable '%s'", name)
		}
		if def.def.Kind() == types.KindUint {
			v = types.NewUint(uint64(n))
		} else {
			v = types.NewInt(n)
		}
	} else {
		if v.IsNull() {
			v = types.NewString("")
		}
		v = types.NewString(string(types.ToText(v)))
	}
	if name == "sql_mode" {
		m, err := expression.ParseSQLMode(v.Str())
		if err != nil {
			return err
		}
		v = types.NewString(m.String())
	}
	if name == "time_zone" {
		loc, ok := expression.ParseTimeZone(v.Str())
		if !ok {
			return errno.New(errno.ErUnknownTimeZone, "Unknown or incorrect time zone: '%s'", v.Str())
		}
		if s := v.Str(); s[0] == '+' || s[0] == '-' {
			// An offset reads back as MySQL writes it: '+8:00' is '+08:00'.
			_, off := time.Now().In(loc).Zone()
			sign := '+'
			if off < 0 {
				sign, off = '-', -off
			}
			v = types.NewString(fmt.Sprintf("%c%02d:%02d", sign, off/3600, off/60%60))
		}
	}
	if name == "tidb_txn_mode" {
		m := strings.ToLower(v.Str())
		if m != "" && m != "optimistic" && m != "pessimistic" {
			return errno.New(errno.ErWrongValueForVar, "Variable '%s' can't be set to the value of '%s'", name, v.Str())
		}
	}
	v, err := s.checkLimit(name, v, global)
	if err != nil {
		return err
	}
	if global {
		s.d.mu.Lock()
		s.d.globals[name] = v
		s.d.mu.Unlock()
		s.d.globalsChanged.Add(1)
	} else {
		s.vars[name] = v
		s.hot.valid = false
	}
	s.setLimit(name, v, global)
	return nil
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

// strict reports sql_mode's strict mode.
func (s *Session) strict() bool { return s.sqlMode().Strict() }

// execSet runs SET: system variables (SESSION, GLOBAL), user variables
// and SET NAMES.
func (s *Session) execSet(ctx context.Context, x *ast.SetStmt) error {
	ec := s.evalCtx(ctx, nil)
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
		if name == "autocommit" && !v.IsGlobal && s.autocommit() && s.txn != nil {
			if err := s.commit(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
