package e2e

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
	"github.com/go-sql-driver/mysql"
)

// userDSN is a go-sql-driver/mysql DSN for user over TCP to srv.
func userDSN(srv *testkit.Server, user, password, db string, params map[string]string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = user, password, db
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(srv.Host(), strconv.Itoa(srv.Port()))
	cfg.Timeout = 10 * time.Second
	cfg.Params = params
	return cfg.FormatDSN()
}

// openAs opens one connection as user, failing the test if it cannot.
func openAs(t *testing.T, srv *testkit.Server, user, password, db string) *sql.Conn {
	t.Helper()
	conn, err := connectAs(srv, user, password, db, nil)
	if err != nil {
		t.Fatalf("connecting as %s: %v", user, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// connectAs opens one connection as user and returns the error of the
// login (a *mysql.MySQLError when the server refused it).
func connectAs(srv *testkit.Server, user, password, db string, params map[string]string) (*sql.Conn, error) {
	pool, err := sql.Open("mysql", userDSN(srv, user, password, db, params))
	if err != nil {
		return nil, err
	}
	pool.SetMaxIdleConns(0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return conn, nil
}

// wantCode checks that err is the MySQL error code.
func wantCode(t *testing.T, what string, err error, code uint16) {
	t.Helper()
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != code {
		t.Errorf("%s: got %v, want error %d", what, err, code)
	}
}

// execOK runs q on db or conn, failing the test if it fails.
func execOK(t *testing.T, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q string) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func queryInt(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestAccessControl logs in as limited users next to root and checks what
// they may and may not do: denied logins (1045, 1044), denied statements
// (1142, 1143, 1044, 1227) that change nothing, grants and revokes taking
// effect on open connections, the most specific host winning, and accounts
// surviving a restart. BASALT_E2E_TARGET=mariadb runs it against MariaDB.
func TestAccessControl(t *testing.T) {
	target := loadConfig(t).target
	srv := testkit.StartTarget(t, target)
	root := srv.OpenDB(t, "")
	ctx := context.Background()

	for _, q := range []string{
		"DROP DATABASE IF EXISTS acl_app", "DROP DATABASE IF EXISTS acl_secret",
		"CREATE DATABASE acl_app", "CREATE DATABASE acl_secret",
		"CREATE TABLE acl_app.items (id INT PRIMARY KEY, name VARCHAR(20))",
		"CREATE TABLE acl_app.audit (id INT PRIMARY KEY, note VARCHAR(20))",
		"CREATE TABLE acl_secret.keys_ (id INT PRIMARY KEY)",
		"INSERT INTO acl_app.items VALUES (1, 'one'), (2, 'two')",
		"INSERT INTO acl_app.audit VALUES (1, 'x')",
		"INSERT INTO acl_secret.keys_ VALUES (7)",
		"CREATE USER 'reader'@'%' IDENTIFIED BY 'r-pw'",
		"CREATE USER 'writer'@'%' IDENTIFIED BY 'w-pw'",
		"GRANT SELECT ON acl_app.* TO 'reader'@'%'",
		"GRANT INSERT, UPDATE, DELETE ON acl_app.audit TO 'writer'@'%'",
	} {
		execOK(t, root, q)
	}

	t.Run("login", func(t *testing.T) {
		_, err := connectAs(srv, "reader", "wrong", "", nil)
		wantCode(t, "wrong password", err, 1045)
		_, err = connectAs(srv, "nobody", "", "", nil)
		wantCode(t, "unknown user", err, 1045)
		_, err = connectAs(srv, "reader", "r-pw", "acl_secret", nil)
		wantCode(t, "database without privileges", err, 1044)
		_, err = connectAs(srv, "reader", "r-pw", "acl_nosuch", nil)
		wantCode(t, "unknown database without privileges", err, 1044)
		c := openAs(t, srv, "reader", "r-pw", "acl_app")
		var cu string
		if err := c.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&cu); err != nil || cu != "reader@%" {
			t.Errorf("CURRENT_USER() = %q, %v; want reader@%%", cu, err)
		}
	})

	t.Run("reader", func(t *testing.T) {
		c := openAs(t, srv, "reader", "r-pw", "acl_app")
		if n := 0; c.QueryRowContext(ctx, "SELECT COUNT(*) FROM items").Scan(&n) != nil || n != 2 {
			t.Errorf("reader cannot read acl_app.items (count %d)", n)
		}
		_, err := c.ExecContext(ctx, "INSERT INTO items VALUES (3, 'three')")
		wantCode(t, "INSERT with SELECT only", err, 1142)
		_, err = c.ExecContext(ctx, "DELETE FROM items")
		wantCode(t, "DELETE with SELECT only", err, 1142)
		_, err = c.ExecContext(ctx, "DROP TABLE items")
		wantCode(t, "DROP TABLE", err, 1142)
		_, err = c.ExecContext(ctx, "CREATE TABLE t2 (id INT PRIMARY KEY)")
		wantCode(t, "CREATE TABLE", err, 1142)
		_, err = c.QueryContext(ctx, "SELECT * FROM acl_secret.keys_")
		wantCode(t, "SELECT in another database", err, 1142)
		_, err = c.ExecContext(ctx, "USE acl_secret")
		wantCode(t, "USE", err, 1044)
		_, err = c.ExecContext(ctx, "CREATE DATABASE acl_new")
		wantCode(t, "CREATE DATABASE", err, 1044)
		_, err = c.ExecContext(ctx, "DROP DATABASE acl_app")
		wantCode(t, "DROP DATABASE", err, 1044)
		_, err = c.ExecContext(ctx, "CREATE USER intruder")
		wantCode(t, "CREATE USER", err, 1227)
		_, err = c.ExecContext(ctx, "GRANT SELECT ON acl_secret.* TO reader")
		wantCode(t, "GRANT without GRANT OPTION", err, 1044)
		_, err = c.QueryContext(ctx, "SELECT * FROM mysql.user")
		wantCode(t, "reading mysql.user", err, 1142)
		_, err = c.PrepareContext(ctx, "DELETE FROM items WHERE id = ?")
		wantCode(t, "preparing a DELETE", err, 1142)

		rows, err := c.QueryContext(ctx, "SHOW DATABASES")
		if err != nil {
			t.Fatal(err)
		}
		var dbs []string
		for rows.Next() {
			var d string
			rows.Scan(&d)
			dbs = append(dbs, d)
		}
		rows.Close()
		if got := strings.Join(dbs, ","); got != "acl_app,information_schema" {
			t.Errorf("SHOW DATABASES as reader = %s, want acl_app,information_schema", got)
		}

		// Nothing the denied statements tried happened.
		if n := queryInt(t, root, "SELECT COUNT(*) FROM acl_app.items"); n != 2 {
			t.Errorf("acl_app.items has %d rows after denied writes, want 2", n)
		}
		if n := queryInt(t, root, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'acl_new'"); n != 0 {
			t.Error("a denied CREATE DATABASE created it")
		}
		if n := queryInt(t, root, "SELECT COUNT(*) FROM mysql.user WHERE user = 'intruder'"); n != 0 {
			t.Error("a denied CREATE USER created the account")
		}

		// A grant takes effect on the open connection; so does a revoke.
		execOK(t, root, "GRANT INSERT ON acl_app.items TO reader")
		execOK(t, c, "INSERT INTO items VALUES (3, 'three')")
		execOK(t, root, "REVOKE INSERT ON acl_app.items FROM reader")
		_, err = c.ExecContext(ctx, "INSERT INTO items VALUES (4, 'four')")
		wantCode(t, "INSERT after REVOKE", err, 1142)
		if n := queryInt(t, root, "SELECT COUNT(*) FROM acl_app.items"); n != 3 {
			t.Errorf("acl_app.items has %d rows, want 3", n)
		}
	})

	t.Run("writer", func(t *testing.T) {
		c := openAs(t, srv, "writer", "w-pw", "acl_app")
		execOK(t, c, "INSERT INTO audit VALUES (2, 'y')")
		execOK(t, c, "UPDATE audit SET note = 'z'") // reads no column
		_, err := c.ExecContext(ctx, "UPDATE audit SET note = 'w' WHERE id = 1")
		wantCode(t, "UPDATE ... WHERE without SELECT", err, 1143)
		_, err = c.ExecContext(ctx, "DELETE FROM audit WHERE id = 1")
		wantCode(t, "DELETE ... WHERE without SELECT", err, 1143)
		_, err = c.QueryContext(ctx, "SELECT * FROM audit")
		wantCode(t, "SELECT without SELECT", err, 1142)
		_, err = c.QueryContext(ctx, "SELECT * FROM items")
		wantCode(t, "SELECT on another table", err, 1142)
		if n := queryInt(t, root, "SELECT COUNT(*) FROM acl_app.audit WHERE note = 'z'"); n != 2 {
			t.Errorf("audit rows with note z: %d, want 2 (and none changed by the denied UPDATE)", n)
		}
		execOK(t, c, "DELETE FROM audit")
		if n := queryInt(t, root, "SELECT COUNT(*) FROM acl_app.audit"); n != 0 {
			t.Errorf("audit has %d rows after DELETE, want 0", n)
		}
	})

	t.Run("own password", func(t *testing.T) {
		execOK(t, root, "CREATE USER 'changer'@'%' IDENTIFIED BY 'old'")
		c := openAs(t, srv, "changer", "old", "")
		_, err := c.ExecContext(ctx, "SET PASSWORD FOR reader = 'stolen'")
		wantCode(t, "SET PASSWORD for another account", err, 1044)
		// MySQL 8 lets an account change its own password with ALTER USER;
		// MariaDB only with SET PASSWORD, which there takes a hash.
		if target == string(testkit.MariaDB) {
			execOK(t, c, "SET PASSWORD = PASSWORD('new')")
		} else {
			execOK(t, c, "ALTER USER CURRENT_USER() IDENTIFIED BY 'new'")
		}
		_, err = connectAs(srv, "changer", "old", "", nil)
		wantCode(t, "old password", err, 1045)
		openAs(t, srv, "changer", "new", "")
		openAs(t, srv, "reader", "r-pw", "") // unchanged
	})

	// 'localhost' matches a client on 127.0.0.1 and is more specific than
	// '%': its password is the one that works.
	t.Run("most specific host", func(t *testing.T) {
		execOK(t, root, "CREATE USER 'twin'@'%' IDENTIFIED BY 'any-host'")
		execOK(t, root, "CREATE USER 'twin'@'localhost' IDENTIFIED BY 'local'")
		execOK(t, root, "GRANT SELECT ON acl_app.* TO 'twin'@'localhost'")
		c := openAs(t, srv, "twin", "local", "acl_app")
		var cu string
		if err := c.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&cu); err != nil || cu != "twin@localhost" {
			t.Errorf("CURRENT_USER() = %q, %v; want twin@localhost", cu, err)
		}
		_, err := connectAs(srv, "twin", "any-host", "", nil)
		wantCode(t, "the less specific account's password", err, 1045)
	})

	t.Run("drop user", func(t *testing.T) {
		execOK(t, root, "CREATE USER 'gone'@'%' IDENTIFIED BY 'pw'")
		openAs(t, srv, "gone", "pw", "")
		execOK(t, root, "DROP USER 'gone'@'%'")
		_, err := connectAs(srv, "gone", "pw", "", nil)
		wantCode(t, "a dropped account", err, 1045)
	})

	if target == "" || target == string(testkit.Basalt) {
		t.Run("restart", func(t *testing.T) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			c := openAs(t, srv, "reader", "r-pw", "acl_app")
			_, err := c.ExecContext(ctx, "DELETE FROM items")
			wantCode(t, "DELETE after a restart", err, 1142)
			var grants string
			if err := c.QueryRowContext(ctx, "SHOW GRANTS").Scan(&grants); err != nil || grants != "GRANT USAGE ON *.* TO `reader`@`%`" {
				t.Errorf("SHOW GRANTS after a restart: %q, %v", grants, err)
			}
		})
	}
}
