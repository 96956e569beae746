// Package server speaks the MySQL client/server protocol: it accepts
// connections, greets and authenticates clients (mysql_native_password and
// caching_sha2_password), reads their commands, and writes results as text
// or binary result sets, OK and ERR packets.
//
// It executes no SQL, and imports nothing of Basalt but errno, the MySQL
// error vocabulary. A Driver (driver.go) authenticates users and opens a
// Session per connection; each command becomes one call on the Session, and
// what the Session returns — Results, Rows of Values, a *errno.Error — is
// encoded for the client. The files follow a command through the layer:
//
//	server.go      listening, the connection registry, KILL, shutdown
//	conn.go        one connection's life: handshake, command loop, panics
//	handshake.go   the greeting and the client's handshake response
//	auth.go        password plugins and the authentication exchange
//	tls.go         the TLS upgrade, require_secure_transport, certificates
//	command.go     COM_* dispatch for the text protocol's commands
//	stmt.go        prepared statements: COM_STMT_*
//	resultset.go   OK, EOF and ERR packets; result sets with text rows
//	binary.go      binary-protocol parameters and rows
//	column.go      column definitions; value.go  the values in rows
//	packet.go      packet framing; wire.go  integers and strings on the wire
//	errors.go      the ERR packet and the errors raised here (errno.Error)
package server

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/errno"
)

// DefaultServerVersion is the version the greeting announces unless
// configured: clients and tools branch on the leading MySQL version.
const DefaultServerVersion = "8.4.0-Basalt-dev"

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("server: closed")

// Config configures a Server. The zero Config is usable: each zero field
// takes the default named beside it.
type Config struct {
	// ServerVersion is the version string of the greeting and of
	// SELECT VERSION(). Default DefaultServerVersion.
	ServerVersion string

	// MaxAllowedPacket bounds the size of a packet the client may send, once
	// joined from its chunks (max_allowed_packet). A larger one is refused
	// with ER_NET_PACKET_TOO_LARGE and the connection is closed. Default 64 MiB.
	// SetMaxAllowedPacket changes it for the connections accepted after.
	MaxAllowedPacket int

	// DefaultAuthPlugin is announced in the greeting and used by accounts
	// that name no plugin. Default PluginNativePassword.
	DefaultAuthPlugin string

	// TLSConfig, if set, makes the server offer TLS (CLIENT_SSL): its
	// certificate is what clients see (LoadTLSConfig, AutoTLSConfig).
	TLSConfig *tls.Config

	// RSAKey is the key pair of caching_sha2_password's full authentication
	// over connections without TLS. Default: a 2048-bit key made by New.
	RSAKey *rsa.PrivateKey

	// Collation is the collation id the greeting announces. Default 45,
	// utf8mb4_general_ci.
	Collation uint8

	// MaxConnections bounds the connections served at once; more are refused
	// with ER_CON_COUNT_ERROR. Zero means no bound. SetMaxConnections
	// changes it (SET GLOBAL max_connections).
	MaxConnections int

	// ConnectTimeout bounds the handshake and authentication. Default 10s.
	ConnectTimeout time.Duration

	// Logger receives panics (with stacks) and connection errors. Default
	// slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.ServerVersion == "" {
		c.ServerVersion = DefaultServerVersion
	}
	if c.MaxAllowedPacket <= 0 {
		c.MaxAllowedPacket = 64 << 20
	}
	if c.DefaultAuthPlugin == "" {
		c.DefaultAuthPlugin = PluginNativePassword
	}
	if c.Collation == 0 {
		c.Collation = CollationUTF8MB4General
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Server serves the MySQL protocol on any number of listeners. Its methods
// are safe for concurrent use.
type Server struct {
	cfg    Config
	drv    Driver
	logger *slog.Logger
	keys   *rsaKeys
	caps   Capability // announced: serverCapabilities, and CLIENT_SSL with TLS

	sha2Cache sha2Cache
	started   time.Time
	questions atomic.Uint64 // commands received, for COM_STATISTICS

	// How caching_sha2_password authentications went: from the cache, or
	// with the password itself.
	sha2FastAuths, sha2FullAuths atomic.Uint64

	// maxConns and maxPacket are Config.MaxConnections and
	// Config.MaxAllowedPacket as SetMaxConnections and SetMaxAllowedPacket
	// last left them.
	maxConns, maxPacket atomic.Int64
	// port is the TCP port of the first TCP listener Serve took (@@port);
	// 0 before.
	port atomic.Int32

	reaper    sync.Once     // starts reapIdle
	idleCheck time.Duration // idleCheckInterval when the server was made

	// baseCtx is the parent of every statement's context; Close cancels it.
	baseCtx    context.Context
	baseCancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[uint32]*conn
	lastID    uint32
	closed    bool
	wg        sync.WaitGroup // one per registered connection
}

// New returns a server that opens sessions with drv.
func New(cfg Config, drv Driver) (*Server, error) {
	cfg.setDefaults()
	if cfg.DefaultAuthPlugin != PluginNativePassword && cfg.DefaultAuthPlugin != PluginCachingSHA2Password {
		return nil, errors.New("server: unknown default auth plugin " + cfg.DefaultAuthPlugin)
	}
	keys, err := newRSAKeys(cfg.RSAKey)
	if err != nil {
		return nil, err
	}
	caps := serverCapabilities
	if cfg.TLSConfig != nil {
		caps |= ClientSSL
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:        cfg,
		drv:        drv,
		logger:     cfg.Logger,
		keys:       keys,
		caps:       caps,
		started:    time.Now(),
		baseCtx:    ctx,
		baseCancel: cancel,
		listeners:  make(map[net.Listener]struct{}),
		conns:      make(map[uint32]*conn),
	}
	s.idleCheck = idleCheckInterval
	s.maxConns.Store(int64(cfg.MaxConnections))
	s.maxPacket.Store(int64(cfg.MaxAllowedPacket))
	return s, nil
}

// MaxConnections is the bound on the connections served at once; 0 means
// none.
func (s *Server) MaxConnections() int { return int(s.maxConns.Load()) }

// SetMaxConnections changes the bound on the connections served at once
// (0: none). Connections already served stay, even if there are more.
func (s *Server) SetMaxConnections(n int) { s.maxConns.Store(int64(max(n, 0))) }

// MaxAllowedPacket is the largest packet a newly accepted connection may
// send.
func (s *Server) MaxAllowedPacket() int { return int(s.maxPacket.Load()) }

// SetMaxAllowedPacket changes the largest packet the connections accepted
// from now on may send; connections already open keep their bound, as in
// MySQL. n <= 0 is ignored.
func (s *Server) SetMaxAllowedPacket(n int) {
	if n > 0 {
		s.maxPacket.Store(int64(n))
	}
}

// ListenAndServe listens on the TCP address addr and serves it.
func (s *Server) ListenAndServe(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(l)
}

// Port is the TCP port the server listens on: that of the first TCP
// listener given to Serve, 0 if none yet.
func (s *Server) Port() int { return int(s.port.Load()) }

// Serve accepts connections on l until Shutdown or Close, then returns
// ErrServerClosed; it closes l. Connections over a Unix socket count as
// secure: caching_sha2_password takes the password there without RSA.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	if a, ok := l.Addr().(*net.TCPAddr); ok {
		s.port.CompareAndSwap(0, int32(a.Port))
	}
	s.mu.Unlock()
	s.reaper.Do(func() { go s.reapIdle() })
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()

	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// EMFILE and the like: wait and try again.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logger.Warn("accept failed; retrying", "err", err, "delay", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// idleCheckInterval is how often the server looks for connections idle
// past their idle timeout; they are closed that much late at most.
var idleCheckInterval = time.Second

// reapIdle closes, every idleCheckInterval until the server closes, the
// connections that have waited longer than their session's idle timeout
// (wait_timeout) for a command. Doing this from one goroutine keeps the
// command loop free of per-command timer work.
func (s *Server) reapIdle() {
	t := time.NewTicker(s.idleCheck)
	defer t.Stop()
	for {
		select {
		case <-s.baseCtx.Done():
			return
		case now := <-t.C:
			s.mu.Lock()
			conns := make([]*conn, 0, len(s.conns))
			for _, c := range s.conns {
				conns = append(conns, c)
			}
			s.mu.Unlock()
			for _, c := range conns {
				c.expireIfIdle(now)
			}
		}
	}
}

// accept registers a new connection under a fresh id and starts serving it.
func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if m := s.maxConns.Load(); m > 0 && int64(len(s.conns)) >= m {
		s.mu.Unlock()
		go refuse(nc, errno.New(errno.ErConCount, "Too many connections"))
		return
	}
	id := s.lastID + 1
	for id == 0 || s.conns[id] != nil { // after wrapping around
		id++
	}
	s.lastID = id
	c := newConn(s, id, nc)
	s.conns[id] = c
	s.wg.Add(1)
	s.mu.Unlock()
	go c.serve()
}

// refuse sends err in place of the greeting and closes nc.
func refuse(nc net.Conn, err *errno.Error) {
	defer nc.Close()
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	p := newPacketIO(nc, 0)
	p.writePacket(appendErrPacket(nil, err))
	p.flush()
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c.id)
	s.mu.Unlock()
	s.wg.Done()
}

// ConnectionCount returns the number of connections being served.
func (s *Server) ConnectionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Kill implements KILL [QUERY | CONNECTION] id. With queryOnly it cancels
// the context of the connection's running statement, if any; the statement
// then fails with ER_QUERY_INTERRUPTED and the connection lives on.
// Otherwise it also closes the connection, whose session is then closed
// (rolled back). It returns ErrNoSuchThread for an unknown id. Privilege
// checks are the caller's.
func (s *Server) Kill(id uint32, queryOnly bool) error {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c == nil {
		return errno.NoSuchThread(id)
	}
	c.kill(queryOnly)
	return nil
}

// ProcessInfo is one row of SHOW PROCESSLIST.
type ProcessInfo struct {
	ID      uint32
	User    string
	Host    string // client host:port
	DB      string // current database, "" for none (NULL)
	Command string // "Sleep", "Query", "Execute", ...
	Time    time.Duration
	State   string
	Info    string // statement text, "" for none (NULL)
}

// ProcessList snapshots every connection, by id.
func (s *Server) ProcessList() []ProcessInfo {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	now := time.Now()
	list := make([]ProcessInfo, len(conns))
	for i, c := range conns {
		list[i] = c.processInfo(now)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list
}

// InvalidateAuthCache forgets caching_sha2_password's cached verifiers of
// user (of every user, if user is ""). Call it when a password changes and
// on FLUSH PRIVILEGES.
func (s *Server) InvalidateAuthCache(user string) {
	s.sha2Cache.invalidate(user)
}

// Shutdown stops the server gracefully: it closes the listeners and every
// idle connection, lets running commands finish and then closes their
// connections, closing (rolling back) each session. If ctx ends first, the
// running statements are cancelled and their connections closed, and
// Shutdown returns ctx's error once their goroutines are done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.closeWhenIdle()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.baseCancel()
		return nil
	case <-ctx.Done():
	}
	s.baseCancel()
	s.mu.Lock()
	for _, c := range s.conns {
		c.kill(false)
	}
	s.mu.Unlock()
	<-done
	return ctx.Err()
}

// Close stops the server at once: as Shutdown with an expired context.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Shutdown(ctx)
	return nil
}
