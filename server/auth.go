package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/basalt-db/basalt/errno"
)

// Authentication plugins the server speaks.
const (
	PluginNativePassword      = "mysql_native_password"
	PluginCachingSHA2Password = "caching_sha2_password"
)

// Packets of the authentication exchange, server to client.
const (
	authMoreData   = 0x01 // 0x01 + plugin data
	authSwitch     = 0xfe // 0xFE + plugin name NUL + scramble NUL
	sha2RequestKey = 0x02 // client to server: send me your RSA public key
	sha2FastOK     = 0x03 // after authMoreData: fast authentication succeeded
	sha2FullAuth   = 0x04 // after authMoreData: send the password itself
)

var (
	errOldClient = errors.New("client does not speak protocol 4.1")
)

// NativePasswordHash returns SHA1(SHA1(password)), the verifier that
// mysql_native_password checks (Credential.NativeHash); nil for an empty
// password.
func NativePasswordHash(password []byte) []byte {
	if len(password) == 0 {
		return nil
	}
	h1 := sha1.Sum(password)
	h2 := sha1.Sum(h1[:])
	return h2[:]
}

// verifyNative checks a mysql_native_password response. The client sends
//
//	SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password)))
//
// so XOR with SHA1(scramble + stage2) recovers SHA1(password), whose SHA1
// must be stage2.
func verifyNative(stage2, scramble, resp []byte) bool {
	if len(stage2) == 0 {
		return len(resp) == 0
	}
	if len(resp) != sha1.Size || len(stage2) != sha1.Size {
		return false
	}
	h := sha1.New()
	h.Write(scramble)
	h.Write(stage2)
	stage1 := h.Sum(nil)
	for i := range stage1 {
		stage1[i] ^= resp[i]
	}
	got := sha1.Sum(stage1)
	return subtle.ConstantTimeCompare(got[:], stage2) == 1
}

// verifySHA2Scramble checks a caching_sha2_password fast-auth response
// against the cached digest SHA256(SHA256(password)). The client sends
//
//	SHA256(password) XOR SHA256(SHA256(SHA256(password)) + scramble)
func verifySHA2Scramble(digest [32]byte, scramble, resp []byte) bool {
	if len(resp) != sha256.Size {
		return false
	}
	h := sha256.New()
	h.Write(digest[:])
	h.Write(scramble)
	stage1 := h.Sum(nil)
	for i := range stage1 {
		stage1[i] ^= resp[i]
	}
	got := sha256.Sum256(stage1)
	return subtle.ConstantTimeCompare(got[:], digest[:]) == 1
}

func sha2Digest(password []byte) [32]byte {
	h := sha256.Sum256(password)
	return sha256.Sum256(h[:])
}

// sha2Cache is caching_sha2_password's cache: the digest of each password
// that passed full authentication, by "user@host". It is shared by all
// connections of a server.
type sha2Cache struct {
	mu sync.RWMutex
	m  map[string][32]byte
}

func (c *sha2Cache) get(key string) ([32]byte, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.m[key]
	return d, ok
}

func (c *sha2Cache) put(key string, d [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string][32]byte)
	}
	c.m[key] = d
}

// invalidate forgets user's entries (all users when user is "").
func (c *sha2Cache) invalidate(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if user == "" || strings.HasPrefix(k, user+"@") {
			delete(c.m, k)
		}
	}
}

// rsaKeys is the key pair of caching_sha2_password's full authentication
// without TLS.
type rsaKeys struct {
	priv   *rsa.PrivateKey
	pubPEM []byte // PKIX "PUBLIC KEY" PEM, as the client receives it
}

func newRSAKeys(priv *rsa.PrivateKey) (*rsaKeys, error) {
	if priv == nil {
		var err error
		if priv, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			return nil, err
		}
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	return &rsaKeys{priv: priv, pubPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}, nil
}

// authenticate runs the authentication exchange after the handshake
// response (or COM_CHANGE_USER) named user, its auth response and plugin.
// It returns nil when the client proved the password, a *errno.Error to send
// when it did not, or an I/O error. It does not send the final OK.
//
//	server                                  client
//	greeting (plugin P, scramble)      →
//	                                   ←    response (plugin C, auth data)
//	if the account's plugin A ≠ C:
//	AuthSwitchRequest (A, scramble)    →
//	                                   ←    auth data for A
//	A = caching_sha2_password, unless the fast path succeeds:
//	AuthMoreData 0x04 (full auth)      →
//	                                   ←    0x02 (request public key)
//	AuthMoreData PEM public key        →
//	                                   ←    RSA-OAEP(password NUL XOR scramble)
//	then OK (sent by the caller) or ERR.
func (c *conn) authenticate(ctx context.Context, user string, resp []byte, clientPlugin string) error {
	cred, found, err := c.srv.drv.LookupUser(ctx, user, c.host)
	if err != nil {
		return err
	}
	if !found {
		return errno.AccessDenied(user, c.host, len(resp) > 0)
	}
	plugin := cred.Plugin
	if plugin == "" {
		plugin = c.srv.cfg.DefaultAuthPlugin
	}
	if plugin != PluginNativePassword && plugin != PluginCachingSHA2Password {
		return errno.New(errno.ErPluginIsNotLoaded, "Plugin '%s' is not loaded", plugin)
	}
	if clientPlugin == "" {
		clientPlugin = PluginNativePassword // a client without CLIENT_PLUGIN_AUTH
	}
	if clientPlugin != plugin {
		if c.caps&ClientPluginAuth == 0 {
			return errno.New(errno.ErNotSupportedAuthMode,
				"Client does not support authentication protocol requested by server; consider upgrading MySQL client")
		}
		c.pio.begin()
		c.pio.wbuf = append(c.pio.wbuf, authSwitch)
		c.pio.wbuf = appendNulString(c.pio.wbuf, plugin)
		c.pio.wbuf = append(c.pio.wbuf, c.scramble...)
		c.pio.wbuf = append(c.pio.wbuf, 0)
		c.pio.end()
		if resp, err = c.readAuthPacket(); err != nil {
			return err
		}
	}
	denied := errno.AccessDenied(user, c.host, len(resp) > 0)
	if plugin == PluginNativePassword {
		if !verifyNative(cred.NativeHash, c.scramble, resp) {
			return denied
		}
		return nil
	}

	// caching_sha2_password.
	if len(resp) == 0 || (len(resp) == 1 && resp[0] == 0) {
		if cred.CheckPassword == nil || cred.CheckPassword(nil) {
			return nil
		}
		return errno.AccessDenied(user, c.host, false)
	}
	if cred.CheckPassword == nil {
		return denied // the account has no password, the client sent one
	}
	key := user + "@" + c.host
	if d, ok := c.srv.sha2Cache.get(key); ok && verifySHA2Scramble(d, c.scramble, resp) {
		c.writeAuthMoreData(sha2FastOK)
		c.srv.sha2FastAuths.Add(1)
		return nil
	}
	// Fast authentication failed or found nothing cached: ask for the password.
	c.writeAuthMoreData(sha2FullAuth)
	pkt, err := c.readAuthPacket()
	if err != nil {
		return err
	}
	var password []byte
	if c.secure {
		password = bytes.TrimSuffix(pkt, []byte{0}) // cleartext over TLS or a Unix socket
	} else {
		if len(pkt) == 1 && pkt[0] == sha2RequestKey {
			c.writeAuthMoreData(c.srv.keys.pubPEM...)
			if pkt, err = c.readAuthPacket(); err != nil {
				return err
			}
		}
		plain, err := rsa.DecryptOAEP(sha1.New(), nil, c.srv.keys.priv, pkt, nil)
		if err != nil {
			return denied
		}
		for i := range plain {
			plain[i] ^= c.scramble[i%len(c.scramble)]
		}
		password = bytes.TrimSuffix(plain, []byte{0})
	}
	if !cred.CheckPassword(password) {
		return denied
	}
	c.srv.sha2Cache.put(key, sha2Digest(password))
	c.srv.sha2FullAuths.Add(1)
	return nil
}

func (c *conn) writeAuthMoreData(data ...byte) {
	c.pio.begin()
	c.pio.wbuf = append(c.pio.wbuf, authMoreData)
	c.pio.wbuf = append(c.pio.wbuf, data...)
	c.pio.end()
}

// readAuthPacket flushes what the server has to say and reads the client's
// next packet of the exchange, copied out of the read buffer.
func (c *conn) readAuthPacket() ([]byte, error) {
	if err := c.pio.flush(); err != nil {
		return nil, err
	}
	data, err := c.pio.readPacket()
	if err != nil {
		return nil, fmt.Errorf("reading auth data: %w", err)
	}
	return append([]byte(nil), data...), nil
}
