package privilege

import (
	"strings"
	"testing"
)

// Expected digests are OpenSSL's (openssl passwd -5 -salt 'rounds=N$salt'
// key) and agree with Python's crypt module; rounds=5000 is the default,
// as MySQL uses.
func TestSHACrypt256(t *testing.T) {
	for _, c := range []struct {
		salt, key string
		rounds    int
		want      string
	}{
		{"saltstring", "Hello world!", 5000, "5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"},
		{"roundstoolow", "the minimum number is still observed", 1000, "yfvwcWrQ8l/K0DAWyuPMDNHpIVlTQebY9l/gL972bIC"},
		{"saltstring", "Hello world!", 10000, "zY4WhW6dya5uGVNotd0y2Lk.E4rItnX94Q0R1OCQl40"},
		{"toolongsaltstri", "a very much longer text to encrypt.  This one even stretches over morethan one line.", 1400, "73/WntEcRNnnea0f5XlKlypVVXKCW6ZYF0MHkC3KwQB"},
	} {
		if got := SHACrypt256([]byte(c.key), []byte(c.salt), c.rounds); got != c.want {
			t.Errorf("SHACrypt256(%q, %q, %d) = %s, want %s", c.key, c.salt, c.rounds, got, c.want)
		}
	}
}

func TestNativeHash(t *testing.T) {
	// MariaDB stores this for IDENTIFIED BY 'pw' (checked with mariadbd).
	if got := NativeHash("pw"); got != "*D821809F681A40A6E379B50D0463EFAE20BDD122" {
		t.Errorf("NativeHash(pw) = %s", got)
	}
	if NativeHash("") != "" || NativeStage2(NativeHash("pw")) == nil || NativeStage2("*XYZ") != nil {
		t.Error("NativeHash / NativeStage2 of edge cases")
	}
}

func TestHashAndCheck(t *testing.T) {
	for _, plugin := range []string{PluginNative, PluginCachingSHA2} {
		auth, err := HashPassword(plugin, "s3cret")
		if err != nil {
			t.Fatal(err)
		}
		if !ValidAuthString(plugin, auth) {
			t.Errorf("%s: %q is not valid", plugin, auth)
		}
		if !CheckPassword(plugin, auth, "s3cret") || CheckPassword(plugin, auth, "s3creT") || CheckPassword(plugin, auth, "") {
			t.Errorf("%s: CheckPassword is wrong for %q", plugin, auth)
		}
		if plugin == PluginCachingSHA2 && (len(auth) != 70 || !strings.HasPrefix(auth, "$A$005$")) {
			t.Errorf("caching_sha2_password string %q is not MySQL's shape", auth)
		}
		empty, _ := HashPassword(plugin, "")
		if empty != "" || !CheckPassword(plugin, "", "") || CheckPassword(plugin, "", "x") {
			t.Errorf("%s: empty password", plugin)
		}
	}
	// Two hashes of one password differ by their salt, and both verify.
	a, _ := HashPassword(PluginCachingSHA2, "pw")
	b, _ := HashPassword(PluginCachingSHA2, "pw")
	if a == b || !CheckPassword(PluginCachingSHA2, b, "pw") {
		t.Errorf("salting: %q %q", a, b)
	}
}
