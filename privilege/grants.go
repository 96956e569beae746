package privilege

import "strings"

// ShowGrants returns the lines of SHOW GRANTS FOR user@host, in MySQL 8's
// form: the global privileges first (USAGE when there are none), then one
// line per database grant, then one per table grant.
//
//	GRANT USAGE ON *.* TO `u`@`%`
//	GRANT SELECT, INSERT ON `db`.* TO `u`@`%`
//	GRANT ALL PRIVILEGES ON `db`.`t` TO `u`@`%` WITH GRANT OPTION
func (c *Cache) ShowGrants(u *User) []string {
	to := " TO " + QuoteName(u.User) + "@" + QuoteName(u.Host)
	lines := []string{grantLine(u.Privs, Global, "*.*", to)}
	dbs, tables := c.Grants(u.User, u.Host)
	for _, g := range dbs {
		if g.Privs != 0 {
			lines = append(lines, grantLine(g.Privs, DB, QuoteName(g.DB)+".*", to))
		}
	}
	for _, g := range tables {
		if g.Privs != 0 {
			lines = append(lines, grantLine(g.Privs, Table, QuoteName(g.DB)+"."+QuoteName(g.Table), to))
		}
	}
	return lines
}

func grantLine(p Priv, l Level, on, to string) string {
	list := (p &^ Grant).String()
	if p&All(l) == All(l) {
		list = "ALL PRIVILEGES"
	}
	s := "GRANT " + list + " ON " + on + to
	if p&Grant != 0 {
		s += " WITH GRANT OPTION"
	}
	return s
}

// QuoteName quotes an identifier with backticks, as SHOW GRANTS does.
func QuoteName(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
