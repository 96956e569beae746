package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/privilege"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/auth"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Account management: CREATE / ALTER / DROP USER, SET PASSWORD, GRANT,
// REVOKE, SHOW GRANTS and FLUSH PRIVILEGES. Each change commits the
// session's open transaction first (as MySQL's implicit commit does), then,
// holding the driver's ACL lock, reloads the grant tables, checks the
// statement against them, writes its rows in one transaction of an internal
// session and reloads the cache. A statement that fails changes nothing.

func (s *Session) createUserStmt(ctx context.Context, x *ast.CreateUserStmt, _ stmtArgs) (Result, error) {
	return Result{}, s.createUser(ctx, x)
}

func (s *Session) alterUserStmt(ctx context.Context, x *ast.AlterUserStmt, _ stmtArgs) (Result, error) {
	return Result{}, s.alterUser(ctx, x)
}

func (s *Session) dropUserStmt(ctx context.Context, x *ast.DropUserStmt, _ stmtArgs) (Result, error) {
	return Result{}, s.dropUser(ctx, x)
}

func (s *Session) setPasswordStmt(ctx context.Context, x *ast.SetPwdStmt, _ stmtArgs) (Result, error) {
	return Result{}, s.setPassword(ctx, x)
}

func (s *Session) grantStmt(ctx context.Context, x *ast.GrantStmt, _ stmtArgs) (Result, error) {
	return Result{}, s.grant(ctx, x.Privs, x.Level, x.Users, x.WithGrant, false)
}

func (s *Session) revokeStmt(ctx context.Context, x *ast.RevokeStmt, _ stmtArgs) (Result, error) {
	return Result{}, s.grant(ctx, x.Privs, x.Level, x.Users, false, true)
}

// aclChange runs fn, which checks and changes the grant tables through in,
// with the ACL lock held and the cache fresh; then reloads the cache and,
// on a cluster, has the other SQL nodes reload theirs.
func (s *Session) aclChange(ctx context.Context, fn func(c *privilege.Cache, in *Session) error) error {
	if err := s.commit(ctx); err != nil {
		return err
	}
	// A change that failed part way may have written some rows: notify
	// anyway.
	err := s.aclChangeLocked(ctx, fn)
	if nerr := s.d.afterACLChange(ctx); err == nil {
		err = nerr
	}
	return err
}

func (s *Session) aclChangeLocked(ctx context.Context, fn func(c *privilege.Cache, in *Session) error) error {
	d := s.d
	d.acl.mu.Lock()
	defer d.acl.mu.Unlock()
	if err := d.loadACL(ctx); err != nil {
		return err
	}
	in := d.internalSession()
	defer in.Close()
	err := fn(d.acl.cache.Load(), in)
	if lerr := d.loadACL(ctx); err == nil {
		err = lerr
	}
	return err
}

// hasGlobal reports whether the session holds p globally (an internal
// session holds everything).
func (s *Session) hasGlobal(c *privilege.Cache, p privilege.Priv) bool {
	return s.subject == nil || c.Global(*s.subject)&p != 0
}

// onMySQLDB reports whether the session holds p on the mysql schema.
func (s *Session) onMySQLDB(c *privilege.Cache, p privilege.Priv) bool {
	return s.subject == nil || c.DB(*s.subject, aclDB)&p != 0
}

// account returns the account an identity in a statement names: CURRENT_USER
// is the session's own; the host defaults to '%' and is kept in lower case.
func (s *Session) account(u *auth.UserIdentity) (user, host string) {
	if u == nil || u.CurrentUser {
		if s.subject == nil {
			return "root", "%"
		}
		return s.subject.User, s.subject.Host
	}
	host = strings.ToLower(u.Hostname)
	if host == "" {
		host = "%"
	}
	return u.Username, host
}

// isSelf reports whether user@host is the session's own account.
func (s *Session) isSelf(user, host string) bool {
	return s.subject != nil && s.subject.User == user && strings.EqualFold(s.subject.Host, host)
}

func (s *Session) warn(code uint16, format string, args ...any) {
	s.warnings = append(s.warnings, errno.New(code, format, args...))
}

func quoteAccount(user, host string) string { return "'" + user + "'@'" + host + "'" }

// accountWhere selects the rows of an account in a grant table.
func accountWhere(user, host string) string {
	return "WHERE Host = " + quoteString(host) + " AND User = " + quoteString(user)
}

// authOf returns the plugin and stored password an IDENTIFIED clause sets;
// plugin is the account's current plugin, or the default for a new one.
func authOf(opt *ast.AuthOption, plugin string) (string, string, error) {
	if opt == nil {
		return plugin, "", nil
	}
	if opt.AuthPlugin != "" {
		plugin = strings.ToLower(opt.AuthPlugin)
	}
	if plugin != privilege.PluginNative && plugin != privilege.PluginCachingSHA2 {
		return "", "", aclError(errno.ErPluginIsNotLoaded, "HY000", "Plugin '%s' is not loaded", plugin)
	}
	switch {
	case opt.ByAuthString:
		a, err := privilege.HashPassword(plugin, opt.AuthString)
		return plugin, a, err
	case opt.ByHashString:
		if !privilege.ValidAuthString(plugin, opt.HashString) {
			return "", "", aclError(errPasswordFormat, "HY000", "The password hash doesn't have the expected format.")
		}
		return plugin, opt.HashString, nil
	}
	return plugin, "", nil
}

// defaultPlugin is default_authentication_plugin.
func (s *Session) defaultPlugin() string {
	if v, err := s.sysVar("default_authentication_plugin", true); err == nil && v.Str() == privilege.PluginCachingSHA2 {
		return privilege.PluginCachingSHA2
	}
	return privilege.PluginNative
}

func checkAccountName(user, host string) error {
	if len(user) > 32 {
		return aclError(1470, "HY000", "String '%s' is too long for user name (should be no longer than 32)", user)
	}
	if len(host) > 255 {
		return aclError(1470, "HY000", "String '%s' is too long for host name (should be no longer than 255)", host)
	}
	return nil
}

func (s *Session) createUser(ctx context.Context, x *ast.CreateUserStmt) error {
	if x.IsCreateRole {
		return errno.New(errno.ErNotSupportedYet, "roles are not supported yet")
	}
	return s.aclChange(ctx, func(c *privilege.Cache, in *Session) error {
		if !s.hasGlobal(c, privilege.CreateUser) && !s.onMySQLDB(c, privilege.Insert) {
			return errSpecificDenied("CREATE USER")
		}
		var failed, stmts []string
		seen := map[string]bool{}
		for _, spec := range x.Specs {
			user, host := s.account(spec.User)
			if err := checkAccountName(user, host); err != nil {
				return err
			}
			if c.Account(user, host) != nil || seen[user+"@"+host] {
				if x.IfNotExists {
					s.warn(errUserAlreadyExists, "Authorization ID %s already exists.", quoteAccount(user, host))
					continue
				}
				failed = append(failed, quoteAccount(user, host))
				continue
			}
			seen[user+"@"+host] = true
			plugin, auth, err := authOf(spec.AuthOpt, s.defaultPlugin())
			if err != nil {
				return err
			}
			stmts = append(stmts, insertUserSQL(host, user, plugin, auth, 0))
		}
		if len(failed) > 0 {
			return aclError(errCannotUser, "HY000", "Operation CREATE USER failed for %s", strings.Join(failed, ","))
		}
		return in.execWrite(ctx, stmts...)
	})
}

func (s *Session) alterUser(ctx context.Context, x *ast.AlterUserStmt) error {
	specs := x.Specs
	if x.CurrentAuth != nil { // ALTER USER USER() IDENTIFIED BY ...
		specs = []*ast.UserSpec{{User: &auth.UserIdentity{CurrentUser: true}, AuthOpt: x.CurrentAuth}}
	}
	locked := ""
	for _, o := range x.PasswordOrLockOptions {
		switch o.Type {
		case ast.Lock:
			locked = "Y"
		case ast.Unlock:
			locked = "N"
		}
	}
	var users []string
	err := s.aclChange(ctx, func(c *privilege.Cache, in *Session) error {
		var failed, stmts []string
		for _, spec := range specs {
			user, host := s.account(spec.User)
			if !s.isSelf(user, host) && !s.hasGlobal(c, privilege.CreateUser) && !s.onMySQLDB(c, privilege.Update) {
				return errSpecificDenied("CREATE USER")
			}
			u := c.Account(user, host)
			if u == nil {
				if x.IfExists {
					s.warn(errUserDoesNotExist, "Authorization ID %s does not exist.", quoteAccount(user, host))
					continue
				}
				failed = append(failed, quoteAccount(user, host))
				continue
			}
			var set []string
			if spec.AuthOpt != nil {
				plugin, auth, err := authOf(spec.AuthOpt, u.Plugin)
				if err != nil {
					return err
				}
				set = append(set, "plugin = "+quoteString(plugin), "authentication_string = "+quoteString(auth))
			}
			if locked != "" {
				set = append(set, "account_locked = "+quoteString(locked))
			}
			if len(set) > 0 {
				stmts = append(stmts, "UPDATE mysql.user SET "+strings.Join(set, ", ")+" "+accountWhere(u.User, u.Host))
				users = append(users, u.User)
			}
		}
		if len(failed) > 0 {
			return aclError(errCannotUser, "HY000", "Operation ALTER USER failed for %s", strings.Join(failed, ","))
		}
		return in.execWrite(ctx, stmts...)
	})
	s.forgetVerifiers(users)
	return err
}

// forgetVerifiers drops caching_sha2_password's cached verifiers of users
// whose password changed or who were dropped.
func (s *Session) forgetVerifiers(users []string) {
	if s.d.conns == nil {
		return
	}
	for _, u := range users {
		s.d.conns.InvalidateAuthCache(u)
	}
}

func (s *Session) dropUser(ctx context.Context, x *ast.DropUserStmt) error {
	if x.IsDropRole {
		return errno.New(errno.ErNotSupportedYet, "roles are not supported yet")
	}
	var users []string
	err := s.aclChange(ctx, func(c *privilege.Cache, in *Session) error {
		if !s.hasGlobal(c, privilege.CreateUser) && !s.onMySQLDB(c, privilege.Delete) {
			return errSpecificDenied("CREATE USER")
		}
		var failed, stmts []string
		for _, ident := range x.UserList {
			user, host := s.account(ident)
			u := c.Account(user, host)
			if u == nil {
				if x.IfExists {
					s.warn(errUserDoesNotExist, "Authorization ID %s does not exist.", quoteAccount(user, host))
					continue
				}
				failed = append(failed, quoteAccount(user, host))
				continue
			}
			where := accountWhere(u.User, u.Host)
			stmts = append(stmts, "DELETE FROM mysql.user "+where, "DELETE FROM mysql.db "+where,
				"DELETE FROM mysql.tables_priv "+where)
			users = append(users, u.User)
		}
		if len(failed) > 0 {
			return aclError(errCannotUser, "HY000", "Operation DROP USER failed for %s", strings.Join(failed, ","))
		}
		return in.execWrite(ctx, stmts...)
	})
	s.forgetVerifiers(users)
	return err
}

func (s *Session) setPassword(ctx context.Context, x *ast.SetPwdStmt) error {
	user, host := s.account(x.User)
	err := s.aclChange(ctx, func(c *privilege.Cache, in *Session) error {
		if !s.isSelf(user, host) && !s.hasGlobal(c, privilege.CreateUser) && !s.onMySQLDB(c, privilege.Update) {
			return errDBAccessDenied(s.subject, aclDB)
		}
		u := c.Account(user, host)
		if u == nil {
			return aclError(errPasswordNoMatch, "28000", "Can't find any matching row in the user table")
		}
		auth, err := privilege.HashPassword(u.Plugin, x.Password)
		if err != nil {
			return err
		}
		return in.execWrite(ctx, "UPDATE mysql.user SET authentication_string = "+quoteString(auth)+" "+accountWhere(u.User, u.Host))
	})
	s.forgetVerifiers([]string{user})
	return err
}

// grantTarget is what a GRANT or REVOKE applies to.
type grantTarget struct {
	level     privilege.Level
	db, table string
}

func (s *Session) grantTarget(l *ast.GrantLevel) (grantTarget, error) {
	switch l.Level {
	case ast.GrantLevelGlobal:
		return grantTarget{level: privilege.Global}, nil
	case ast.GrantLevelDB, ast.GrantLevelTable:
		t := grantTarget{level: privilege.DB, db: l.DBName, table: l.TableName}
		if l.Level == ast.GrantLevelTable {
			t.level = privilege.Table
		}
		if t.db == "" {
			t.db = s.db
		}
		if t.db == "" {
			return t, errno.New(errno.ErNoDB, "No database selected")
		}
		return t, nil
	}
	return grantTarget{}, errno.New(errno.ErNotSupportedYet, "this GRANT level is not supported")
}

// grantPrivs converts the privileges of a GRANT or REVOKE at target's level.
func grantPrivs(elems []*ast.PrivElem, t grantTarget) (privilege.Priv, error) {
	var p privilege.Priv
	for _, e := range elems {
		if len(e.Cols) > 0 {
			return 0, errno.New(errno.ErNotSupportedYet, "column privileges are not supported yet")
		}
		b, ok := privilege.FromParser(e.Priv, t.level)
		if !ok {
			name := e.Name
			if name == "" {
				name = mysql.Priv2Str[e.Priv]
			}
			return 0, errno.New(errno.ErNotSupportedYet, "the %s privilege is not supported yet", strings.ToUpper(name))
		}
		if b&^privilege.LevelPrivs(t.level) != 0 {
			if t.level == privilege.DB {
				return 0, aclError(errno.ErWrongUsage, "HY000", "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES")
			}
			return 0, aclError(errIllegalGrantForTable, "42000", "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used")
		}
		p |= b
	}
	return p, nil
}

// grant runs GRANT, or REVOKE when revoke is set.
func (s *Session) grant(ctx context.Context, elems []*ast.PrivElem, level *ast.GrantLevel, specs []*ast.UserSpec, withGrant, revoke bool) error {
	t, err := s.grantTarget(level)
	if err != nil {
		return err
	}
	p, err := grantPrivs(elems, t)
	if err != nil {
		return err
	}
	// REVOKE ALL PRIVILEGES, GRANT OPTION FROM u: everything, at every level.
	revokeAll := false
	if revoke && t.level == privilege.Global && len(elems) == 2 && elems[0].Priv == mysql.AllPriv && elems[1].Priv == mysql.GrantPriv {
		revokeAll = true
	}
	if withGrant {
		p |= privilege.Grant
	}
	return s.aclChange(ctx, func(c *privilege.Cache, in *Session) error {
		if revokeAll {
			if !s.hasGlobal(c, privilege.CreateUser) && !s.onMySQLDB(c, privilege.Update) {
				return errSpecificDenied("CREATE USER")
			}
		} else if err := s.checkGrantor(c, t, p|privilege.Grant); err != nil {
			return err
		}
		if t.level == privilege.Table && s.d.catalog.InfoSchema().Table(t.db, t.table) == nil {
			return errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", t.db, t.table)
		}
		var stmts []string
		for _, spec := range specs {
			user, host := s.account(spec.User)
			u := c.Account(user, host)
			if u == nil {
				if revoke {
					return aclError(errNonexistingGrant, "42000", "There is no such grant defined for user '%s' on host '%s'", user, host)
				}
				return aclError(errCantCreateUserGrant, "42000", "You are not allowed to create a user with GRANT")
			}
			if revokeAll {
				where := accountWhere(u.User, u.Host)
				stmts = append(stmts, userPrivsSQL(0, where), "DELETE FROM mysql.db "+where, "DELETE FROM mysql.tables_priv "+where)
				continue
			}
			more, err := grantSQL(c, u, t, p, revoke, s.grantor())
			if err != nil {
				return err
			}
			stmts = append(stmts, more...)
		}
		return in.execWrite(ctx, stmts...)
	})
}

// grantor is the account recorded in tables_priv.Grantor.
func (s *Session) grantor() string {
	if s.subject == nil {
		return "root@%"
	}
	return s.subject.User + "@" + s.subject.Host
}

// checkGrantor checks that the session may grant (or revoke) need at t:
// it must hold them there, with GRANT OPTION.
func (s *Session) checkGrantor(c *privilege.Cache, t grantTarget, need privilege.Priv) error {
	if s.subject == nil {
		return nil
	}
	subj := *s.subject
	switch t.level {
	case privilege.Global:
		if need&^c.Global(subj) != 0 {
			u := c.Account(subj.User, subj.Host)
			return errno.AccessDenied(subj.User, subj.Host, u != nil && u.AuthString != "")
		}
	case privilege.DB:
		if need&^c.DB(subj, t.db) != 0 {
			return errDBAccessDenied(s.subject, t.db)
		}
	case privilege.Table:
		if missing := need &^ c.Table(subj, t.db, t.table); missing != 0 {
			cmd := "GRANT"
			if missing&privilege.Grant == 0 {
				cmd = firstPriv(missing)
			}
			return aclError(errTableAccessDenied, "42000", "%s command denied to user '%s'@'%s' for table '%s'",
				cmd, subj.User, subj.ClientHost, t.table)
		}
	}
	return nil
}

// userPrivsSQL sets every privilege column of mysql.user to p's.
func userPrivsSQL(p privilege.Priv, where string) string {
	var set []string
	for _, b := range privilege.UserColumns {
		set = append(set, b.Column()+" = "+yn(p&b != 0))
	}
	return "UPDATE mysql.user SET " + strings.Join(set, ", ") + " " + where
}

// grantSQL returns the statements that add p to (or remove it from) u's
// grant at t.
func grantSQL(c *privilege.Cache, u *privilege.User, t grantTarget, p privilege.Priv, revoke bool, grantor string) ([]string, error) {
	apply := func(old privilege.Priv) privilege.Priv {
		if revoke {
			return old &^ p
		}
		return old | p
	}
	where := accountWhere(u.User, u.Host)
	dbs, tables := c.Grants(u.User, u.Host)
	switch t.level {
	case privilege.Global:
		return []string{userPrivsSQL(apply(u.Privs), where)}, nil
	case privilege.DB:
		var old *privilege.DBGrant
		for _, g := range dbs {
			if strings.EqualFold(g.DB, t.db) {
				old = g
			}
		}
		var out []string
		var have privilege.Priv
		if old != nil {
			have = old.Privs
			out = append(out, "DELETE FROM mysql.db "+where+" AND Db = "+quoteString(old.DB))
		} else if revoke {
			return nil, aclError(errNonexistingGrant, "42000", "There is no such grant defined for user '%s' on host '%s'", u.User, u.Host)
		}
		if n := apply(have); n != 0 {
			cols := []string{"Host", "Db", "User"}
			vals := []string{quoteString(u.Host), quoteString(t.db), quoteString(u.User)}
			for _, b := range privilege.DBColumns {
				cols = append(cols, b.Column())
				vals = append(vals, yn(n&b != 0))
			}
			out = append(out, "INSERT INTO mysql.db ("+strings.Join(cols, ", ")+") VALUES ("+strings.Join(vals, ", ")+")")
		}
		return out, nil
	}
	var old *privilege.TableGrant
	for _, g := range tables {
		if strings.EqualFold(g.DB, t.db) && strings.EqualFold(g.Table, t.table) {
			old = g
		}
	}
	var out []string
	var have privilege.Priv
	if old != nil {
		have = old.Privs
		out = append(out, "DELETE FROM mysql.tables_priv "+where+" AND Db = "+quoteString(old.DB)+" AND Table_name = "+quoteString(old.Table))
	} else if revoke {
		return nil, aclError(errNonexistingTableGrnt, "42000", "There is no such grant defined for user '%s' on host '%s' on table '%s'", u.User, u.Host, t.table)
	}
	if n := apply(have); n != 0 {
		out = append(out, fmt.Sprintf("INSERT INTO mysql.tables_priv (Host, Db, User, Table_name, Grantor, Table_priv) VALUES (%s, %s, %s, %s, %s, %s)",
			quoteString(u.Host), quoteString(t.db), quoteString(u.User), quoteString(t.table), quoteString(grantor), quoteString(n.SetString())))
	}
	return out, nil
}

func (s *Session) showGrants(x *ast.ShowStmt) (Result, error) {
	user, host := s.account(x.User)
	c := s.d.acl.cache.Load()
	if !s.isSelf(user, host) && !s.onMySQLDB(c, privilege.Select) {
		return Result{}, errDBAccessDenied(s.subject, aclDB)
	}
	u := c.Account(user, host)
	if u == nil {
		return Result{}, aclError(errNonexistingGrant, "42000", "There is no such grant defined for user '%s' on host '%s'", user, host)
	}
	var data [][]types.Datum
	for _, line := range c.ShowGrants(u) {
		data = append(data, []types.Datum{str(line)})
	}
	cols := textFields("Grants for " + u.User + "@" + u.Host)
	cols[0].Type.Flen = 256 // 1024 bytes of utf8mb4
	return Result{Rows: &staticRows{fields: cols, data: data}}, nil
}

// CurrentUser is CURRENT_USER(): the account the session authenticated as.
func (s *Session) CurrentUser() string {
	if s.subject == nil {
		return s.User()
	}
	return s.subject.User + "@" + s.subject.Host
}
