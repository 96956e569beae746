package server

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// AutoTLSConfig creates the CA and server certificate once, in the
// directory, and serves the same one at every later start; the server
// certificate verifies against ca.pem for 127.0.0.1 and localhost.
func TestAutoTLSConfig(t *testing.T) {
	dir := t.TempDir()
	first, err := AutoTLSConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := AutoTLSConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Certificates[0].Certificate[0], second.Certificates[0].Certificate[0]) {
		t.Error("a second start made a new certificate")
	}
	for name, mode := range map[string]os.FileMode{AutoCAFile: 0o644, AutoCAKey: 0o600, AutoCertFile: 0o644, AutoKeyFile: 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v, mode %v, want %v", name, err, st.Mode().Perm(), mode)
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, AutoCAFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	certPEM, _ := os.ReadFile(filepath.Join(dir, AutoCertFile))
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"127.0.0.1", "localhost"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("verifying for %s: %v", name, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: x509.NewCertPool(), DNSName: "localhost"}); err == nil {
		t.Error("the certificate verifies without its CA")
	}
	if _, err := LoadTLSConfig(filepath.Join(dir, AutoCertFile), filepath.Join(dir, "missing.pem")); err == nil {
		t.Error("LoadTLSConfig accepted a missing key")
	}
}

// Without a TLS configuration the greeting does not offer CLIENT_SSL; with
// one it does.
func TestTLSCapability(t *testing.T) {
	plain, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := AutoTLSConfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	withTLS, err := New(Config{TLSConfig: cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.caps&ClientSSL != 0 || plain.TLSEnabled() || withTLS.caps&ClientSSL == 0 || !withTLS.TLSEnabled() {
		t.Errorf("caps: plain %#x, with TLS %#x", plain.caps, withTLS.caps)
	}
	g := appendGreeting(nil, "v", 1, make([]byte, scrambleLen), withTLS.caps, 45, 0, PluginNativePassword)
	// The lower capability bytes follow the version, id, scramble part 1 and filler.
	off := 1 + len("v") + 1 + 4 + 8 + 1
	if lower := Capability(g[off]) | Capability(g[off+1])<<8; lower&ClientSSL == 0 {
		t.Errorf("the greeting's capabilities %#x lack CLIENT_SSL", lower)
	}
}
