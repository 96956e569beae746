package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/go-sql-driver/mysql"
)

// TestAuth logs in through the Go driver with both password plugins
// (testdata/auth):
//
//	connect [server=native|sha2] user=U [password=P] [db=D] [params=...]
//	    as in runDriverCommand; the output adds how caching_sha2_password
//	    authenticated, if it did: from the cache (fast) or with the password
//	    sent RSA-encrypted (full)
//	invalidate user=U
//	    Server.InvalidateAuthCache
//
// The "native" server announces mysql_native_password (the default), the
// "sha2" server caching_sha2_password; each account's own plugin wins by an
// auth switch.
func TestAuth(t *testing.T) {
	servers := map[string]*testServer{
		"native": startServer(t, Config{}),
		"sha2":   startServer(t, Config{DefaultAuthPlugin: PluginCachingSHA2Password}),
	}
	mysql.RegisterServerPubKey("basalt-test", &testRSAKey().PublicKey)
	defer mysql.DeregisterServerPubKey("basalt-test")

	datadriven.RunTest(t, "testdata/auth", func(t *testing.T, d *datadriven.TestData) string {
		ts := servers["native"]
		if d.HasArg("server") {
			var name string
			d.ScanArgs(t, "server", &name)
			ts = servers[name]
		}
		switch d.Cmd {
		case "connect":
			fast, full := ts.srv.sha2FastAuths.Load(), ts.srv.sha2FullAuths.Load()
			out := runDriverCommand(t, ts, d)
			var how []string
			if n := ts.srv.sha2FastAuths.Load() - fast; n > 0 {
				how = append(how, fmt.Sprintf("fast×%d", n))
			}
			if n := ts.srv.sha2FullAuths.Load() - full; n > 0 {
				how = append(how, fmt.Sprintf("full×%d", n))
			}
			if len(how) > 0 {
				out += "caching_sha2_password: " + strings.Join(how, ", ") + "\n"
			}
			return out
		case "invalidate":
			var user string
			d.ScanArgs(t, "user", &user)
			ts.srv.InvalidateAuthCache(user)
			return "ok\n"
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}
