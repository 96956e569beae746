package privilege

import (
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/mysql"
)

func TestWildMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"%", "", true},
		{"%", "anything", true},
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"a_c", "abc", true},
		{"a_c", "ac", false},
		{"a%c", "ac", true},
		{"a%c", "abbbc", true},
		{"a%c", "abbbd", false},
		{"%b%", "abc", true},
		{"192.168.%", "192.168.1.7", true},
		{"192.168.%", "192.169.1.7", false},
		{`test\_db`, "test_db", true},
		{`test\_db`, "testxdb", false},
		{`test\%`, "test%", true},
		{`test\%`, "testx", false},
		{"%%a", "aaa", true},
	} {
		if got := wildMatch(c.pattern, c.s); got != c.want {
			t.Errorf("wildMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

func TestMatchHost(t *testing.T) {
	for _, c := range []struct {
		pattern, host string
		want          bool
	}{
		{"%", "10.0.0.1", true},
		{"", "10.0.0.1", true},
		{"localhost", "localhost", true},
		{"localhost", "127.0.0.1", true},
		{"localhost", "::1", true},
		{"localhost", "10.0.0.1", false},
		{"LOCALHOST", "127.0.0.1", true},
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.%", "127.0.0.1", true},
		{"10.0.0.%", "127.0.0.1", false},
	} {
		if got := MatchHost(c.pattern, c.host); got != c.want {
			t.Errorf("MatchHost(%q, %q) = %v, want %v", c.pattern, c.host, got, c.want)
		}
	}
}

func testCache() *Cache {
	return NewCache(
		[]*User{
			{User: "u", Host: "%", Plugin: PluginNative, AuthString: NativeHash("a")},
			{User: "", Host: "localhost", Plugin: PluginNative},
			{User: "u", Host: "localhost", Plugin: PluginNative, AuthString: NativeHash("b")},
			{User: "u", Host: "10.0.%", Plugin: PluginNative},
			{User: "root", Host: "%", Plugin: PluginNative, Privs: GlobalPrivs},
		},
		[]*DBGrant{
			{User: "u", Host: "%", DB: "app", Privs: Select | Insert},
			{User: "u", Host: "%", DB: "app%", Privs: Select},
			{User: "u", Host: "localhost", DB: "app", Privs: Select | Insert | Update | Delete},
		},
		[]*TableGrant{
			{User: "u", Host: "%", DB: "other", Table: "t", Privs: Select},
			{User: "u", Host: "%", DB: "app", Table: "log", Privs: Delete | Grant},
		},
	)
}

// The most specific host wins, and a named user before the anonymous one
// on the same host.
func TestMatchOrder(t *testing.T) {
	c := testCache()
	for _, tc := range []struct {
		user, host    string
		wantU, wantH  string
		wantNoAccount bool
	}{
		{user: "u", host: "127.0.0.1", wantU: "u", wantH: "localhost"},
		{user: "u", host: "10.0.3.4", wantU: "u", wantH: "10.0.%"},
		{user: "u", host: "192.0.2.1", wantU: "u", wantH: "%"},
		{user: "x", host: "127.0.0.1", wantU: "", wantH: "localhost"},
		{user: "x", host: "192.0.2.1", wantNoAccount: true},
		{user: "root", host: "192.0.2.1", wantU: "root", wantH: "%"},
	} {
		u := c.Match(tc.user, tc.host)
		switch {
		case tc.wantNoAccount && u != nil:
			t.Errorf("Match(%s, %s) = %s@%s, want none", tc.user, tc.host, u.User, u.Host)
		case !tc.wantNoAccount && (u == nil || u.User != tc.wantU || u.Host != tc.wantH):
			t.Errorf("Match(%s, %s) = %+v, want %s@%s", tc.user, tc.host, u, tc.wantU, tc.wantH)
		}
	}
}

func TestPrivileges(t *testing.T) {
	c := testCache()
	remote := Subject{User: "u", Host: "%", ClientHost: "192.0.2.1"}
	local := Subject{User: "u", Host: "localhost", ClientHost: "127.0.0.1"}
	root := Subject{User: "root", Host: "%", ClientHost: "192.0.2.1"}
	if got := c.DB(remote, "app"); got != Select|Insert {
		t.Errorf("remote on app = %v", got)
	}
	if got := c.DB(remote, "APP"); got != Select|Insert {
		t.Errorf("database names are case-insensitive: %v", got)
	}
	if got := c.DB(remote, "apple"); got != Select {
		t.Errorf("remote on apple (via app%%) = %v", got)
	}
	if got := c.DB(local, "app"); got != Select|Insert|Update|Delete {
		t.Errorf("local on app = %v", got)
	}
	if got := c.Table(remote, "app", "log"); got != Select|Insert|Delete|Grant {
		t.Errorf("remote on app.log = %v", got)
	}
	if got := c.Table(remote, "other", "t"); got != Select {
		t.Errorf("remote on other.t = %v", got)
	}
	if c.Table(remote, "other", "u") != 0 || c.AnyOnTable(remote, "other", "u") {
		t.Error("remote has privileges on other.u")
	}
	if !c.AnyInDB(remote, "other") || c.AnyInDB(remote, "secret") {
		t.Error("AnyInDB")
	}
	if c.Table(root, "secret", "t") != GlobalPrivs || !c.AnyInDB(root, "secret") {
		t.Error("root")
	}
}

func TestShowGrants(t *testing.T) {
	c := testCache()
	got := strings.Join(c.ShowGrants(c.Account("u", "%")), "\n")
	want := strings.Join([]string{
		"GRANT USAGE ON *.* TO `u`@`%`",
		"GRANT SELECT, INSERT ON `app`.* TO `u`@`%`",
		"GRANT SELECT ON `app%`.* TO `u`@`%`",
		"GRANT DELETE ON `app`.`log` TO `u`@`%` WITH GRANT OPTION",
		"GRANT SELECT ON `other`.`t` TO `u`@`%`",
	}, "\n")
	if got != want {
		t.Errorf("SHOW GRANTS:\n%s\nwant:\n%s", got, want)
	}
	if got := c.ShowGrants(c.Account("root", "%"))[0]; got != "GRANT ALL PRIVILEGES ON *.* TO `root`@`%` WITH GRANT OPTION" {
		t.Errorf("root: %s", got)
	}
}

func TestPrivNames(t *testing.T) {
	if s := (Select | Insert | ShowDB | Grant).String(); s != "SELECT, INSERT, SHOW DATABASES, GRANT OPTION" {
		t.Errorf("String = %q", s)
	}
	if s := (Select | Update | CreateView).SetString(); s != "Select,Update,Create View" || ParseSet(s) != Select|Update|CreateView {
		t.Errorf("SetString = %q, parsed back %v", s, ParseSet(s))
	}
	if p, ok := FromParser(mysql.AllPriv, Table); !ok || p != TablePrivs&^Grant {
		t.Errorf("ALL on a table = %v", p)
	}
	if Select.Column() != "Select_priv" || ShowDB.Column() != "Show_db_priv" || Grant.Column() != "Grant_priv" {
		t.Error("columns")
	}
}
