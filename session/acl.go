package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/privilege"
	"github.com/basalt-db/basalt/types"
)

// Accounts and grants live in ordinary tables of the mysql schema, created
// when a data directory is first opened, so that SELECT user, host FROM
// mysql.user works as in MySQL:
//
//	mysql.user         one row per account: Host, User, one Y/N column per
//	                   global privilege, plugin, authentication_string
//	mysql.db           database-level grants (Db may be a '%' pattern)
//	mysql.tables_priv  table-level grants, Table_priv a comma-separated set
//
// The driver keeps them in memory as a privilege.Cache, read without
// locks by every statement's check. Account-management statements
// (acl_stmt.go) change the tables in one transaction, under aclState.mu,
// and then reload the cache; FLUSH PRIVILEGES reloads it too, after rows
// were changed by hand.

// aclDB is the schema of the grant tables.
const aclDB = "mysql"

// aclState is the driver's access-control state.
type aclState struct {
	cache atomic.Pointer[privilege.Cache]
	// mu serializes account-management statements, so that each reads
	// the tables it changes without a write conflict.
	mu sync.Mutex
}

func privColumnsDDL(privs []privilege.Priv) string {
	var b strings.Builder
	for _, p := range privs {
		fmt.Fprintf(&b, "  %s CHAR(1) NOT NULL DEFAULT 'N',\n", p.Column())
	}
	return b.String()
}

// grantTables are the CREATE TABLE statements of the mysql schema. The
// privilege columns are CHAR(1) holding 'Y' or 'N' (ENUM('N','Y') in MySQL).
func grantTables() map[string]string {
	return map[string]string{
		"user": "CREATE TABLE IF NOT EXISTS mysql.user (\n" +
			"  Host CHAR(255) NOT NULL DEFAULT '',\n  User CHAR(32) NOT NULL DEFAULT '',\n" +
			privColumnsDDL(privilege.UserColumns) +
			"  plugin CHAR(64) NOT NULL DEFAULT 'mysql_native_password',\n" +
			"  authentication_string TEXT,\n" +
			"  password_expired CHAR(1) NOT NULL DEFAULT 'N',\n" +
			"  account_locked CHAR(1) NOT NULL DEFAULT 'N',\n" +
			"  PRIMARY KEY (Host, User)\n) COMMENT='Users and global privileges'",
		"db": "CREATE TABLE IF NOT EXISTS mysql.db (\n" +
			"  Host CHAR(255) NOT NULL DEFAULT '',\n  Db CHAR(64) NOT NULL DEFAULT '',\n  User CHAR(32) NOT NULL DEFAULT '',\n" +
			privColumnsDDL(privilege.DBColumns) +
			"  PRIMARY KEY (Host, Db, User)\n) COMMENT='Database privileges'",
		"tables_priv": "CREATE TABLE IF NOT EXISTS mysql.tables_priv (\n" +
			"  Host CHAR(255) NOT NULL DEFAULT '',\n  Db CHAR(64) NOT NULL DEFAULT '',\n  User CHAR(32) NOT NULL DEFAULT '',\n" +
			"  Table_name CHAR(64) NOT NULL DEFAULT '',\n  Grantor VARCHAR(288) NOT NULL DEFAULT '',\n" +
			"  Table_priv VARCHAR(255) NOT NULL DEFAULT '',\n  Column_priv VARCHAR(255) NOT NULL DEFAULT '',\n" +
			"  PRIMARY KEY (Host, Db, User, Table_name)\n) COMMENT='Table privileges'",
	}
}

// bootstrapACL creates the grant tables that are missing, with root@'%'
// holding every privilege (and the configured initial password) when
// mysql.user is new, then loads the cache.
func (d *Driver) bootstrapACL(ctx context.Context) error {
	s := d.internalSession()
	defer s.Close()
	is := d.catalog.InfoSchema()
	if is.DB(aclDB) == nil {
		if _, err := s.execInternal(ctx, "CREATE DATABASE IF NOT EXISTS mysql DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
			return err
		}
	}
	newUsers := d.catalog.InfoSchema().Table(aclDB, "user") == nil
	for _, name := range []string{"user", "db", "tables_priv"} {
		if d.catalog.InfoSchema().Table(aclDB, name) == nil {
			// On a new cluster, another SQL node starting at the same
			// time may create it first.
			if _, err := s.execInternal(ctx, grantTables()[name]); err != nil && !isCode(err, errno.ErTableExists) {
				return fmt.Errorf("creating mysql.%s: %w", name, err)
			}
		}
	}
	if newUsers {
		auth := privilege.NativeHash(d.cfg.RootPassword)
		err := s.execWrite(ctx, insertUserSQL("%", "root", privilege.PluginNative, auth, privilege.GlobalPrivs))
		if err != nil && !isCode(err, errno.ErDupEntry) {
			return fmt.Errorf("creating root: %w", err)
		}
	}
	return d.loadACL(ctx)
}

// isCode reports whether err is the MySQL error code.
func isCode(err error, code uint16) bool {
	var e *errno.Error
	return errors.As(err, &e) && e.Code == code
}

// insertUserSQL is the INSERT of a new account.
func insertUserSQL(host, user, plugin, auth string, privs privilege.Priv) string {
	cols := []string{"Host", "User"}
	vals := []string{quoteString(host), quoteString(user)}
	for _, p := range privilege.UserColumns {
		cols = append(cols, p.Column())
		vals = append(vals, yn(privs&p != 0))
	}
	cols = append(cols, "plugin", "authentication_string")
	vals = append(vals, quoteString(plugin), quoteString(auth))
	return "INSERT INTO mysql.user (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(vals, ", ") + ")"
}

func yn(b bool) string {
	if b {
		return "'Y'"
	}
	return "'N'"
}

// quoteString quotes s as a string literal for internal statements.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case 0:
			b.WriteString(`\0`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case 0x1a:
			b.WriteString(`\Z`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// loadACL reads the grant tables into a new cache and publishes it.
func (d *Driver) loadACL(ctx context.Context) error {
	s := d.internalSession()
	defer s.Close()
	var users []*privilege.User
	var dbs []*privilege.DBGrant
	var tables []*privilege.TableGrant

	cols := "Host, User, plugin, authentication_string, account_locked"
	for _, p := range privilege.UserColumns {
		cols += ", " + p.Column()
	}
	rows, err := s.execInternal(ctx, "SELECT "+cols+" FROM mysql.user")
	if err != nil {
		return fmt.Errorf("loading mysql.user: %w", err)
	}
	for _, r := range rows {
		u := &privilege.User{Host: r[0], User: r[1], Plugin: r[2], AuthString: r[3], Locked: r[4] == "Y"}
		u.Privs = privsOf(r[5:], privilege.UserColumns)
		users = append(users, u)
	}

	cols = "Host, Db, User"
	for _, p := range privilege.DBColumns {
		cols += ", " + p.Column()
	}
	if rows, err = s.execInternal(ctx, "SELECT "+cols+" FROM mysql.db"); err != nil {
		return fmt.Errorf("loading mysql.db: %w", err)
	}
	for _, r := range rows {
		dbs = append(dbs, &privilege.DBGrant{Host: r[0], DB: r[1], User: r[2], Privs: privsOf(r[3:], privilege.DBColumns)})
	}

	if rows, err = s.execInternal(ctx, "SELECT Host, Db, User, Table_name, Table_priv FROM mysql.tables_priv"); err != nil {
		return fmt.Errorf("loading mysql.tables_priv: %w", err)
	}
	for _, r := range rows {
		tables = append(tables, &privilege.TableGrant{Host: r[0], DB: r[1], User: r[2], Table: r[3], Privs: privilege.ParseSet(r[4])})
	}
	d.acl.cache.Store(privilege.NewCache(users, dbs, tables))
	return nil
}

func privsOf(vals []string, cols []privilege.Priv) privilege.Priv {
	var p privilege.Priv
	for i, c := range cols {
		if strings.EqualFold(vals[i], "Y") {
			p |= c
		}
	}
	return p
}

// internalSession returns a session that runs the driver's own statements
// on the grant tables. It has no subject, so nothing it runs is checked.
func (d *Driver) internalSession() *Session {
	return newSession(d, ConnInfo{User: "root", Host: "localhost"})
}

// execInternal runs the statements of sql and returns the rows of the last
// one as text (NULL as ""). It records no metrics.
func (s *Session) execInternal(ctx context.Context, sql string) ([][]string, error) {
	stmts, _, err := s.parser.ParseSQL(sql)
	if err != nil {
		return nil, fmt.Errorf("internal statement %q: %w", sql, err)
	}
	var out [][]string
	for _, st := range stmts {
		res, err := s.dispatch(ctx, st, nil, nil)
		if err != nil {
			return nil, err
		}
		out = nil
		if res.Rows == nil {
			continue
		}
		for {
			vals, err := res.Rows.Next()
			if err != nil {
				res.Rows.Close()
				return nil, err
			}
			if vals == nil {
				break
			}
			row := make([]string, len(vals))
			for i, v := range vals {
				if !v.IsNull() {
					row[i] = string(types.ToText(v))
				}
			}
			out = append(out, row)
		}
		if err := res.Rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// execWrite runs the statements of sql in one transaction.
func (s *Session) execWrite(ctx context.Context, sql ...string) error {
	if _, err := s.execInternal(ctx, "BEGIN"); err != nil {
		return err
	}
	for _, q := range sql {
		if _, err := s.execInternal(ctx, q); err != nil {
			s.rollback()
			return err
		}
	}
	return s.commit(ctx)
}

// LookupUser returns the credential of the account that user connecting
// from host authenticates as, the most specific match first; found is
// false when none matches.
func (d *Driver) LookupUser(_ context.Context, user, host string) (Credential, bool, error) {
	u := d.acl.cache.Load().Match(user, host)
	if u == nil {
		return Credential{}, false, nil
	}
	if u.Locked {
		return Credential{}, false, errno.New(errAccountLocked, "Access denied for user '%s'@'%s'. Account is locked.", user, host)
	}
	cred := Credential{Plugin: u.Plugin}
	if u.AuthString == "" {
		return cred, true, nil
	}
	if !privilege.ValidAuthString(u.Plugin, u.AuthString) {
		return Credential{}, false, nil // a corrupt password opens nothing
	}
	if u.Plugin == privilege.PluginNative {
		cred.NativeHash = privilege.NativeStage2(u.AuthString)
	}
	plugin, auth := u.Plugin, u.AuthString
	cred.CheckPassword = func(p []byte) bool { return privilege.CheckPassword(plugin, auth, string(p)) }
	return cred, true, nil
}

// OpenSession starts the session of a connection that authenticated as
// the account LookupUser returned; a database named at connect must be one
// the account may use (1044) and must exist (1049).
func (d *Driver) OpenSession(_ context.Context, info ConnInfo) (*Session, error) {
	c := d.acl.cache.Load()
	u := c.Match(info.User, info.Host)
	if u == nil { // dropped between authentication and now
		return nil, errno.AccessDenied(info.User, info.Host, false)
	}
	subj := &privilege.Subject{User: u.User, Host: u.Host, ClientHost: info.Host}
	if info.DB != "" && !strings.EqualFold(info.DB, planner.InfoSchemaDB) {
		if !c.AnyInDB(*subj, info.DB) {
			return nil, mapError(errDBAccessDenied(subj, info.DB), nil)
		}
		if d.catalog.InfoSchema().DB(info.DB) == nil {
			return nil, errno.BadDB(info.DB)
		}
	}
	s := newSession(d, info)
	s.subject = subj
	return s, nil
}

// FlushPrivileges reloads the grant tables and forgets
// caching_sha2_password's cached verifiers (FLUSH PRIVILEGES).
// On a cluster every other SQL node reloads them too (TiDB's FLUSH
// PRIVILEGES notifies the others, for grant tables changed by DML).
func (d *Driver) FlushPrivileges(ctx context.Context) error {
	if err := d.flushACL(ctx); err != nil {
		return err
	}
	return d.afterACLChange(ctx)
}

// flushACL reloads the grant tables and forgets the cached verifiers.
func (d *Driver) flushACL(ctx context.Context) error {
	d.acl.mu.Lock()
	defer d.acl.mu.Unlock()
	if err := d.loadACL(ctx); err != nil {
		return err
	}
	if d.conns != nil {
		d.conns.InvalidateAuthCache("")
	}
	return nil
}

// Error codes of access control.
const (
	errTableAccessDenied    = 1142 // ER_TABLEACCESS_DENIED_ERROR
	errColumnAccessDenied   = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	errNonexistingGrant     = 1141 // ER_NONEXISTING_GRANT
	errNonexistingTableGrnt = 1147 // ER_NONEXISTING_TABLE_GRANT
	errPasswordNoMatch      = 1133 // ER_PASSWORD_NO_MATCH
	errSpecificAccessDenied = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR
	errCannotUser           = 1396 // ER_CANNOT_USER
	errCantCreateUserGrant  = 1410 // ER_CANT_CREATE_USER_WITH_GRANT
	errIllegalGrantForTable = 1144 // ER_ILLEGAL_GRANT_FOR_TABLE
	errPasswordFormat       = 1827 // ER_PASSWORD_FORMAT
	errAccountLocked        = 3118 // ER_ACCOUNT_HAS_BEEN_LOCKED
	errUserDoesNotExist     = 3162 // ER_USER_DOES_NOT_EXIST (a note)
	errUserAlreadyExists    = 3163 // ER_USER_ALREADY_EXISTS (a note)
)

func aclError(code uint16, state, format string, args ...any) *errno.Error {
	return &errno.Error{Code: code, State: state, Msg: fmt.Sprintf(format, args...)}
}

// errDBAccessDenied is 1044 for the subject's account on db.
func errDBAccessDenied(subj *privilege.Subject, db string) error {
	return aclError(errno.ErDBAccessDenied, "42000", "Access denied for user '%s'@'%s' to database '%s'", subj.User, subj.Host, db)
}

// RequireSecureTransport is the global require_secure_transport:
// connections that use neither TLS nor a Unix socket are refused.
func (d *Driver) RequireSecureTransport() bool {
	d.mu.Lock()
	v, ok := d.globals["require_secure_transport"]
	d.mu.Unlock()
	return ok && v.Int() != 0
}
