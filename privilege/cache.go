package privilege

import (
	"sort"
	"strings"
)

// User is an account: a row of mysql.user. User and Host are the account's
// name and host pattern; Privs are its global privileges.
type User struct {
	Host, User string
	Plugin     string // PluginNative or PluginCachingSHA2
	AuthString string // the stored password (see password.go); "" for none
	Privs      Priv
	Locked     bool
}

// DBGrant is a row of mysql.db: privileges on the databases that DB (a
// pattern) matches, for the user named User connecting from Host.
type DBGrant struct {
	Host, DB, User string
	Privs          Priv
}

// TableGrant is a row of mysql.tables_priv: privileges on one table.
type TableGrant struct {
	Host, DB, User, Table string
	Privs                 Priv
}

// Subject is who a session acts as: the account it authenticated as
// (User, Host: its host pattern) and the host the client connects from.
type Subject struct {
	User, Host string
	ClientHost string
}

// Cache holds every account and grant, ordered as MySQL matches them: the
// most specific host first. A Cache is immutable once made, so it is safe
// for concurrent use; a change builds a new one.
type Cache struct {
	users  []*User
	dbs    []*DBGrant
	tables []*TableGrant
}

// NewCache orders the records and returns a Cache over them.
func NewCache(users []*User, dbs []*DBGrant, tables []*TableGrant) *Cache {
	c := &Cache{users: users, dbs: dbs, tables: tables}
	userSort := func(u *User) []int { return []int{sortValue(u.Host), 128 + len(u.User)} }
	sort.SliceStable(c.users, func(i, j int) bool { return moreSpecific(userSort(c.users[i]), userSort(c.users[j])) })
	dbSort := func(g *DBGrant) []int { return []int{sortValue(g.Host), sortValue(g.DB), 128 + len(g.User)} }
	sort.SliceStable(c.dbs, func(i, j int) bool { return moreSpecific(dbSort(c.dbs[i]), dbSort(c.dbs[j])) })
	sort.SliceStable(c.tables, func(i, j int) bool {
		return moreSpecific([]int{sortValue(c.tables[i].Host)}, []int{sortValue(c.tables[j].Host)})
	})
	return c
}

// Users returns every account, in matching order.
func (c *Cache) Users() []*User { return c.users }

// Match returns the account a client authenticates as: the first, in
// matching order, whose host pattern matches host and whose name is user
// (or empty, an anonymous account). nil if none does.
func (c *Cache) Match(user, host string) *User {
	for _, u := range c.users {
		if (u.User == "" || u.User == user) && MatchHost(u.Host, host) {
			return u
		}
	}
	return nil
}

// Account returns the account named exactly user@host (host compared
// case-insensitively), or nil.
func (c *Cache) Account(user, host string) *User {
	for _, u := range c.users {
		if u.User == user && strings.EqualFold(u.Host, host) {
			return u
		}
	}
	return nil
}

// Global returns the subject's global privileges.
func (c *Cache) Global(s Subject) Priv {
	if u := c.Account(s.User, s.Host); u != nil {
		return u.Privs
	}
	return 0
}

// dbGrant is MySQL's acl_get: the first database grant, in matching
// order, for the subject's user name, client host and database db.
func (c *Cache) dbGrant(s Subject, db string) Priv {
	for _, g := range c.dbs {
		if g.User == s.User && MatchHost(g.Host, s.ClientHost) && MatchDB(g.DB, db) {
			return g.Privs
		}
	}
	return 0
}

func (c *Cache) tableGrant(s Subject, db, table string) Priv {
	for _, g := range c.tables {
		if g.User == s.User && MatchHost(g.Host, s.ClientHost) && strings.EqualFold(g.DB, db) && strings.EqualFold(g.Table, table) {
			return g.Privs
		}
	}
	return 0
}

// DB returns the subject's privileges on every table of database db:
// its global ones and its grant on db.
func (c *Cache) DB(s Subject, db string) Priv {
	return c.Global(s) | c.dbGrant(s, db)
}

// Table returns the subject's privileges on table db.table.
func (c *Cache) Table(s Subject, db, table string) Priv {
	return c.DB(s, db) | c.tableGrant(s, db, table)
}

// AnyInDB reports whether the subject holds any privilege on db or on one
// of its tables: what USE db and seeing db in SHOW DATABASES need.
func (c *Cache) AnyInDB(s Subject, db string) bool {
	if c.DB(s, db)&DBPrivs != 0 {
		return true
	}
	for _, g := range c.tables {
		if g.User == s.User && MatchHost(g.Host, s.ClientHost) && strings.EqualFold(g.DB, db) && g.Privs != 0 {
			return true
		}
	}
	return false
}

// AnyOnTable reports whether the subject holds any privilege on table
// db.table: what SHOW COLUMNS and seeing it in SHOW TABLES need.
func (c *Cache) AnyOnTable(s Subject, db, table string) bool {
	return c.Table(s, db, table)&TablePrivs != 0
}

// Grants returns the database and table grants of account user@host
// (exactly), sorted by database and table name.
func (c *Cache) Grants(user, host string) ([]*DBGrant, []*TableGrant) {
	var dbs []*DBGrant
	var tables []*TableGrant
	for _, g := range c.dbs {
		if g.User == user && strings.EqualFold(g.Host, host) {
			dbs = append(dbs, g)
		}
	}
	for _, g := range c.tables {
		if g.User == user && strings.EqualFold(g.Host, host) {
			tables = append(tables, g)
		}
	}
	sort.Slice(dbs, func(i, j int) bool { return dbs[i].DB < dbs[j].DB })
	sort.Slice(tables, func(i, j int) bool {
		if tables[i].DB != tables[j].DB {
			return tables[i].DB < tables[j].DB
		}
		return tables[i].Table < tables[j].Table
	})
	return dbs, tables
}
