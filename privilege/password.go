package privilege

import (
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// Authentication plugins and the stored form of their passwords
// (mysql.user.authentication_string). Nothing stores a cleartext password.
const (
	// PluginNative stores "*" and the upper-case hex of SHA1(SHA1(password)),
	// 41 characters; "" for no password.
	PluginNative = "mysql_native_password"
	// PluginCachingSHA2 stores MySQL 8's form: "$A$005$", a 20-character
	// salt and the 43-character SHA-crypt (SHA-256, 5000 rounds) of the
	// password; "" for no password.
	PluginCachingSHA2 = "caching_sha2_password"
)

// NativeHash returns the mysql_native_password form of password.
func NativeHash(password string) string {
	if password == "" {
		return ""
	}
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	return "*" + strings.ToUpper(hex.EncodeToString(h2[:]))
}

// NativeStage2 decodes a mysql_native_password authentication string to
// SHA1(SHA1(password)), the verifier the protocol checks; nil for none or
// a malformed string.
func NativeStage2(auth string) []byte {
	if len(auth) != 41 || auth[0] != '*' {
		return nil
	}
	b, err := hex.DecodeString(auth[1:])
	if err != nil {
		return nil
	}
	return b
}

// ValidAuthString reports whether auth is a stored password of plugin
// (IDENTIFIED WITH plugin AS 'auth').
func ValidAuthString(plugin, auth string) bool {
	if auth == "" {
		return true
	}
	switch plugin {
	case PluginNative:
		return NativeStage2(auth) != nil
	case PluginCachingSHA2:
		_, _, _, ok := parseSHA2(auth)
		return ok
	}
	return false
}

// HashPassword returns the stored form of password for plugin.
func HashPassword(plugin, password string) (string, error) {
	switch plugin {
	case PluginNative:
		return NativeHash(password), nil
	case PluginCachingSHA2:
		if password == "" {
			return "", nil
		}
		salt, err := newSalt()
		if err != nil {
			return "", err
		}
		return sha2AuthString(password, salt, sha2Rounds), nil
	}
	return "", fmt.Errorf("unknown authentication plugin %q", plugin)
}

// CheckPassword reports whether password matches auth, the stored form of
// plugin.
func CheckPassword(plugin, auth, password string) bool {
	if auth == "" {
		return password == ""
	}
	switch plugin {
	case PluginNative:
		return subtle.ConstantTimeCompare([]byte(NativeHash(password)), []byte(auth)) == 1
	case PluginCachingSHA2:
		salt, rounds, _, ok := parseSHA2(auth)
		if !ok {
			return false
		}
		return subtle.ConstantTimeCompare([]byte(sha2AuthString(password, salt, rounds)), []byte(auth)) == 1
	}
	return false
}

const (
	sha2Rounds     = 5000
	sha2SaltLen    = 20
	sha2DigestLen  = 43
	cryptAlphabet  = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	sha2AuthPrefix = "$A$"
)

// newSalt returns a salt of crypt alphabet characters, so that the stored
// string is printable.
func newSalt() ([]byte, error) {
	b := make([]byte, sha2SaltLen)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	for i := range b {
		b[i] = cryptAlphabet[int(b[i])%len(cryptAlphabet)]
	}
	return b, nil
}

// sha2AuthString formats "$A$" + rounds/1000 in three digits + "$" + salt +
// digest, as MySQL's caching_sha2_password stores it.
func sha2AuthString(password string, salt []byte, rounds int) string {
	return fmt.Sprintf("%s%03X$%s%s", sha2AuthPrefix, rounds/1000, salt, SHACrypt256([]byte(password), salt, rounds))
}

func parseSHA2(auth string) (salt []byte, rounds int, digest string, ok bool) {
	if len(auth) != 3+3+1+sha2SaltLen+sha2DigestLen || !strings.HasPrefix(auth, sha2AuthPrefix) || auth[6] != '$' {
		return nil, 0, "", false
	}
	var n int
	if _, err := fmt.Sscanf(auth[3:6], "%03X", &n); err != nil || n <= 0 {
		return nil, 0, "", false
	}
	return []byte(auth[7 : 7+sha2SaltLen]), n * 1000, auth[7+sha2SaltLen:], true
}

// SHACrypt256 is the digest part of Ulrich Drepper's SHA-crypt with
// SHA-256 ("$5$" in crypt(3)) of key with salt and rounds, 43 characters.
// Unlike crypt(3) it does not cut the salt to 16 bytes: MySQL uses 20.
func SHACrypt256(key, salt []byte, rounds int) string {
	// B = SHA256(key salt key)
	hb := sha256.New()
	hb.Write(key)
	hb.Write(salt)
	hb.Write(key)
	b := hb.Sum(nil)

	// A = SHA256(key salt B-repeated-to-len(key) {B or key per bit of len(key)})
	ha := sha256.New()
	ha.Write(key)
	ha.Write(salt)
	n := len(key)
	for ; n > 32; n -= 32 {
		ha.Write(b)
	}
	ha.Write(b[:n])
	for n = len(key); n > 0; n >>= 1 {
		if n&1 != 0 {
			ha.Write(b)
		} else {
			ha.Write(key)
		}
	}
	a := ha.Sum(nil)

	// P = SHA256(key repeated len(key) times), stretched to len(key).
	hp := sha256.New()
	for range key {
		hp.Write(key)
	}
	dp := hp.Sum(nil)
	p := stretch(dp, len(key))

	// S = SHA256(salt repeated 16+A[0] times), stretched to len(salt).
	hs := sha256.New()
	for i := 0; i < 16+int(a[0]); i++ {
		hs.Write(salt)
	}
	ds := hs.Sum(nil)
	s := stretch(ds, len(salt))

	c := a
	h := sha256.New()
	for i := 0; i < rounds; i++ {
		h.Reset()
		if i&1 != 0 {
			h.Write(p)
		} else {
			h.Write(c)
		}
		if i%3 != 0 {
			h.Write(s)
		}
		if i%7 != 0 {
			h.Write(p)
		}
		if i&1 != 0 {
			h.Write(c)
		} else {
			h.Write(p)
		}
		c = h.Sum(c[:0])
	}

	out := make([]byte, 0, sha2DigestLen)
	b64 := func(b2, b1, b0 byte, n int) {
		w := uint(b2)<<16 | uint(b1)<<8 | uint(b0)
		for ; n > 0; n-- {
			out = append(out, cryptAlphabet[w&0x3f])
			w >>= 6
		}
	}
	for i := 0; i < 10; i++ {
		// (0,10,20), (21,1,11), (12,22,2), ...
		x, y, z := i, (i+10)%30, (i+20)%30
		switch i % 3 {
		case 1:
			x, y, z = (i+20)%30, i, (i+10)%30
		case 2:
			x, y, z = (i+10)%30, (i+20)%30, i
		}
		b64(c[x], c[y], c[z], 4)
	}
	b64(0, c[31], c[30], 3)
	return string(out)
}

func stretch(d []byte, n int) []byte {
	out := make([]byte, 0, n)
	for len(out)+len(d) <= n {
		out = append(out, d...)
	}
	return append(out, d[:n-len(out)]...)
}
