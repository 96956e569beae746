package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/testkit"
	"github.com/go-sql-driver/mysql"
)

var registerTLS sync.Mutex

// registerCA registers with go-sql-driver/mysql, under name, a TLS
// configuration that trusts only the CA in caFile and checks that the
// server's certificate names 127.0.0.1. seen, if not nil, receives the
// server's certificate.
func registerCA(t *testing.T, name, caFile string, seen *[]byte) {
	t.Helper()
	pemData, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if seen != nil {
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			*seen = raw[0]
			return nil
		}
	}
	registerTLS.Lock()
	defer registerTLS.Unlock()
	if err := mysql.RegisterTLSConfig(name, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mysql.DeregisterTLSConfig(name) })
}

// TestTLS checks TLS as clients use it: the certificate Basalt creates in
// a new data directory (trusted through its ca.pem, by go-sql-driver/mysql
// and the mariadb CLI), Ssl_cipher, caching_sha2_password's full
// authentication over TLS, require_secure_transport, and a certificate
// given with --ssl-cert/--ssl-key.
func TestTLS(t *testing.T) {
	if target := loadConfig(t).target; target != "" && target != string(testkit.Basalt) {
		t.Skip("the TLS test starts Basalt with its own certificate options")
	}
	dataDir := t.TempDir()
	srv := testkit.StartBasalt(t, testkit.BasaltOptions{DataDir: dataDir})
	ctx := context.Background()
	caFile := filepath.Join(dataDir, server.AutoCAFile)
	for _, f := range []string{server.AutoCAFile, server.AutoCertFile, server.AutoKeyFile} {
		if _, err := os.Stat(filepath.Join(dataDir, f)); err != nil {
			t.Fatalf("the data directory has no %s: %v", f, err)
		}
	}
	registerCA(t, "basalt-auto-ca", caFile, nil)

	cipherOf := func(user, password string, params map[string]string) (string, error) {
		c, err := connectAs(srv, user, password, "", params)
		if err != nil {
			return "", err
		}
		defer c.Close()
		var name, value string
		err = c.QueryRowContext(ctx, "SHOW STATUS LIKE 'Ssl_cipher'").Scan(&name, &value)
		return value, err
	}
	verified := map[string]string{"tls": "basalt-auto-ca"}

	t.Run("go-sql-driver", func(t *testing.T) {
		for _, mode := range []string{"skip-verify", "basalt-auto-ca"} {
			cipher, err := cipherOf("root", "", map[string]string{"tls": mode})
			if err != nil || !strings.HasPrefix(cipher, "TLS_") {
				t.Errorf("tls=%s: Ssl_cipher = %q, %v", mode, cipher, err)
			}
		}
		if cipher, err := cipherOf("root", "", nil); err != nil || cipher != "" {
			t.Errorf("without TLS: Ssl_cipher = %q, %v; want empty", cipher, err)
		}
		root := srv.OpenDB(t, "")
		if n := queryInt(t, root, "SELECT @@have_ssl = 'YES'"); n != 1 {
			t.Error("have_ssl is not YES")
		}
	})

	t.Run("caching_sha2_password", func(t *testing.T) {
		root := srv.OpenDB(t, "")
		execOK(t, root, "CREATE USER sha2user IDENTIFIED WITH caching_sha2_password BY 'sha2-pw'")
		// The first login misses the fast-auth cache: the password itself
		// goes over TLS. The second takes the cached path.
		for i := 0; i < 2; i++ {
			if cipher, err := cipherOf("sha2user", "sha2-pw", verified); err != nil || cipher == "" {
				t.Errorf("login %d over TLS: %q, %v", i+1, cipher, err)
			}
		}
		_, err := cipherOf("sha2user", "wrong", verified)
		wantCode(t, "wrong caching_sha2_password over TLS", err, 1045)
		var auth string
		if err := root.QueryRow("SELECT authentication_string FROM mysql.user WHERE user = 'sha2user'").Scan(&auth); err != nil ||
			!strings.HasPrefix(auth, "$A$005$") || strings.Contains(auth, "sha2-pw") {
			t.Errorf("stored caching_sha2_password string %q, %v", auth, err)
		}
		// Without TLS the password goes RSA-encrypted.
		execOK(t, root, "FLUSH PRIVILEGES") // empties the fast-auth cache
		if _, err := cipherOf("sha2user", "sha2-pw", nil); err != nil {
			t.Errorf("caching_sha2_password without TLS: %v", err)
		}
	})

	t.Run("require_secure_transport", func(t *testing.T) {
		root := srv.OpenDB(t, "")
		execOK(t, root, "SET GLOBAL require_secure_transport = ON")
		defer func() {
			c, err := connectAs(srv, "root", "", "", verified)
			if err != nil {
				t.Fatal(err)
			}
			execOK(t, c, "SET GLOBAL require_secure_transport = OFF")
			c.Close()
		}()
		_, err := cipherOf("root", "", nil)
		wantCode(t, "a login without TLS", err, 3159)
		if cipher, err := cipherOf("root", "", verified); err != nil || cipher == "" {
			t.Errorf("a login over TLS: %q, %v", cipher, err)
		}
		if cli, err := exec.LookPath("mariadb"); err == nil {
			out, _ := mariadbCLI(t, cli, srv, "--skip-ssl", "-e", "SELECT 1")
			if !strings.Contains(out, "ERROR 3159") {
				t.Errorf("mariadb --skip-ssl: %s", out)
			}
		}
	})

	t.Run("mariadb CLI", func(t *testing.T) {
		cli, err := exec.LookPath("mariadb")
		if err != nil {
			t.Skip("the mariadb client is not installed")
		}
		out, err := mariadbCLI(t, cli, srv, "--ssl", "--ssl-ca="+caFile, "--ssl-verify-server-cert",
			"-N", "-e", "SHOW STATUS LIKE 'Ssl_cipher'; SELECT CURRENT_USER()")
		if err != nil || !strings.Contains(out, "Ssl_cipher\tTLS_") || !strings.Contains(out, "root@%") {
			t.Errorf("mariadb --ssl: %v\n%s", err, out)
		}
	})

	// A certificate given on the command line is the one served, and no
	// other is created.
	t.Run("ssl-cert flags", func(t *testing.T) {
		certDir := t.TempDir()
		if _, err := server.AutoTLSConfig(certDir); err != nil {
			t.Fatal(err)
		}
		dir2 := t.TempDir()
		srv2 := testkit.StartBasalt(t, testkit.BasaltOptions{DataDir: dir2, Args: []string{
			"--ssl-cert", filepath.Join(certDir, server.AutoCertFile),
			"--ssl-key", filepath.Join(certDir, server.AutoKeyFile)}})
		var seen []byte
		registerCA(t, "basalt-given-ca", filepath.Join(certDir, server.AutoCAFile), &seen)
		c, err := connectAs(srv2, "root", "", "", map[string]string{"tls": "basalt-given-ca"})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		want, _ := os.ReadFile(filepath.Join(certDir, server.AutoCertFile))
		block, _ := pem.Decode(want)
		if block == nil || !bytes.Equal(seen, block.Bytes) {
			t.Error("the server did not present the certificate given with --ssl-cert")
		}
		if _, err := os.Stat(filepath.Join(dir2, server.AutoCertFile)); err == nil {
			t.Error("a certificate was created although --ssl-cert was given")
		}
	})
}

// mariadbCLI runs the mariadb client as root against srv with args.
func mariadbCLI(t *testing.T, cli string, srv *testkit.Server, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []string{"--no-defaults", "--protocol=TCP", "--connect-timeout=10",
		"-h", srv.Host(), "-P", strconv.Itoa(srv.Port()), "-u", "root"}
	out, err := exec.CommandContext(ctx, cli, append(base, args...)...).CombinedOutput()
	return string(out), err
}
