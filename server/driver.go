package server

import (
	"context"
	"time"
)

// This file is the whole contract between the protocol layer and the SQL
// layer. The server knows nothing of SQL: it authenticates a client, asks the
// Driver for a Session, and turns each command into one call on it. The SQL
// layer knows nothing of packets: it returns Results, Columns and Values, and
// errors (a *errno.Error to choose what the client sees).
//
// Threading: each connection has one goroutine. Every method of a Session,
// and of the Stmts, Rows and ResultWriters it is handed, is called on that
// goroutine, one call at a time — except that a statement's context may be
// cancelled from any goroutine (KILL QUERY, KILL CONNECTION, shutdown).

// Driver opens sessions. Its methods are called concurrently, from every
// connection's goroutine.
type Driver interface {
	// LookupUser returns the credential of the account that user connecting
	// from host authenticates as. found is false when no account matches: the
	// client gets ER_ACCESS_DENIED_ERROR (1045), as for a wrong password. An
	// error refuses the connection with that error.
	LookupUser(ctx context.Context, user, host string) (cred Credential, found bool, err error)

	// OpenSession starts the session of an authenticated connection. An error
	// refuses the connection with that error: errno.BadDB(info.DB) for a
	// database that does not exist (1049), errno.ErDBAccessDenied (1044) for one
	// the user may not use.
	OpenSession(ctx context.Context, info ConnInfo) (Session, error)
}

// Credential is what the server needs to authenticate one account. It holds
// verifiers, never a cleartext password. The zero Credential is an account
// with no password that uses the server's default plugin.
type Credential struct {
	// Plugin is the account's authentication plugin, PluginNativePassword or
	// PluginCachingSHA2Password; empty means Config.DefaultAuthPlugin. A
	// client that answered the greeting with another plugin is asked to
	// switch to this one.
	Plugin string

	// NativeHash is SHA1(SHA1(password)), 20 bytes (see NativePasswordHash),
	// used by mysql_native_password. Empty: the account has no password.
	NativeHash []byte

	// CheckPassword reports whether password is the account's password; the
	// caching_sha2_password full authentication calls it with the cleartext
	// the client sent encrypted. nil: the account has no password. A
	// successful check is cached in memory (SHA256(SHA256(password))) so the
	// next connections of the account take the fast path; call
	// Server.InvalidateAuthCache when the password changes.
	CheckPassword func(password []byte) bool
}

// ConnInfo describes an authenticated connection to OpenSession.
type ConnInfo struct {
	ID         uint32 // connection id, as CONNECTION_ID() and KILL know it
	User       string // user name the client sent
	Host       string // client host: its IP, or "localhost" over a Unix socket
	RemoteAddr string // host:port, as SHOW PROCESSLIST shows it
	DB         string // database named at connect ("" for none)

	// Capabilities are the client's capability flags that the server also
	// supports (CLIENT_MULTI_RESULTS, CLIENT_FOUND_ROWS, ...).
	Capabilities Capability
	// Collation is the client's collation id from the handshake
	// (character_set_client, _connection and _results).
	Collation uint16
	// Attrs are the connection attributes the client sent (_client_name,
	// _os, program_name, ...); nil if none.
	Attrs map[string]string
	// TLSCipher and TLSVersion describe a TLS connection (Ssl_cipher,
	// Ssl_version: "TLS_AES_128_GCM_SHA256", "TLSv1.3"); empty without TLS.
	TLSCipher, TLSVersion string
}

// Session is one connection's state in the SQL layer: its user, current
// database, variables, open transaction and prepared statements.
type Session interface {
	// ExecuteQuery runs the SQL text of one COM_QUERY. multiStatements
	// reports whether the client allows several statements separated by ';'
	// (CLIENT_MULTI_STATEMENTS, switched by COM_SET_OPTION); when it does
	// not, more than one statement is a syntax error.
	//
	// Statements run in order. Each that succeeds hands its result to
	// w.WriteResult, with more=true if another statement follows, before the
	// next one runs. The first that fails ends the call: its error is
	// returned and the server sends it as an ERR packet after the results
	// already written; no later statement runs. If WriteResult returns an
	// error (the client went away, or the rows failed), ExecuteQuery returns
	// it.
	ExecuteQuery(ctx context.Context, sql string, multiStatements bool, w ResultWriter) error

	// Prepare parses one statement with '?' placeholders (COM_STMT_PREPARE).
	Prepare(ctx context.Context, sql string) (Stmt, error)

	// UseDB makes db the current database (COM_INIT_DB).
	UseDB(ctx context.Context, db string) error

	// FieldList describes the columns of table in the current database whose
	// names match the LIKE pattern wildcard ("" for all) (COM_FIELD_LIST).
	FieldList(ctx context.Context, table, wildcard string) ([]Column, error)

	// Status returns the session's status flags for OK and EOF packets:
	// StatusInTrans, StatusAutocommit, StatusNoIndexUsed, ... The server
	// adds StatusMoreResultsExists itself. Called after each result.
	Status() StatusFlags

	// WarningCount is the number of warnings the last statement raised.
	// Called after each result.
	WarningCount() uint16

	// CurrentDB is the current database, for SHOW PROCESSLIST. Called after
	// commands that may change it.
	CurrentDB() string

	// Reset returns the session to the state of a new connection
	// (COM_RESET_CONNECTION): it rolls back, forgets user variables, temporary
	// tables and session variables. The server has already closed the
	// connection's prepared statements.
	Reset(ctx context.Context) error

	// Close ends the session: it rolls back an open transaction and frees
	// what the session holds. It is called exactly once, when the connection
	// ends for any reason, after every Stmt of the session has been closed.
	Close() error
}

// IdleTimeouter is implemented by a Session whose connection is to be
// closed when it waits longer than IdleTimeout for the next command
// (wait_timeout, or interactive_timeout for CLIENT_INTERACTIVE clients).
// The server asks after every command, so a change takes effect at the
// next wait; zero or less means no limit. The client is sent
// ER_CLIENT_INTERACTION_TIMEOUT (4031) and the connection closed, up to a
// second late (the server checks idle connections once a second).
type IdleTimeouter interface {
	IdleTimeout() time.Duration
}

// Stmt is a prepared statement. The server numbers it, remembers its
// parameter types between executions and gathers COM_STMT_SEND_LONG_DATA
// chunks; the Stmt only runs.
type Stmt interface {
	// NumParams is the number of '?' placeholders.
	NumParams() int

	// Columns describes the result set of a query, as known at prepare
	// time; nil for a statement that returns no rows.
	Columns() []Column

	// Execute runs the statement with len(params) == NumParams() values, and
	// hands its result(s) to w as Session.ExecuteQuery does. The params and
	// their bytes are valid only during the call.
	Execute(ctx context.Context, params []Value, w ResultWriter) error

	// Close frees the statement (COM_STMT_CLOSE, or the connection's end).
	Close() error
}

// ResultWriter sends results to the client: the server implements it.
type ResultWriter interface {
	// WriteResult sends one statement's result. more reports that another
	// result of the same command follows (SERVER_MORE_RESULTS_EXISTS). A row
	// set is read to the end and closed before WriteResult returns. The
	// error is the rows' error, or a write error once the client has gone;
	// either way the caller stops and returns it.
	WriteResult(r Result, more bool) error
}

// Result is what one statement produces: a row set when Rows is non-nil,
// otherwise an OK packet with the counts below.
type Result struct {
	// Rows is streamed to the client as a result set, in text rows for
	// COM_QUERY and binary rows for COM_STMT_EXECUTE.
	Rows Rows

	AffectedRows uint64
	LastInsertID uint64
	// Info is the OK packet's message, e.g. "Rows matched: 1  Changed: 1  Warnings: 0".
	Info string
}

// Rows is a result set read one row at a time.
type Rows interface {
	// Columns describes the columns; it is called once, before Next.
	Columns() []Column

	// Next fills row (len(row) == len(Columns())) with the next row and
	// reports whether there was one. The server reuses row; byte values
	// placed in it must stay valid until the next call to Next or Close.
	Next(row []Value) (bool, error)

	// Close releases the rows. The server calls it exactly once, whether or
	// not Next reached the end.
	Close() error
}

// StatusFlags are the server status flags of OK and EOF packets.
type StatusFlags uint16

const (
	StatusInTrans             StatusFlags = 0x0001 // a transaction is open
	StatusAutocommit          StatusFlags = 0x0002 // autocommit is on
	StatusMoreResultsExists   StatusFlags = 0x0008 // another result follows
	StatusNoGoodIndexUsed     StatusFlags = 0x0010
	StatusNoIndexUsed         StatusFlags = 0x0020
	StatusCursorExists        StatusFlags = 0x0040
	StatusLastRowSent         StatusFlags = 0x0080
	StatusDBDropped           StatusFlags = 0x0100
	StatusNoBackslashEscapes  StatusFlags = 0x0200
	StatusMetadataChanged     StatusFlags = 0x0400
	StatusQueryWasSlow        StatusFlags = 0x0800
	StatusPSOutParams         StatusFlags = 0x1000
	StatusInTransReadonly     StatusFlags = 0x2000
	StatusSessionStateChanged StatusFlags = 0x4000
)
