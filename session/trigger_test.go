package session_test

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/session"

	"github.com/go-sql-driver/mysql"
)

// serveDir serves Basalt from the store in dir until stop is called.
func serveDir(t *testing.T, dir string) (addr string, stop func()) {
	t.Helper()
	_, _, a, stop := serveStore(t, dir, session.Config{PessimisticByDefault: true, LockWaitTimeout: time.Second})
	return a.String(), stop
}

func mustExec(t *testing.T, db *sql.DB, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func queryInts(t *testing.T, db *sql.DB, q string) []int {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestTriggerRestart: triggers are stored in the catalog and fire after a
// restart, in the order they were given.
func TestTriggerRestart(t *testing.T) {
	dir := t.TempDir()
	addr, stop := serveDir(t, dir)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/", addr))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	mustExec(t, db, "CREATE DATABASE tr", "USE tr",
		"CREATE TABLE t (a INT PRIMARY KEY, b INT)",
		"CREATE TABLE log (a INT, b INT)",
		"CREATE TRIGGER t_bi BEFORE INSERT ON t FOR EACH ROW SET NEW.b = NEW.a * 2",
		"CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW BEGIN INSERT INTO log VALUES (NEW.a, NEW.b); END",
		"CREATE TRIGGER t_ai0 AFTER INSERT ON t FOR EACH ROW PRECEDES t_ai INSERT INTO log VALUES (0, NEW.a)")
	db.Close()
	stop()

	addr, stop = serveDir(t, dir)
	defer stop()
	db, err = sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/tr", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	mustExec(t, db, "INSERT INTO t (a) VALUES (21)")
	if got := queryInts(t, db, "SELECT b FROM t"); len(got) != 1 || got[0] != 42 {
		t.Errorf("after restart the BEFORE trigger set b = %v, want [42]", got)
	}
	// t_ai0 PRECEDES t_ai: its row comes first.
	if got := queryInts(t, db, "SELECT a FROM log"); fmt.Sprint(got) != "[0 21]" {
		t.Errorf("after restart the AFTER triggers logged %v, want [0 21]", got)
	}
	rows := showRows(t, db, "SHOW TRIGGERS")
	var names []string
	for _, r := range rows {
		names = append(names, r["Trigger"]+"/"+r["Event"]+"/"+r["Timing"]+"/"+r["Table"])
	}
	if want := "t_bi/INSERT/BEFORE/t t_ai0/INSERT/AFTER/t t_ai/INSERT/AFTER/t"; strings.Join(names, " ") != want {
		t.Errorf("SHOW TRIGGERS = %v, want %s", names, want)
	}
	if rows[0]["Statement"] != "SET NEW.b = NEW.a * 2" || rows[0]["Definer"] == "" {
		t.Errorf("SHOW TRIGGERS row %v", rows[0])
	}
	if n := len(showRows(t, db, "SHOW TRIGGERS FROM tr LIKE 'nomatch%'")); n != 0 {
		t.Errorf("SHOW TRIGGERS LIKE 'nomatch%%' listed %d", n)
	}
	sc := showRows(t, db, "SHOW CREATE TRIGGER t_ai")
	if len(sc) != 1 || !strings.Contains(sc[0]["SQL Original Statement"],
		"TRIGGER `t_ai` AFTER INSERT ON `t` FOR EACH ROW BEGIN INSERT INTO log VALUES (NEW.a, NEW.b); END") {
		t.Errorf("SHOW CREATE TRIGGER = %v", sc)
	}
	var me *mysql.MySQLError
	if _, err := db.Query("SHOW CREATE TRIGGER nosuch"); !errors.As(err, &me) || me.Number != 1360 {
		t.Errorf("SHOW CREATE TRIGGER nosuch: %v, want 1360", err)
	}
}

// TestTriggerPrivileges: CREATE and DROP TRIGGER need the TRIGGER
// privilege on the table; the trigger then runs for any writer.
func TestTriggerPrivileges(t *testing.T) {
	_, _, a := serveBasalt(t)
	addr := a.String()
	root, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	mustExec(t, root, "CREATE DATABASE p", "CREATE TABLE p.t (a INT)", "CREATE TABLE p.log (a INT)",
		"CREATE USER 'u'@'%' IDENTIFIED BY 'pw'", "GRANT SELECT, INSERT ON p.* TO 'u'@'%'")
	u, err := sql.Open("mysql", fmt.Sprintf("u:pw@tcp(%s)/p", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	u.SetMaxOpenConns(1)
	create := "CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW INSERT INTO log VALUES (NEW.a)"
	var me *mysql.MySQLError
	if _, err := u.Exec(create); !errors.As(err, &me) || me.Number != 1142 || !strings.Contains(me.Message, "TRIGGER command denied") {
		t.Fatalf("CREATE TRIGGER without the privilege: %v, want 1142", err)
	}
	mustExec(t, root, "GRANT TRIGGER ON p.t TO 'u'@'%'")
	mustExec(t, u, create)
	if _, err := u.Exec("CREATE DEFINER = 'root'@'localhost' TRIGGER t_bi BEFORE INSERT ON t FOR EACH ROW SET @a = 1"); !errors.As(err, &me) || me.Number != 1227 {
		t.Errorf("CREATE TRIGGER with another DEFINER: %v, want 1227", err)
	}
	mustExec(t, u, "INSERT INTO t VALUES (7)")
	if got := queryInts(t, root, "SELECT a FROM p.log"); fmt.Sprint(got) != "[7]" {
		t.Errorf("log = %v, want [7]", got)
	}
	mustExec(t, root, "REVOKE TRIGGER ON p.t FROM 'u'@'%'")
	if _, err := u.Exec("DROP TRIGGER t_ai"); !errors.As(err, &me) || me.Number != 1142 {
		t.Errorf("DROP TRIGGER without the privilege: %v, want 1142", err)
	}
	mustExec(t, root, "DROP TRIGGER p.t_ai")
}

// TestTriggerMultiStatement: in a multi-statement query the ';' inside a
// trigger's BEGIN ... END does not end the CREATE TRIGGER.
func TestTriggerMultiStatement(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	mustExec(t, db, "CREATE DATABASE m; USE m; CREATE TABLE t (a INT); CREATE TABLE log (a INT); "+
		"CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW BEGIN INSERT INTO log VALUES (NEW.a); INSERT INTO log VALUES (NEW.a + 1); END; "+
		"INSERT INTO t VALUES (10); DROP TRIGGER t_ai; INSERT INTO t VALUES (20)")
	if got := queryInts(t, db, "SELECT a FROM log ORDER BY a"); fmt.Sprint(got) != "[10 11]" {
		t.Errorf("log = %v, want [10 11]", got)
	}
	// Trigger statements are not preparable (1295, as in MySQL); a
	// prepared write runs triggers as a plain one does.
	var me *mysql.MySQLError
	if _, err := db.Prepare("DROP TRIGGER IF EXISTS t_x"); !errors.As(err, &me) || me.Number != 1295 {
		t.Errorf("prepare DROP TRIGGER: %v, want 1295", err)
	}
	mustExec(t, db, "CREATE TRIGGER t_bi BEFORE INSERT ON t FOR EACH ROW SET NEW.a = NEW.a + 100")
	if _, err := db.Exec("INSERT INTO t VALUES (?)", 5); err != nil {
		t.Fatal(err)
	}
	if got := queryInts(t, db, "SELECT a FROM t ORDER BY a"); fmt.Sprint(got) != "[10 20 105]" {
		t.Errorf("t = %v, want [10 20 105]", got)
	}
}
