package planner

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// InfoSchemaDB is the database of the virtual tables that describe the
// catalog. Its rows are computed when a query runs (executor.Ctx.MemTable).
const InfoSchemaDB = "information_schema"

// MemTable reads a virtual table.
type MemTable struct {
	TableSource
}

// memTableColumns lists each virtual table's columns: the name, after a
// prefix that gives its type: '#' BIGINT UNSIGNED, '%' DOUBLE, '@'
// DATETIME(6) (TiDB has TIMESTAMP: the same values, in the session's time
// zone), none a string. Names follow MySQL 8, and TiDB for TiDB's
// tables.
var memTableColumns = map[string][]string{
	"schemata": {"CATALOG_NAME", "SCHEMA_NAME", "DEFAULT_CHARACTER_SET_NAME", "DEFAULT_COLLATION_NAME", "SQL_PATH", "DEFAULT_ENCRYPTION"},
	"tables": {"TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "TABLE_TYPE", "ENGINE", "#VERSION", "ROW_FORMAT",
		"#TABLE_ROWS", "#AVG_ROW_LENGTH", "#DATA_LENGTH", "#MAX_DATA_LENGTH", "#INDEX_LENGTH", "#DATA_FREE",
		"#AUTO_INCREMENT", "CREATE_TIME", "UPDATE_TIME", "CHECK_TIME", "TABLE_COLLATION", "#CHECKSUM",
		"CREATE_OPTIONS", "TABLE_COMMENT"},
	"columns": {"TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "#ORDINAL_POSITION", "COLUMN_DEFAULT",
		"IS_NULLABLE", "DATA_TYPE", "#CHARACTER_MAXIMUM_LENGTH", "#CHARACTER_OCTET_LENGTH", "#NUMERIC_PRECISION",
		"#NUMERIC_SCALE", "#DATETIME_PRECISION", "CHARACTER_SET_NAME", "COLLATION_NAME", "COLUMN_TYPE", "COLUMN_KEY",
		"EXTRA", "PRIVILEGES", "COLUMN_COMMENT", "GENERATION_EXPRESSION"},
	"statistics": {"TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "#NON_UNIQUE", "INDEX_SCHEMA", "INDEX_NAME",
		"#SEQ_IN_INDEX", "COLUMN_NAME", "COLLATION", "#CARDINALITY", "#SUB_PART", "PACKED", "NULLABLE",
		"INDEX_TYPE", "COMMENT", "INDEX_COMMENT", "IS_VISIBLE", "EXPRESSION"},
	"engines":           {"ENGINE", "SUPPORT", "COMMENT", "TRANSACTIONS", "XA", "SAVEPOINTS"},
	"character_sets":    {"CHARACTER_SET_NAME", "DEFAULT_COLLATE_NAME", "DESCRIPTION", "#MAXLEN"},
	"collations":        {"COLLATION_NAME", "CHARACTER_SET_NAME", "#ID", "IS_DEFAULT", "IS_COMPILED", "#SORTLEN", "PAD_ATTRIBUTE"},
	"key_column_usage":  {"CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME", "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "#ORDINAL_POSITION", "#POSITION_IN_UNIQUE_CONSTRAINT", "REFERENCED_TABLE_SCHEMA", "REFERENCED_TABLE_NAME", "REFERENCED_COLUMN_NAME"},
	"table_constraints": {"CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME", "TABLE_SCHEMA", "TABLE_NAME", "CONSTRAINT_TYPE", "ENFORCED"},
	"views":             {"TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "VIEW_DEFINITION", "CHECK_OPTION", "IS_UPDATABLE", "DEFINER", "SECURITY_TYPE", "CHARACTER_SET_CLIENT", "COLLATION_CONNECTION"},
	"routines":          {"SPECIFIC_NAME", "ROUTINE_CATALOG", "ROUTINE_SCHEMA", "ROUTINE_NAME", "ROUTINE_TYPE"},
	"processlist":       {"#ID", "USER", "HOST", "DB", "COMMAND", "#TIME", "STATE", "INFO"},
	"session_variables": {"VARIABLE_NAME", "VARIABLE_VALUE"},
	"global_variables":  {"VARIABLE_NAME", "VARIABLE_VALUE"},
	"partitions":        {"TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "PARTITION_NAME", "#TABLE_ROWS"},
	"triggers": {"TRIGGER_CATALOG", "TRIGGER_SCHEMA", "TRIGGER_NAME", "EVENT_MANIPULATION", "EVENT_OBJECT_CATALOG",
		"EVENT_OBJECT_SCHEMA", "EVENT_OBJECT_TABLE", "#ACTION_ORDER", "ACTION_CONDITION", "ACTION_STATEMENT",
		"ACTION_ORIENTATION", "ACTION_TIMING", "ACTION_REFERENCE_OLD_TABLE", "ACTION_REFERENCE_NEW_TABLE",
		"ACTION_REFERENCE_OLD_ROW", "ACTION_REFERENCE_NEW_ROW", "CREATED", "SQL_MODE", "DEFINER",
		"CHARACTER_SET_CLIENT", "COLLATION_CONNECTION", "DATABASE_COLLATION"},
	// The slow query log (slowlog), TiDB's columns that Basalt fills.
	"slow_query": {"@Time", "#Txn_start_ts", "User", "Host", "#Conn_ID", "%Query_time", "%Parse_time",
		"%Compile_time", "%Process_time", "#Total_keys", "#Process_keys", "DB", "#Is_internal", "Digest",
		"#Mem_max", "#Result_rows", "#Prepared", "#Plan_from_cache", "#Succ", "Plan_digest", "Query"},
	// The statement summary (stmtsummary); latencies in nanoseconds.
	"statements_summary":         stmtSummaryColumns,
	"statements_summary_history": stmtSummaryColumns,
	// TiDB's: the cluster's servers (session/cluster_info.go).
	"cluster_info": {"TYPE", "INSTANCE", "STATUS_ADDRESS", "VERSION", "GIT_HASH", "START_TIME", "UPTIME", "#SERVER_ID"},
	// CHECK constraints are accepted and not kept (ddl), so it has no rows.
	"check_constraints": {"CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME", "CHECK_CLAUSE"},
	"referential_constraints": {"CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME", "UNIQUE_CONSTRAINT_CATALOG",
		"UNIQUE_CONSTRAINT_SCHEMA", "UNIQUE_CONSTRAINT_NAME", "MATCH_OPTION", "UPDATE_RULE", "DELETE_RULE", "TABLE_NAME",
		"REFERENCED_TABLE_NAME"},
}

var stmtSummaryColumns = []string{"@SUMMARY_BEGIN_TIME", "@SUMMARY_END_TIME", "STMT_TYPE", "SCHEMA_NAME",
	"DIGEST", "DIGEST_TEXT", "SAMPLE_USER", "#EXEC_COUNT", "#SUM_ERRORS", "#SUM_WARNINGS",
	"#SUM_LATENCY", "#MAX_LATENCY", "#MIN_LATENCY", "#AVG_LATENCY", "#P95_LATENCY",
	"#AVG_PARSE_LATENCY", "#MAX_PARSE_LATENCY", "#AVG_COMPILE_LATENCY", "#MAX_COMPILE_LATENCY",
	"#AVG_MEM", "#MAX_MEM", "#AVG_PROCESSED_KEYS", "#MAX_PROCESSED_KEYS", "#SUM_AFFECTED_ROWS", "%AVG_AFFECTED_ROWS", "%AVG_RESULT_ROWS",
	"#MAX_RESULT_ROWS", "#MIN_RESULT_ROWS", "#PREPARED", "#PLAN_CACHE_HITS", "@FIRST_SEEN", "@LAST_SEEN",
	"QUERY_SAMPLE_TEXT", "PLAN_DIGEST"}

// MemTableNames lists the virtual tables, for SHOW TABLES.
func MemTableNames() []string {
	out := make([]string, 0, len(memTableColumns))
	for n := range memTableColumns {
		out = append(out, strings.ToUpper(n))
	}
	return out
}

// memTableInfo describes a virtual table, or returns nil.
func memTableInfo(name string) *catalog.TableInfo {
	cols, ok := memTableColumns[strings.ToLower(name)]
	if !ok {
		return nil
	}
	t := &catalog.TableInfo{ID: -1, Name: strings.ToUpper(name)}
	for i, c := range cols {
		ft := types.FieldType{Tp: mysql.TypeVarString, Flen: 512, Charset: "utf8mb4"}
		switch c[0] {
		case '#':
			ft = types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.UnsignedFlag}
		case '%':
			ft = types.FieldType{Tp: mysql.TypeDouble, Flen: 22, Decimal: 31, Flag: mysql.BinaryFlag}
		case '@':
			ft = types.FieldType{Tp: mysql.TypeDatetime, Flen: 26, Decimal: 6, Flag: mysql.BinaryFlag}
		}
		if strings.ContainsRune("#%@", rune(c[0])) {
			c = c[1:]
		}
		t.Columns = append(t.Columns, &catalog.ColumnInfo{ID: int64(i + 1), Name: c, Offset: i, Type: ft})
	}
	return t
}

// MemTableColumns returns the column names of a virtual table.
func MemTableColumns(name string) []string {
	t := memTableInfo(name)
	if t == nil {
		return nil
	}
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}
