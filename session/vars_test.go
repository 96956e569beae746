package session_test

import (
	"database/sql"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/testkit"
	"github.com/go-sql-driver/mysql"
)

// sysVarTypes are the column types SELECT @@name has in MySQL and MariaDB:
// booleans and signed integers are BIGINT, unsigned integers BIGINT
// UNSIGNED, numbers DOUBLE, the rest text. A client reads autocommit as 0
// or 1, not as the string '0' (which Python takes for true).
var sysVarTypes = []struct{ name, typ string }{
	{"autocommit", "BIGINT"},
	{"sql_safe_updates", "BIGINT"},
	{"foreign_key_checks", "BIGINT"},
	{"unique_checks", "BIGINT"},
	{"sql_notes", "BIGINT"},
	{"tx_read_only", "BIGINT"},
	{"big_tables", "BIGINT"},
	{"max_allowed_packet", "UNSIGNED BIGINT"},
	{"wait_timeout", "UNSIGNED BIGINT"},
	{"innodb_lock_wait_timeout", "UNSIGNED BIGINT"},
	{"auto_increment_increment", "UNSIGNED BIGINT"},
	{"div_precision_increment", "UNSIGNED BIGINT"},
	{"group_concat_max_len", "UNSIGNED BIGINT"},
	{"lower_case_table_names", "UNSIGNED BIGINT"},
	{"port", "UNSIGNED BIGINT"},
	{"sql_select_limit", "UNSIGNED BIGINT"},
	{"max_connections", "UNSIGNED BIGINT"},
	{"warning_count", "UNSIGNED BIGINT"},
	{"last_insert_id", "UNSIGNED BIGINT"},
	{"long_query_time", "DOUBLE"},
	{"sql_mode", "VARCHAR"},
	{"tx_isolation", "VARCHAR"},
	{"time_zone", "VARCHAR"},
}

// TestSysVarTypes checks the type of each @@name of sysVarTypes, by the
// text protocol and by the binary one (a prepared statement), and that
// @@port is the port the server listens on. Unless -short, the same types
// are checked on a MariaDB, to hold the list to the MySQL family's.
func TestSysVarTypes(t *testing.T) {
	check := func(t *testing.T, dsn string) {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var cols []string
		for _, v := range sysVarTypes {
			cols = append(cols, "@@"+v.name)
		}
		query := "SELECT " + strings.Join(cols, ", ")
		for _, prepared := range []bool{false, true} {
			var rows *sql.Rows
			if prepared {
				rows, err = db.Query(query+" FROM DUAL WHERE ? = 1", 1)
			} else {
				rows, err = db.Query(query)
			}
			if err != nil {
				t.Fatal(err)
			}
			cts, err := rows.ColumnTypes()
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]any, len(cts))
			ptrs := make([]any, len(cts))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if !rows.Next() {
				t.Fatalf("no row: %v", rows.Err())
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			rows.Close()
			for i, v := range sysVarTypes {
				if got := cts[i].DatabaseTypeName(); got != v.typ {
					t.Errorf("prepared=%v: @@%s is %s, want %s", prepared, v.name, got, v.typ)
				}
			}
			// The driver gives integers as int64 and uint64.
			if ac, ok := vals[0].(int64); !ok || ac != 1 {
				t.Errorf("prepared=%v: @@autocommit = %#v, want int64 1", prepared, vals[0])
			}
			cfg, err := mysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(cfg.Addr)
			for i, v := range sysVarTypes {
				if v.name == "port" && fmt.Sprint(vals[i]) != port {
					t.Errorf("prepared=%v: @@port = %v, want %s", prepared, vals[i], port)
				}
			}
		}
	}
	t.Run("basalt", func(t *testing.T) { check(t, startBasalt(t)) })
	t.Run("mariadb", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a MariaDB")
		}
		check(t, testkit.StartMariaDB(t).DSN(""))
	})
}
