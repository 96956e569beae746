package server

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/basalt-db/basalt/errno"
)

// TLS. A server with Config.TLSConfig announces CLIENT_SSL in its greeting.
// A client that wants TLS answers with an SSLRequest — the first 32 bytes
// of a handshake response, CLIENT_SSL set — and, without waiting, starts a
// TLS handshake on the same connection; the real handshake response and
// everything after it travel inside TLS, the packet sequence carrying on:
//
//	server                                  client
//	greeting (caps ∋ CLIENT_SSL)        →   (seq 0)
//	                                    ←   SSLRequest (seq 1)
//	        ==== TLS handshake ====
//	                                    ←   handshake response (seq 2)
//	authentication, OK / ERR as without TLS
//
// Over TLS caching_sha2_password's full authentication takes the password
// in cleartext, as over a Unix socket. A connection without TLS (and not
// on a Unix socket) is refused with ER_SECURE_TRANSPORT_REQUIRED after its
// handshake response when the Driver requires secure transport
// (SecureTransportPolicy).

// errno.ErSecureTransportRequired is ER_SECURE_TRANSPORT_REQUIRED.

// SecureTransportPolicy is implemented by a Driver that may refuse
// connections without TLS (MySQL's require_secure_transport). The server
// asks it for each new connection that is neither TLS nor a Unix socket.
type SecureTransportPolicy interface {
	RequireSecureTransport() bool
}

// errSSLRequest: the client's first packet is an SSLRequest.
var errSSLRequest = errors.New("client requested TLS")

// TLSEnabled reports whether the server offers TLS.
func (s *Server) TLSEnabled() bool { return s.cfg.TLSConfig != nil }

// bufferedConn reads through the packet reader's buffer, which may already
// hold the start of the client's TLS handshake.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// upgradeTLS runs the TLS handshake after an SSLRequest and moves the
// connection's packets onto it.
func (c *conn) upgradeTLS() error {
	tc := tls.Server(&bufferedConn{Conn: c.nc, r: c.pio.r}, c.srv.cfg.TLSConfig)
	if err := tc.HandshakeContext(c.ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.mu.Lock()
	c.nc = tc
	c.mu.Unlock()
	c.pio.r = bufio.NewReaderSize(tc, initialBufSize)
	c.pio.w = tc
	c.secure = true
	st := tc.ConnectionState()
	c.tlsCipher = tls.CipherSuiteName(st.CipherSuite)
	c.tlsVersion = tlsVersionName(st.Version)
	return nil
}

// tlsVersionName is the protocol as Ssl_version shows it ("TLSv1.3").
func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS10:
		return "TLSv1"
	case tls.VersionTLS11:
		return "TLSv1.1"
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS13:
		return "TLSv1.3"
	}
	return ""
}

// refuseInsecure reports whether the connection must be refused because
// it has no secure transport and the driver requires one.
func (c *conn) refuseInsecure() bool {
	if c.secure {
		return false
	}
	p, ok := c.srv.drv.(SecureTransportPolicy)
	return ok && p.RequireSecureTransport()
}

func errSecureTransportRequired() *errno.Error {
	return errno.New(errno.ErSecureTransportRequired, "Connections using insecure transport are prohibited while --require_secure_transport=ON.")
}

// Files of an automatically created certificate, as MySQL 8 names them in
// its data directory.
const (
	AutoCAFile   = "ca.pem"
	AutoCAKey    = "ca-key.pem"
	AutoCertFile = "server-cert.pem"
	AutoKeyFile  = "server-key.pem"
)

// LoadTLSConfig returns a TLS configuration serving the certificate chain
// in certFile and its key in keyFile (PEM).
func LoadTLSConfig(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// AutoTLSConfig loads the certificate in dir, creating one first if dir has
// none: a self-signed CA (ca.pem, ca-key.pem) and a server certificate it
// signed (server-cert.pem, server-key.pem), valid for ten years, as MySQL 8
// creates at its first start. Clients that verify the server trust ca.pem.
func AutoTLSConfig(dir string) (*tls.Config, error) {
	cert, key := filepath.Join(dir, AutoCertFile), filepath.Join(dir, AutoKeyFile)
	if _, err := os.Stat(cert); errors.Is(err, os.ErrNotExist) {
		if err := createCertificates(dir, time.Now()); err != nil {
			return nil, fmt.Errorf("creating a TLS certificate in %s: %w", dir, err)
		}
	}
	return LoadTLSConfig(cert, key)
}

// createCertificates writes the CA and server certificate files. Each file
// is written whole under a temporary name and then renamed, the server
// certificate last, so a crash leaves either no server-cert.pem or all
// four files.
func createCertificates(dir string, now time.Time) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
		return n
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Basalt_Auto_Generated_CA_Certificate"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	srvTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "Basalt_Auto_Generated_Server_Certificate"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if host != "" && host != "localhost" {
		srvTmpl.DNSNames = append(srvTmpl.DNSNames, host)
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyPEM := func(k *ecdsa.PrivateKey) ([]byte, error) {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	}
	caKeyPEM, err := keyPEM(caKey)
	if err != nil {
		return err
	}
	srvKeyPEM, err := keyPEM(srvKey)
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{AutoCAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644},
		{AutoCAKey, caKeyPEM, 0o600},
		{AutoKeyFile, srvKeyPEM, 0o600},
		{AutoCertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}), 0o644},
	}
	for _, f := range files {
		tmp := filepath.Join(dir, f.name+".tmp")
		if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			return err
		}
	}
	return nil
}
