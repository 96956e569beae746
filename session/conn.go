package session

import "time"

// This file is what the SQL layer knows of connections. The protocol
// server lives above it and is not imported: driver/ adapts Driver,
// Session and Stmt to the server's interfaces, and cmd/basalt hands the
// driver a Connections over the server (SetConnections).

// ConnInfo describes an authenticated connection to OpenSession.
type ConnInfo struct {
	ID         uint32 // connection id, as CONNECTION_ID() and KILL know it
	User       string // user name the client sent
	Host       string // client host: its IP, or "localhost" over a Unix socket
	RemoteAddr string // host:port, as SHOW PROCESSLIST shows it
	DB         string // database named at connect ("" for none)

	// FoundRows is CLIENT_FOUND_ROWS: UPDATE reports the rows it matched,
	// not the rows it changed.
	FoundRows bool
	// Interactive is CLIENT_INTERACTIVE: the idle limit is
	// interactive_timeout, not wait_timeout.
	Interactive bool
	// LocalFiles is CLIENT_LOCAL_FILES: the client can send a file for
	// LOAD DATA LOCAL INFILE (through a LocalFileOpener).
	LocalFiles bool
	// TLSCipher and TLSVersion describe a TLS connection (Ssl_cipher,
	// Ssl_version); empty without TLS.
	TLSCipher, TLSVersion string
}

// Credential is what authenticating one account needs. It holds verifiers,
// never a cleartext password; the zero Credential is an account with no
// password on the server's default plugin.
type Credential struct {
	// Plugin is the account's authentication plugin
	// (mysql_native_password, caching_sha2_password); empty for the
	// server's default.
	Plugin string
	// NativeHash is SHA1(SHA1(password)) for mysql_native_password; empty
	// without a password.
	NativeHash []byte
	// CheckPassword reports whether password is the account's password;
	// nil without a password.
	CheckPassword func(password []byte) bool
}

// Connections is what statements need of the connections the protocol
// server holds: KILL, SHOW PROCESSLIST, the authentication cache, and the
// limits max_connections and max_allowed_packet. Its methods are called
// concurrently from every session.
type Connections interface {
	// Kill ends connection id's statement (queryOnly) or the connection;
	// ER_NO_SUCH_THREAD for an unknown id.
	Kill(id uint32, queryOnly bool) error
	// ProcessList snapshots every connection, by id.
	ProcessList() []Process
	// ConnectionCount is the number of connections served now.
	ConnectionCount() int
	// InvalidateAuthCache forgets the cached password verifiers of user
	// ("" for every user), after a password change or FLUSH PRIVILEGES.
	InvalidateAuthCache(user string)
	MaxConnections() int
	SetMaxConnections(n int)
	MaxAllowedPacket() int
	SetMaxAllowedPacket(n int)
	// TLSEnabled reports whether the server can upgrade to TLS
	// (have_ssl, have_openssl).
	TLSEnabled() bool
	// Port is the TCP port the server listens on (@@port); 0 if none.
	Port() int
}

// Process is one connection in SHOW PROCESSLIST and
// information_schema.PROCESSLIST.
type Process struct {
	ID      uint32
	User    string
	Host    string // client host:port
	DB      string // current database, "" for none (NULL)
	Command string // "Sleep", "Query", "Execute", ...
	Time    time.Duration
	State   string
	Info    string // statement text, "" for none (NULL)
}
